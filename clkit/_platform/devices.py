"""Finding OpenCL devices and choosing one.

Platforms are listed sorted by name, so that a device's id ``"P:D"``
(platform index, device index within it) does not depend on the order in
which the ICD loader happens to read its ``.icd`` files.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from dataclasses import dataclass, field

import pyopencl as cl

from .._errors import (ArgumentTypeError, ArgumentValueError, ClkitError,
                       DeviceNotFoundError, NoOpenCLError)
from .._files import make_cache_home_usable
from . import icd as _icd, oclgrind as _oclgrind

TYPES = ("gpu", "cpu", "accelerator")
_TYPE_RANK = {"gpu": 0, "cpu": 1}
_SHORT_PLATFORM = {
    "portable computing language": "pocl", "nvidia cuda": "nvidia", "oclgrind": "oclgrind",
    "amd accelerated parallel processing": "amd", "intel(r) opencl": "intel",
    "intel(r) opencl graphics": "intel-gpu", "intel(r) opencl hd graphics": "intel-gpu",
    "apple": "apple", "rusticl": "rusticl", "clover": "clover",
}


# The mapping of encoded names to values that os.environ keeps (CPython, every platform): a
# lookup there costs a dict's, where os.environ.get encodes the name and decodes the value
# (about a microsecond), and a library call reads a few settings.
_environ_data = getattr(os.environ, "_data", None) if hasattr(os.environ, "encodekey") else None
_environ_keys: dict = {}


def setting(name: str, default=None):
    """``os.environ.get(name, default)``, at a dict lookup's cost."""
    data = _environ_data
    if data is None:
        return os.environ.get(name, default)
    key = _environ_keys.get(name)
    if key is None:
        key = _environ_keys[name] = os.environ.encodekey(name)
    raw = data.get(key)
    return default if raw is None else os.environ.decodevalue(raw)


def debug_mode() -> str | None:
    """The value of ``CLKIT_DEBUG``, lowercased, or None.

    ``"oclgrind"``: kernels run on the simulator with its checks on (and the
    ``clkit`` command shows tracebacks); ``"1"``: only the tracebacks.
    """
    return (setting("CLKIT_DEBUG") or "").strip().lower() or None


@dataclass(frozen=True, eq=False)
class Device:
    """One OpenCL device, as clkit lists it.

    Made by :func:`devices` and :func:`select`, never by hand.  A device pickles by reference:
    another process of the same machine gets the same device.

    Attributes
    ----------
    id : str
        ``"P:D"``: platform and device index, as ``clkit devices`` prints them and as
        ``CLKIT_DEVICE`` accepts them.
    name, platform, vendor, version, driver : str
        As the driver reports them.
    type : str
        ``"gpu"``, ``"cpu"`` or ``"accelerator"``.
    compute_units, clock_mhz : int
    global_mem, local_mem, max_alloc : int
        Bytes: the device's memory, its local memory per work-group, and the largest single
        allocation.
    max_work_group_size : int
    max_work_item_sizes : tuple of int
    fp64, fp16 : bool
        Whether the device has double and half precision.
    simulator : bool
        True for the Oclgrind simulator, which clkit uses only when named.
    unified_memory : bool
        True where the device shares memory with the host (CPU drivers).
    extensions : tuple of str
    cl_device : pyopencl.Device
        The underlying pyopencl device.

    Examples
    --------
    >>> import clkit
    >>> cpu = clkit.select("cpu")
    >>> cpu.type, clkit.select(cpu.id) == cpu
    ('cpu', True)
    """

    id: str
    name: str
    platform: str
    vendor: str
    type: str
    version: str
    driver: str
    compute_units: int
    clock_mhz: int
    global_mem: int
    local_mem: int
    max_alloc: int
    max_work_group_size: int
    max_work_item_sizes: tuple
    fp64: bool
    fp16: bool
    simulator: bool
    unified_memory: bool
    extensions: tuple = field(repr=False)
    cl_device: cl.Device = field(repr=False)
    key: int = field(repr=False, default=0)  # the driver's handle: identity, hashed often

    def __reduce__(self):
        # By reference: another process of this machine finds the device by its id and name.
        return _by_reference, (self.id, self.name)

    @property
    def short_platform(self) -> str:
        """A short lowercase platform name (``pocl``, ``nvidia``, ``oclgrind``...)."""
        name = self.platform.lower()
        return _SHORT_PLATFORM.get(name, re.sub(r"[^a-z0-9]+", "-", name).strip("-"))

    @property
    def label(self) -> str:
        """``"pocl-cpu-1:0"``: platform, type and id, for test ids and logs."""
        return f"{self.short_platform}-{self.type}-{self.id}"

    def as_dict(self) -> dict:
        """The device's description as plain values, for JSON (``clkit devices --json``).

        Examples
        --------
        >>> import clkit
        >>> clkit.select("cpu").as_dict()["type"]
        'cpu'
        """
        return {
            "id": self.id, "name": self.name, "platform": self.platform,
            "short_platform": self.short_platform, "vendor": self.vendor, "type": self.type,
            "version": self.version, "driver": self.driver, "compute_units": self.compute_units,
            "clock_mhz": self.clock_mhz, "global_mem": self.global_mem,
            "local_mem": self.local_mem, "max_alloc": self.max_alloc,
            "max_work_group_size": self.max_work_group_size, "fp64": self.fp64,
            "fp16": self.fp16, "simulator": self.simulator,
            "unified_memory": self.unified_memory,
        }

    def __str__(self):
        return f"{self.id} {self.name} ({self.platform}, {self.type})"

    def __repr__(self):
        return f"<clkit.Device {self}>"

    def __eq__(self, other):
        return isinstance(other, Device) and other.key == self.key

    def __hash__(self):
        return self.key


def _device_type(cl_device) -> tuple[str, bool]:
    """The device's type name, and whether it is a simulator.

    Oclgrind reports every type bit at once; it is a simulator, listed as an
    accelerator and never chosen by type or by default.
    """
    bits = cl_device.type
    kinds = [name for name, bit in (("gpu", cl.device_type.GPU), ("cpu", cl.device_type.CPU),
                                    ("accelerator", cl.device_type.ACCELERATOR)) if bits & bit]
    simulator = len(kinds) > 1 or "oclgrind" in cl_device.platform.name.lower()
    if simulator:
        return "accelerator", True
    if kinds:
        return kinds[0], False
    return ("custom" if bits & cl.device_type.CUSTOM else "other"), False


def _describe(pid: int, did: int, platform, cl_device) -> Device:
    extensions = tuple(cl_device.extensions.split())
    kind, simulator = _device_type(cl_device)
    try:
        unified = bool(cl_device.host_unified_memory)
    except cl.Error:
        unified = kind == "cpu"
    return Device(
        id=f"{pid}:{did}", name=cl_device.name.strip(), platform=platform.name.strip(),
        vendor=cl_device.vendor.strip(), type=kind, version=cl_device.version.strip(),
        driver=cl_device.driver_version.strip(), compute_units=cl_device.max_compute_units,
        clock_mhz=cl_device.max_clock_frequency, global_mem=cl_device.global_mem_size,
        local_mem=cl_device.local_mem_size, max_alloc=cl_device.max_mem_alloc_size,
        max_work_group_size=cl_device.max_work_group_size,
        max_work_item_sizes=tuple(cl_device.max_work_item_sizes),
        fp64="cl_khr_fp64" in extensions,
        fp16="cl_khr_fp16" in extensions, simulator=simulator, unified_memory=unified,
        extensions=extensions, cl_device=cl_device, key=cl_device.int_ptr)


_lock = threading.Lock()
_all: list[Device] | None = None
_opencl_pid: int | None = None  # the process that first called into OpenCL
_forked_from: int | None = None  # in a child forked after that: _opencl_pid


def _after_fork_in_child() -> None:
    global _forked_from
    if _opencl_pid is not None:
        _forked_from = _opencl_pid


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def check_process() -> None:
    """Refuse to go on in a process forked after OpenCL was first used.

    A forked child inherits the driver's state but not its threads, so its
    first wait on a device can hang for ever (PoCL) or fail obscurely
    (NVIDIA); it is stopped here, before any OpenCL call.
    """
    if _forked_from is not None:
        raise ClkitError(
            f"this process was forked from process {_forked_from} after that one had used "
            "OpenCL, and OpenCL drivers do not work in a forked copy of a process (they hang "
            "or fail). Start worker processes with the 'spawn' or 'forkserver' method "
            "(multiprocessing.get_context('spawn').Pool(), or ProcessPoolExecutor("
            "mp_context=multiprocessing.get_context('spawn'))), use threads, or fork before "
            "the first clkit call")


def one_launch_at_a_time(device) -> bool:
    """Whether two launches of one kernel must not run at once on two queues of the driver.

    PoCL 4 and 5 (5.0 seen to fail, 4.x not tried): their CPU driver keeps one table of the
    loaded kernels for the whole process, which two launches of one kernel running at once
    with grids of different sizes, on two queues (of one device or of two), can leave wrong;
    PoCL then aborts the process (``pocl_release_dlhandle_cache: Assertion `found->ref_count
    > 0' failed``).
    """
    if device.platform != "Portable Computing Language":
        return False
    version = re.search(r"PoCL (\d+)", device.cl_device.platform.version)
    return version is not None and int(version.group(1)) in (4, 5)


def turns(devices):
    """A lock that work on these devices holds kernel by kernel where two of them need
    :func:`one_launch_at_a_time`, else a context that holds nothing."""
    if sum(one_launch_at_a_time(d) for d in devices) > 1:
        return threading.Lock()
    return contextlib.nullcontext()


def all_devices() -> list[Device]:
    """Every device of every platform, ignoring ``CLKIT_VISIBLE_DEVICES``.

    Enumerated once per process: the ICD loader reads its drivers only once.
    """
    global _all, _opencl_pid
    check_process()  # before the lock, which a forked child may inherit held
    with _lock:
        if _all is None:
            _opencl_pid = os.getpid()
            _oclgrind.apply_debug_environment(debug_mode())  # before drivers load
            make_cache_home_usable()  # also before: PoCL makes its cache folder there
            try:
                platforms = cl.get_platforms()
            except cl.Error as exc:
                raise NoOpenCLError(_icd.no_platform_message()) from exc
            if not platforms:
                raise NoOpenCLError(_icd.no_platform_message())
            platforms = sorted(platforms, key=lambda p: (p.name.strip(), p.vendor, p.version))
            found = []
            for pid, platform in enumerate(platforms):
                try:
                    cl_devices = platform.get_devices()
                except cl.Error:  # a platform with no device reports DEVICE_NOT_FOUND
                    cl_devices = []
                found += [_describe(pid, did, platform, d) for did, d in enumerate(cl_devices)]
            _all = found
        return list(_all)


def _by_reference(device_id: str, name: str) -> Device:
    for d in all_devices():
        if d.id == device_id and d.name == name:
            return d
    raise DeviceNotFoundError(f"no device {device_id} named {name!r} in this process")


def devices(type: str | None = None) -> list[Device]:
    """Every visible OpenCL device, in a stable order.

    Parameters
    ----------
    type : str, optional
        Keep only devices of this type: ``"gpu"``, ``"cpu"`` or ``"accelerator"``.

    Returns
    -------
    list of Device
        Platforms sorted by name, devices in driver order.  Devices hidden by
        ``CLKIT_VISIBLE_DEVICES`` (a comma-separated list of device specs, like
        ``CUDA_VISIBLE_DEVICES``) are left out.

    Raises
    ------
    NoOpenCLError
        The ICD loader finds no platform; the message says how to install one.
    ArgumentValueError
        ``type`` is not one of the types above (the message lists them).
    ArgumentTypeError
        ``type`` is not a string.

    Examples
    --------
    >>> import clkit
    >>> all(d.type == "cpu" for d in clkit.devices("cpu"))
    True
    """
    if type is not None and type not in TYPES:
        kinds = ", ".join(repr(t) for t in TYPES)
        if not isinstance(type, str):
            raise ArgumentTypeError(f"devices: type must be a string, one of {kinds}, or None "
                                    f"for every device; got {type!r}")
        raise ArgumentValueError(f"devices: unknown device type {type!r}; use one of {kinds}, "
                                 "or None for every device")
    found = all_devices()
    visible = setting("CLKIT_VISIBLE_DEVICES")
    if visible is not None:
        keep = set()
        for spec in filter(None, (s.strip() for s in visible.split(","))):
            keep.update(_matches(spec, found, what="CLKIT_VISIBLE_DEVICES"))
        found = [d for d in found if d in keep]
    if type is not None:
        found = [d for d in found if d.type == type and not d.simulator]
    return found


def _score(device: Device):
    """Sort key of the best-device rule: GPUs, then CPUs, then the rest; then capacity."""
    return (_TYPE_RANK.get(device.type, 2), -device.compute_units * max(device.clock_mhz, 1),
            -device.global_mem)


def _matches(spec: str, candidates: list[Device], what: str) -> list[Device]:
    """The devices among ``candidates`` that one spec string names, best first."""
    text = spec.strip().lower()
    if re.fullmatch(r"\d+:\d+", text):
        found = [d for d in candidates if d.id == text]
    else:
        base, index = text, None
        m = re.fullmatch(r"(.+?):(\d+)", text)
        if m:
            base, index = m.group(1), int(m.group(2))
        if base in TYPES:
            found = [d for d in candidates if d.type == base and not d.simulator]
        elif not re.search(r"[a-z]", base):  # '', '0', '.': part of every version string
            found = []
        else:
            found = [d for d in candidates
                     if any(base in s.lower() for s in (d.name, d.platform, d.vendor, d.version))]
        if index is not None:
            found = found[index:index + 1]
        else:
            found = sorted(found, key=_score)
    if not found:
        listing = "; ".join(str(d) for d in candidates) or "none"
        raise DeviceNotFoundError(
            f"no OpenCL device matches {what} {spec!r}; the visible devices are: {listing}. "
            "A spec is 'P:D', a type ('gpu', 'cpu', 'accelerator') with an optional ':N', "
            "or part of the platform or device name")
    return found


def select(spec=None) -> Device:
    """Choose one device.

    Parameters
    ----------
    spec : Device or str, optional
        A :class:`Device`; ``"P:D"``; ``"gpu"``, ``"cpu"`` or ``"accelerator"``
        (the best of that type), optionally ``":N"`` for the N-th of that type in
        listing order; or a case-insensitive part of the platform or device name
        (``"nvidia"``, ``"pocl"``, ``"oclgrind"``), optionally with ``":N"``.
        ``None`` reads ``CLKIT_DEVICE`` (same grammar), else takes the best
        device: GPUs before CPUs before the rest, then by compute units times
        clock.  The Oclgrind simulator is chosen only by name.

    Returns
    -------
    Device

    Raises
    ------
    DeviceNotFoundError
        Nothing matches; the message lists the devices that exist.

    Examples
    --------
    >>> import clkit
    >>> clkit.select("cpu").type
    'cpu'
    """
    if isinstance(spec, Device):
        return spec
    if spec is None:
        return ranked()[0]
    candidates = devices()
    if isinstance(spec, cl.Device):
        for d in candidates:
            if d.cl_device == spec:
                return d
        raise DeviceNotFoundError(f"the pyopencl device {spec.name!r} is not visible to clkit")
    if not isinstance(spec, str):
        raise ArgumentTypeError(f"a device spec is a clkit.Device or a string, not "
                                f"{type(spec).__name__}")
    return _matches(spec, candidates, what="device spec")[0]


_default: tuple = (None, None)  # (the environment it was chosen in, the default device)


def default_device() -> Device:
    """``select(None)``, chosen again only when the environment that decides it changes: the
    device of every call that names none (a kernel launch, a library call)."""
    global _default
    env = (setting("CLKIT_DEVICE"), setting("CLKIT_VISIBLE_DEVICES"))
    chosen_in, dev = _default
    if chosen_in != env or dev is None:
        dev = select(None)
        _default = (env, dev)
    return dev


def ranked() -> list[Device]:
    """The devices :func:`select` chooses from by default, best first.

    Those ``CLKIT_DEVICE`` names when it is set; else every visible device
    but the Oclgrind simulator.  ``ranked()[0]`` is ``select()``.

    Raises
    ------
    DeviceNotFoundError
        No device qualifies; the message lists the visible ones.

    Examples
    --------
    >>> import clkit._platform.devices
    >>> clkit._platform.devices.ranked()[0] == clkit.select()
    True
    """
    candidates = devices()
    env = setting("CLKIT_DEVICE", "").strip()
    if env:
        return _matches(env, candidates, what="CLKIT_DEVICE")
    usable = sorted((d for d in candidates if not d.simulator), key=_score)
    if not usable:
        listing = "; ".join(str(d) for d in candidates) or "none"
        visible = setting("CLKIT_VISIBLE_DEVICES")
        hidden = (f", CLKIT_VISIBLE_DEVICES={visible!r} hiding the rest"
                  if visible is not None else "")
        raise DeviceNotFoundError(
            f"no OpenCL device to choose by default (visible: {listing}{hidden}); the Oclgrind "
            "simulator is used only when named, e.g. CLKIT_DEVICE=oclgrind")
    return usable


def select_many(spec) -> list[Device]:
    """The devices that ``"all"``, a list of specs or one spec names, without repeats."""
    if isinstance(spec, str) and spec.strip().lower() == "all":
        chosen = [d for d in devices() if not d.simulator]
        if not chosen:
            raise DeviceNotFoundError("device='all': no visible device besides the simulator")
        return chosen
    specs = spec if isinstance(spec, (list, tuple)) else [spec]
    if not specs:
        raise DeviceNotFoundError("an empty list of devices: name at least one device, or "
                                  "pass device='all'")
    chosen = []
    for s in specs:
        d = select(s)
        if d not in chosen:
            chosen.append(d)
    return chosen
