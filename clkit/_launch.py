"""The uniform launch API: calling a kernel like a Python function.

Each kernel parameter gets a converter, made once per device from the
kernel's signature, that checks one argument and turns it into what
pyopencl passes to the driver:

- ``__global``/``__constant`` pointers take a numpy array (checked against
  the element type, uploaded, and copied back after the kernel when the
  pointer is not ``const``), a device array (used in place), a buffer, or
  ``None`` for a null pointer (an optional buffer the kernel tests for);
- ``__local`` pointers take :class:`LocalMemory`;
- by-value parameters take Python or numpy numbers, range-checked and
  converted to the declared type (vectors take a sequence).

Errors name the kernel, the parameter and its declared type.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import threading

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from . import _trace
from ._array import _OOM_CODES, _size, check_alloc
from ._devices import Device, select
from ._errors import (ArgumentTypeError, ArgumentValueError, LaunchError,
                      OutOfDeviceMemoryError)
from ._runtime import Runtime, runtime, runtime_of_array, runtime_of_queue
from ._signature import Param


class LocalMemory:
    """Work-group local memory for a ``__local`` pointer parameter.

    Parameters
    ----------
    nbytes : int
        Size in bytes, per work-group.

    Examples
    --------
    >>> import clkit
    >>> clkit.LocalMemory(256 * 4).nbytes
    1024
    """

    __slots__ = ("nbytes", "_cl")

    def __init__(self, nbytes):
        if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes <= 0:
            raise ArgumentValueError(f"LocalMemory needs a positive number of bytes, got {nbytes!r}")
        self.nbytes = int(nbytes)
        self._cl = cl.LocalMemory(self.nbytes)

    def __repr__(self):
        return f"LocalMemory({self.nbytes})"


_recording: contextvars.ContextVar = contextvars.ContextVar("clkit_recording", default=None)


@contextlib.contextmanager
def recording():
    """Collect the :class:`Launch` of every kernel call made in the block, in this thread.

    A library function enqueues its kernels without waiting and returns no
    launch; this is how a benchmark gets their device times: once the queue
    has finished, ``sum(l.kernel_ms for l in launches)``.

    Examples
    --------
    >>> import numpy as np, clkit
    >>> from clkit._launch import recording
    >>> from clkit.kernels import vector_add
    >>> a = clkit.to_device(np.ones(4, np.float32), device="cpu")
    >>> with recording() as launches:
    ...     _ = vector_add(a, a)
    >>> len(launches), launches[0].kernel.name
    (1, 'vector_add')
    """
    launches: list = []
    token = _recording.set(launches)
    try:
        yield launches
    finally:
        _recording.reset(token)


class Launch:
    """One kernel launch: its event, and its kernel time once finished.

    ``kernel_ms`` waits for the launch (and the copies back) if needed, then
    reads the kernel's start and end from the profiling event.
    """

    __slots__ = ("kernel", "device", "event", "_last", "_pending", "_ms", "_count", "_copies")

    def __init__(self, kernel, device):
        self.kernel = kernel
        self.device = device
        self.event = None  # the kernel's event; None when nothing ran (an empty global size)
        self._last = None  # the last command of the launch: the kernel or its last copy back
        self._pending = False
        self._ms = None
        self._count = None  # while converting arguments: element count of the first array
        self._copies = None  # (buffer, target array, contiguous staging array) to copy back

    def wait(self) -> "Launch":
        """Block until the kernel and its copies back have finished."""
        if self._pending:
            self._pending = False
            try:
                self._last.wait()
            except cl.Error as exc:
                raise LaunchError(f"kernel {self.kernel} failed on {self.device}: {exc}") from exc
            for _, target, staging in self._copies or ():
                if staging is not target:  # a target that could not be copied into directly
                    target[...] = staging
        return self

    @property
    def done(self) -> bool:
        """Whether the launch has finished (without waiting)."""
        return not self._pending or \
            self._last.command_execution_status == cl.command_execution_status.COMPLETE

    @property
    def kernel_ms(self) -> float:
        """Device time of the kernel alone, in milliseconds."""
        if self._ms is None:
            self.wait()
            if self.event is None:
                self._ms = 0.0
            else:
                self._ms = (self.event.profile.end - self.event.profile.start) * 1e-6
        return self._ms

    def __repr__(self):
        state = "running" if self._pending else f"{self.kernel_ms:.3f} ms"
        return f"<Launch {self.kernel} on {self.device.id}: {state}>"


class _Bound:
    """A kernel's per-device state: the pyopencl kernel and the converters."""

    __slots__ = ("name", "device", "rt", "knl", "lock", "params", "convert", "max_group",
                 "local_args", "local_room")

    def __init__(self, name: str, rt: Runtime, built):
        self.name = name
        self.device = rt.device
        self.rt = rt
        self.knl = cl.Kernel(built.program, name)
        self.lock = threading.Lock()  # clSetKernelArg is not thread-safe on one kernel object
        self.params = built.signatures[name]
        self.convert = [_converter(self, i, p) for i, p in enumerate(self.params)]
        # pyopencl packs by-value scalars itself once it knows their types.
        self.knl.set_scalar_arg_dtypes([
            p.dtype if not p.pointer and p.width == 1 and p.dtype is not None else None
            for p in self.params])
        info = cl.kernel_work_group_info
        self.max_group = self.knl.get_work_group_info(info.WORK_GROUP_SIZE, rt.device.cl_device)
        # __local arguments share what the kernel's own __local variables leave (asked before
        # any argument is set, the driver reports those alone); a driver may abort rather than
        # refuse a launch that asks for more.
        self.local_args = [i for i, p in enumerate(self.params) if p.address == "local"]
        if self.local_args:
            self.local_room = rt.device.local_mem - self.knl.get_work_group_info(
                info.LOCAL_MEM_SIZE, rt.device.cl_device)

    def where(self, param: Param) -> str:
        return f"kernel {self.name}, parameter {param.name!r} ({param.declared})"


class Kernel:
    """A kernel of a :class:`Program`, callable like a function.

    Get it as ``program.name`` or ``program["name"]``; the same object is
    returned each time.
    """

    def __init__(self, program, name: str):
        self.program = program
        self.name = name
        self._bound: dict[Device, _Bound] = {}
        self._lock = threading.Lock()
        self._default = (None, None)  # (environment it was chosen in, device)

    def __repr__(self):
        return f"<clkit.Kernel {self.name} of {self.program.origin}>"

    def __str__(self):
        return self.name

    def params(self, device=None) -> list[Param]:
        """The kernel's parameters as the device's compiler reports them."""
        return self._bind(self._pick(device, ())).params

    def __call__(self, *args, global_size=None, local_size=None, device=None, wait=True,
                 queue=None):
        """Launch the kernel.

        Parameters
        ----------
        *args
            One argument per kernel parameter (see the module docstring).
        global_size : int or tuple of int, optional
            Work-items per dimension; default: the element count of the first
            array argument, counted in its declared element type.
        local_size : int or tuple of int, optional
            Work-group size; it must divide ``global_size``.  ``None`` lets
            the driver choose a valid one.
        device : Device or str, optional
            Where to run.  Default: the program's device, else the device of
            the first device-array argument, else :func:`clkit.select`.
        wait : bool
            Wait for the kernel and the copies back (default).  With
            ``False``, call ``.wait()`` on the returned launch before reading
            numpy outputs.
        queue : pyopencl.CommandQueue, optional
            Enqueue on this queue of the device's runtime context (from
            ``clkit.runtime(device).new_queue()``) instead of the runtime's
            own, to overlap independent work.

        Returns
        -------
        Launch
        """
        t0 = _trace.active and _trace.clock()
        dev = self._pick(device, args, queue)
        bound = self._bound.get(dev) or self._bind(dev)
        convert = bound.convert
        if len(args) != len(convert):
            names = ", ".join(p.declared for p in bound.params)
            raise ArgumentTypeError(f"kernel {self.name} takes {len(convert)} arguments "
                                    f"({names}); got {len(args)}")
        if queue is None:
            queue = bound.rt.queue
        elif queue.context != bound.rt.context:
            raise ArgumentValueError(f"kernel {self.name}: the queue belongs to another context; "
                                     f"make it with clkit.runtime(device).new_queue()")
        launch = Launch(self, bound.device)
        cl_args = [conv(arg, launch) for conv, arg in zip(convert, args)]
        if bound.local_args:
            _check_local_memory(bound, cl_args)
        if global_size is not None:
            gsize = _sizes(global_size, "global_size", self.name)
        elif launch._count is not None:
            gsize = (launch._count,)
        else:
            raise ArgumentTypeError(f"kernel {self.name}: no array argument to take the global "
                                    "size from; pass global_size=")
        lsize = None if local_size is None else _check_local(bound, gsize, local_size)
        if 0 in gsize:
            return launch  # nothing to run: not pending, so nothing to wait for or copy back
        try:
            with bound.lock:
                launch.event = launch._last = bound.knl(queue, gsize, lsize, *cl_args)
            if t0:
                _trace.kernel(t0, launch, queue, args)
            if launch._copies:
                for buf, _, staging in launch._copies:
                    launch._last = cl.enqueue_copy(queue, staging, buf, is_blocking=False)
                    if t0:
                        _trace.transfer(0, "d2h", launch._last, queue, staging.nbytes)
        except cl.Error as exc:
            raise _launch_error(exc, bound, gsize, lsize) from exc
        launch._pending = True
        collect = _recording.get()
        if collect is not None:
            collect.append(launch)
        if wait:
            launch.wait()
        return launch

    def _pick(self, device, args, queue=None) -> Device:
        if device is not None:
            return select(device)
        if queue is not None:
            rt = runtime_of_queue(queue)
            if rt is not None:
                return rt.device
        if self.program.device is not None:
            return select(self.program.device)
        for arg in args:
            if isinstance(arg, cl_array.Array):
                rt = runtime_of_array(arg)
                if rt is not None:
                    return rt.device
        env = (os.environ.get("CLKIT_DEVICE"), os.environ.get("CLKIT_VISIBLE_DEVICES"))
        chosen_in, dev = self._default
        if chosen_in != env:
            dev = select(None)
            self._default = (env, dev)
        return dev

    def _bind(self, device: Device) -> _Bound:
        bound = self._bound.get(device)
        if bound is None:
            built = self.program.build(device)
            if self.name not in built.signatures:
                raise AttributeError(f"{self.program.origin} has no kernel {self.name!r}; "
                                     f"its kernels are: {', '.join(built.kernel_names)}")
            with self._lock:
                bound = self._bound.setdefault(device, _Bound(self.name, runtime(device), built))
        return bound


def _sizes(value, what: str, kernel: str) -> tuple:
    if isinstance(value, (int, np.integer)):
        sizes = (value,)
    else:
        try:
            sizes = tuple(value)
        except TypeError:
            sizes = ()
    if not 1 <= len(sizes) <= 3 or not all(
            isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 0
            for s in sizes):
        raise ArgumentValueError(f"kernel {kernel}: {what} must be a non-negative int or a tuple "
                                 f"of 1 to 3 of them, got {value!r}")
    return tuple(int(s) for s in sizes)


def _check_local(bound: _Bound, gsize: tuple, local_size) -> tuple:
    lsize = _sizes(local_size, "local_size", bound.name)
    if len(lsize) != len(gsize):
        raise ArgumentValueError(f"kernel {bound.name}: local_size {lsize} and global_size "
                                 f"{gsize} have different numbers of dimensions")
    for dim, (g, l, most) in enumerate(zip(gsize, lsize, bound.device.max_work_item_sizes)):
        if l == 0 or g % l:
            up = -(-g // l) * l if l else g
            raise ArgumentValueError(
                f"kernel {bound.name}: global_size {g} is not a multiple of local_size {l} in "
                f"dimension {dim}; round global_size up (to {up}) and skip the extra work-items "
                "in the kernel")
        if l > most:
            raise ArgumentValueError(f"kernel {bound.name}: local_size {l} in dimension {dim} is "
                                     f"over the device's limit {most} ({bound.device})")
    if math.prod(lsize) > bound.max_group:
        raise ArgumentValueError(
            f"kernel {bound.name}: a work-group of {math.prod(lsize)} work-items is over this "
            f"kernel's limit of {bound.max_group} on {bound.device}")
    return lsize


def _check_local_memory(bound: _Bound, cl_args: list):
    asked = sum(cl_args[i].size for i in bound.local_args)
    if asked > bound.local_room:
        raise ArgumentValueError(
            f"kernel {bound.name}: its __local arguments ask for {_size(asked)} per work-group, "
            f"and {bound.device} has {_size(max(bound.local_room, 0))} of local memory left for "
            "them (beside the kernel's own __local variables); pass smaller LocalMemory sizes")


def _launch_error(exc, bound: _Bound, gsize, lsize) -> Exception:
    code = getattr(exc, "code", None)
    if code in _OOM_CODES or isinstance(exc, cl.MemoryError):
        return OutOfDeviceMemoryError(
            f"kernel {bound.name} on {bound.device}: the device ran out of memory or resources "
            f"({exc}); use smaller inputs or fewer work-items per group")
    if code in (cl.status_code.INVALID_WORK_GROUP_SIZE, cl.status_code.INVALID_WORK_ITEM_SIZE,
                cl.status_code.INVALID_GLOBAL_WORK_SIZE):
        return ArgumentValueError(f"kernel {bound.name} on {bound.device}: the driver refuses "
                                  f"global_size {gsize} with local_size {lsize} ({exc})")
    return LaunchError(f"kernel {bound.name} on {bound.device} could not be launched: {exc}")


# -- converters ---------------------------------------------------------------------------

def _converter(bound: _Bound, index: int, p: Param):
    if p.address == "local":
        return _local_converter(bound, p)
    if p.pointer:
        return _pointer_converter(bound, p)
    if p.dtype is None:
        return _passthrough
    if p.width == 1:
        return _scalar_converter(bound, p)
    return _vector_converter(bound, p)


def _passthrough(value, launch):
    return value


def _local_converter(bound, p):
    def convert(value, launch):
        if isinstance(value, LocalMemory):
            return value._cl
        if isinstance(value, cl.LocalMemory):
            return value
        raise ArgumentTypeError(f"{bound.where(p)}: pass clkit.LocalMemory(nbytes) for a __local "
                                f"pointer, not {type(value).__name__}")
    return convert


def _pointer_converter(bound, p):
    rt = bound.rt
    context, queue = rt.context, rt.queue
    dtype = p.dtype
    stride = p.stride
    writes = not p.const
    max_constant = bound.device.cl_device.max_constant_buffer_size
    base_align = max(1, bound.device.cl_device.mem_base_addr_align // 8)  # reported in bits

    def check_dtype(arr_dtype, what):
        if dtype is not None and arr_dtype != dtype:
            raise ArgumentTypeError(
                f"{bound.where(p)}: got a {what} of dtype {arr_dtype}; pass dtype {dtype} "
                f"(e.g. x.astype(np.{dtype.name}))")

    def count(size, launch):
        if size % stride:
            raise ArgumentValueError(
                f"{bound.where(p)}: {size} elements is not a whole number of {p.type_name} "
                f"(each takes {stride} {dtype.name if dtype is not None else 'values'})")
        if launch._count is None:
            launch._count = size // stride

    def convert(value, launch):
        if isinstance(value, cl_array.Array):
            if value.dtype != dtype:
                check_dtype(value.dtype, "device array")
            if value.queue is not queue and value.context != context:
                raise ArgumentValueError(
                    f"{bound.where(p)}: the device array lives on another device or context; "
                    f"this launch runs on {bound.device}. Copy it with clkit.to_device(a.get(), "
                    "device=...) or launch with device= its device")
            if not value.flags.forc:
                raise ArgumentValueError(
                    f"{bound.where(p)}: the device array is a strided view (strides "
                    f"{value.strides}); a kernel takes contiguous memory: pass a contiguous "
                    "device array, or the data as a numpy array (clkit copies numpy views)")
            size = value.size
            if size % stride or launch._count is None:
                count(size, launch)
            if value.offset:
                if value.offset % base_align:
                    raise ArgumentValueError(
                        f"{bound.where(p)}: the device array starts {value.offset} bytes into "
                        f"its buffer, and {bound.device} addresses sub-buffers only at multiples "
                        f"of {base_align} bytes; pass an aligned slice, or a copy (a.copy())")
                try:
                    return value.base_data.get_sub_region(value.offset, value.nbytes)
                except cl.Error as exc:
                    raise ArgumentValueError(f"{bound.where(p)}: the device array's slice at byte "
                                             f"{value.offset} cannot be passed ({exc}); pass a "
                                             "copy (a.copy())") from exc
            return value.base_data
        if isinstance(value, np.ndarray):
            return upload(value, launch)
        if isinstance(value, cl.MemoryObjectHolder) or value is None:
            return value
        raise ArgumentTypeError(f"{bound.where(p)}: pass a numpy array or a device array, not "
                                f"{type(value).__name__}")

    def upload(arr, launch):
        check_dtype(arr.dtype, "numpy array")
        count(arr.size, launch)
        if writes and not arr.flags.writeable:
            raise ArgumentValueError(f"{bound.where(p)}: the kernel writes this array but it is "
                                     "read-only; pass a writeable array (e.g. a copy)")
        if p.address == "constant" and arr.nbytes > max_constant:
            raise ArgumentValueError(
                f"{bound.where(p)}: {_size(arr.nbytes)} is over the device's __constant limit of "
                f"{_size(max_constant)}; declare the parameter __global const instead")
        if arr.nbytes == 0:
            return None
        check_alloc(rt, arr.nbytes, f"{bound.where(p)}")
        t0 = _trace.active and _trace.clock()
        staging = arr if arr.flags.c_contiguous else np.ascontiguousarray(arr)
        # COPY_HOST_PTR copies when the buffer is made, outside the queue: an enqueued write
        # would make the host wait for everything queued before it (pyopencl waits for a
        # non-blocking copy's event when the event is dropped).
        try:
            buf = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                            hostbuf=staging)
        except cl.Error as exc:
            raise _launch_error(exc, bound, (), None) from exc
        if t0:
            _trace.host_transfer(t0, "h2d", bound.device, arr.nbytes)
        if writes:
            if launch._copies is None:
                launch._copies = []
            launch._copies.append((buf, arr, staging))
        return buf

    return convert


def _number(bound, p, value, dtype):
    """One scalar checked against and converted to ``dtype``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise ArgumentTypeError(f"{bound.where(p)}: pass a number, not {type(value).__name__}")
    if dtype.kind in "iu":
        if not isinstance(value, (int, np.integer)):
            raise ArgumentTypeError(f"{bound.where(p)}: pass an integer, not {value!r}")
        info = np.iinfo(dtype)
        if not info.min <= int(value) <= info.max:
            raise ArgumentValueError(f"{bound.where(p)}: {value} is out of range for "
                                     f"{p.type_name} ({info.min} to {info.max})")
        return dtype.type(value)
    if isinstance(value, (complex, np.complexfloating)):
        raise ArgumentTypeError(f"{bound.where(p)}: a complex number cannot be passed as "
                                f"{p.type_name}")
    big = float(np.finfo(dtype).max)
    finite = isinstance(value, (int, np.integer)) or math.isfinite(value)
    try:
        magnitude = abs(float(value))
    except OverflowError:  # a Python int beyond any float
        magnitude = math.inf
    if finite and magnitude > big:
        raise ArgumentValueError(f"{bound.where(p)}: {value} is out of range for {p.type_name} "
                                 f"(largest magnitude {big:g})")
    return dtype.type(value)


def _scalar_converter(bound, p):
    dtype = p.dtype
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = info.min, info.max

        def convert(value, launch):
            if type(value) is int and lo <= value <= hi:  # the common case, checked quickly
                return value
            return _number(bound, p, value, dtype)
        return convert

    def convert_float(value, launch):
        return _number(bound, p, value, dtype)
    return convert_float


def _vector_converter(bound, p):
    dtype = p.dtype

    def convert(value, launch):
        values = np.asarray(value).ravel() if not isinstance(value, (int, float)) else None
        if values is None or values.size != p.width:
            raise ArgumentTypeError(f"{bound.where(p)}: pass {p.width} numbers (a tuple or an "
                                    f"array), got {value!r}")
        packed = np.zeros(p.stride, dtype)
        packed[:p.width] = [_number(bound, p, v.item(), dtype) for v in values]
        return packed
    return convert
