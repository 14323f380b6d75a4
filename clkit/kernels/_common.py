"""What the library functions share: argument checks, programs, transfers, output.

Each library function accepts numpy arrays or device arrays
(:class:`pyopencl.array.Array`): numpy in gives numpy out, device arrays in
give device arrays out with no transfer of the data.
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from .. import _trace, _transfer
from .._array import _size, check_alloc
from .._devices import Device, select, select_many
from .._errors import ArgumentTypeError, ArgumentValueError
from .._pinned import result_empty
from .._program import Program, load
from .._runtime import Runtime, runtime, runtime_of_array

CL_TYPES = {
    np.dtype(np.int8): "char", np.dtype(np.uint8): "uchar", np.dtype(np.int16): "short",
    np.dtype(np.uint16): "ushort", np.dtype(np.int32): "int", np.dtype(np.uint32): "uint",
    np.dtype(np.int64): "long", np.dtype(np.uint64): "ulong", np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
}


@functools.lru_cache(maxsize=None)
def _program(name: str, defines: tuple, options: tuple) -> Program:
    return load(name, defines=dict(defines), options=options)


def program(name: str, options: tuple = (), **defines) -> Program:
    """The library program ``kernels_cl/<name>.cl`` built with these defines (one object each)."""
    return _program(name, tuple(sorted(defines.items())), tuple(options))


def round_up(n: int, m: int) -> int:
    """The smallest multiple of ``m`` that is at least ``n`` (and at least ``m``)."""
    return max(m, -(-n // m) * m)


def is_device_array(x) -> bool:
    return isinstance(x, cl_array.Array)


def is_multi(device) -> bool:
    """Whether ``device`` asks for several devices (``"all"`` or a list of specs)."""
    return (isinstance(device, str) and device.strip().lower() == "all") or \
        isinstance(device, (list, tuple))


def host_array(x, func: str, name: str) -> np.ndarray:
    """``x`` as a numpy array (device arrays are not accepted here)."""
    if isinstance(x, np.ndarray):
        arr = x
    else:
        try:
            arr = np.asarray(x)
        except (TypeError, ValueError) as exc:
            raise ArgumentTypeError(f"{func}: {name} must be an array, not "
                                    f"{type(x).__name__}") from exc
    if arr.dtype == object:
        raise ArgumentTypeError(f"{func}: {name} holds Python objects; pass a numeric array")
    return arr


def check_dtype(func: str, name: str, dtype, allowed) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype not in [np.dtype(a) for a in allowed]:
        names = ", ".join(np.dtype(a).name for a in allowed)
        raise ArgumentTypeError(f"{func}: {name} has dtype {dtype}; use one of {names} "
                                f"(e.g. {name}.astype(np.float32))")
    return dtype


def check_ndim(func: str, name: str, shape, allowed, what: str):
    if len(shape) not in allowed:
        raise ArgumentValueError(f"{func}: {name} must be {what}; got an array of shape "
                                 f"{tuple(shape)}")


def check_number(func: str, name: str, value, *, positive=False, non_negative=False,
                 integer=False, finite=True) -> float:
    """A real number argument (a Python or numpy scalar), checked; finite unless told."""
    kinds = numbers.Integral if integer else numbers.Real
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, kinds):
        kind = "an integer" if integer else "a number"
        raise ArgumentTypeError(f"{func}: {name} must be {kind}, not {value!r}")
    if finite and not math.isfinite(value):
        raise ArgumentValueError(f"{func}: {name} must be finite, got {value!r}")
    if positive and value <= 0:
        raise ArgumentValueError(f"{func}: {name} must be positive, got {value!r}")
    if non_negative and value < 0:
        raise ArgumentValueError(f"{func}: {name} must not be negative, got {value!r}")
    return int(value) if integer else float(value)


def require_fp64(func: str, device: Device, what: str):
    if not device.fp64:
        raise ArgumentTypeError(f"{func}: {what} needs double precision, which {device} lacks "
                                "(no cl_khr_fp64); use float32 or another device")


def device_of(func: str, device, arrays) -> Device:
    """The one device to run on: ``device`` if given, else that of a device array, else the best.

    Device-array inputs must all live on that device.
    """
    on = [a for a in arrays if is_device_array(a)]
    homes = []
    for a in on:
        rt = runtime_of_array(a)
        if rt is None:
            raise ArgumentValueError(f"{func}: a device array was made in a pyopencl context "
                                     "that clkit did not create; make it with clkit.to_device")
        homes.append(rt.device)
    chosen = select(device) if device is not None else (homes[0] if homes else select(None))
    for home in homes:
        if home != chosen:
            raise ArgumentValueError(f"{func}: a device array lives on {home}, but the work runs "
                                     f"on {chosen}; copy it with clkit.to_device(a.get(), "
                                     "device=...) or pass device= its device")
    return chosen


def devices_of(device) -> list[Device]:
    """The devices a multi-device call names (``"all"`` or a list of specs)."""
    return select_many(device)


def contiguous_device(a: cl_array.Array) -> cl_array.Array:
    """A device array that starts at its buffer's origin and is C-contiguous.

    Vector loads in the library kernels assume the buffer's alignment.
    """
    if a.offset == 0 and a.flags.c_contiguous:
        return a
    return a.copy() if a.flags.c_contiguous else cl_array.to_device(a.queue, host_copy(a))


def host_copy(a: cl_array.Array) -> np.ndarray:
    """A device array's values in a new numpy array, also for a strided view of one.

    pyopencl copies contiguous arrays only (``get``, ``copy`` and its kernels refuse views
    such as ``a[:, 1:]`` or ``a[::-1]``): the span of the buffer that the view covers comes
    home, and numpy takes the view of it.
    """
    if a.flags.c_contiguous or a.size == 0:
        return a.get() if a.size else np.empty(a.shape, a.dtype)
    ends = [(n - 1) * s for n, s in zip(a.shape, a.strides)]
    lo = a.offset + sum(min(0, e) for e in ends)
    hi = a.offset + sum(max(0, e) for e in ends) + a.dtype.itemsize
    span = np.empty(hi - lo, np.uint8)
    t0 = _trace.active and _trace.clock()
    event = cl.enqueue_copy(a.queue, span, a.base_data, src_offset=lo)
    if t0:
        _trace.transfer(t0, "d2h", event, a.queue, span.nbytes, blocking=True)
    view = np.ndarray(a.shape, a.dtype, buffer=span, offset=a.offset - lo, strides=a.strides)
    return np.ascontiguousarray(view)


# -- transfers ------------------------------------------------------------------------------------

# Library kernels read their inputs with loads of up to 16 bytes that assume the alignment of
# the loaded type; buffers the driver allocates are aligned far more than that.
INPUT_ALIGN = 16
OUTPUT_ALIGN = 128


def aligned_empty(shape, dtype, align: int = OUTPUT_ALIGN) -> np.ndarray:
    """An uninitialised numpy array whose data starts on an ``align``-byte boundary."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    try:
        raw = np.empty(nbytes + align, np.uint8)
    except MemoryError:
        raise MemoryError(f"a result of shape {tuple(shape)} and dtype {dtype} needs "
                          f"{_size(nbytes)} of host memory, more than this machine can "
                          "allocate") from None
    start = -raw.ctypes.data % align
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def host_ptr_align(device: Device) -> int:
    """The alignment in bytes at which ``device``'s driver uses host memory in place.

    PoCL takes any address.  Intel's CPU runtime copies host memory that is not aligned to
    the device's base-address alignment (128 bytes; numpy's large arrays are aligned to 16),
    which costs it more than clkit's own copy into aligned memory: convolve 5x5 of a 3840x2160
    float32 numpy image took 28 ms of process CPU time there, 20 with the copy made here
    (PoCL: 11).
    """
    if device.platform.startswith("Intel(R) OpenCL"):
        return device.cl_device.mem_base_addr_align // 8
    return 1


def upload(rt: Runtime, host: np.ndarray, queue=None, align: int = INPUT_ALIGN):
    """A device array with ``host``'s data.

    On devices that share memory with the host (CPU drivers) the buffer wraps
    the numpy memory itself (``USE_HOST_PTR``: no copy) when it is aligned to
    ``align`` bytes (what the kernel's widest load assumes) and to what the
    driver needs to use it in place (`host_ptr_align`); otherwise it is
    copied to aligned memory first.  So ``host`` must stay alive and
    unchanged until the work reading it has finished.
    """
    queue = queue or rt.queue
    host = np.ascontiguousarray(host)
    check_alloc(rt, host.nbytes, "upload")
    if host.nbytes and rt.device.unified_memory:
        if host.ctypes.data % max(align, host_ptr_align(rt.device)):
            copy = aligned_empty(host.shape, host.dtype)
            copy[...] = host
            host = copy
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR
        buf = cl.Buffer(rt.context, flags, hostbuf=host)
        arr = cl_array.Array(queue, host.shape, host.dtype, data=buf)
        arr.host_ref = host  # the buffer's memory
        return arr
    arr = cl_array.empty(queue, host.shape, host.dtype)
    if host.nbytes:
        _transfer.upload(rt, queue, arr.base_data, host)
    return arr


def device_output(rt: Runtime, host: np.ndarray | None, shape, dtype, queue=None,
                  align: int = OUTPUT_ALIGN):
    """A device array for a result that will end in ``host`` (or a new device array).

    On devices that share memory with the host, the buffer is ``host``'s own
    memory when that is aligned to ``align`` bytes (the kernel's widest store).
    """
    queue = queue or rt.queue
    nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    check_alloc(rt, nbytes, "output")
    if (host is not None and nbytes and rt.device.unified_memory and host.flags.c_contiguous
            and host.ctypes.data % align == 0):
        flags = cl.mem_flags.WRITE_ONLY | cl.mem_flags.USE_HOST_PTR
        buf = cl.Buffer(rt.context, flags, hostbuf=host)
        arr = cl_array.Array(queue, shape, dtype, data=buf)
        arr.host_ref = host
        return arr
    return cl_array.empty(queue, shape, dtype)


def scratch(rt: Runtime, queue, shape, dtype) -> cl_array.Array:
    """A device array for values one library kernel writes and a later one of the same call reads.

    The kernels read only elements of a scratch array written earlier in the same call, never
    what an earlier call left there: keep it so for any scratch memory, pooled or reused.

    On the Oclgrind simulator the array starts as NaN (floating dtypes), copied from the host.
    Oclgrind 21.10's uninitialised-value check loses the stores into a buffer made without
    host data where a smaller freed buffer lay (shown with pyopencl alone: a buffer of 32
    floats written by one kernel and read by the next reports 16 uninitialised reads once a
    buffer of 16 was freed before it), which would report every call after the first one.
    A buffer made from host data is tracked right, and NaN still carries a read of an element
    no kernel wrote into the result, where the tests compare it with scipy.
    """
    if rt.device.simulator:
        host = np.full(shape, np.nan, dtype)
        buf = cl.Buffer(rt.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                        hostbuf=host)
        return cl_array.Array(queue, shape, dtype, data=buf)
    return cl_array.empty(queue, shape, dtype)


def download(arr: cl_array.Array, host: np.ndarray) -> np.ndarray:
    """Make ``host`` hold ``arr``'s data; returns ``host``."""
    if arr.size == 0:
        return host
    if getattr(arr, "host_ref", None) is host:
        # The buffer is host's own memory: mapping it makes the device's writes visible.
        t0 = _trace.active and _trace.clock()
        mapped, event = cl.enqueue_map_buffer(arr.queue, arr.base_data, cl.map_flags.READ, 0,
                                              (arr.nbytes,), np.uint8)
        if t0:
            _trace.transfer(t0, "d2h", event, arr.queue, None, True, "d2h (map)")  # no copy
        mapped.base.release(arr.queue)
        arr.queue.finish()
        return host
    if host.flags.c_contiguous:
        _transfer.download(runtime_of_array(arr), arr.queue, arr.base_data, host, arr.offset)
    else:
        host[...] = arr.get()
    return host


def check_out(func: str, out, shape, dtype, on_device: bool):
    """Check a caller's ``out=`` against the result's shape, dtype and kind."""
    if out is None:
        return None
    if on_device != is_device_array(out):
        want = "a device array" if on_device else "a numpy array"
        raise ArgumentTypeError(f"{func}: out must be {want} like the input, not "
                                f"{type(out).__name__}")
    if tuple(out.shape) != tuple(shape) or out.dtype != np.dtype(dtype):
        raise ArgumentValueError(f"{func}: out has shape {tuple(out.shape)} and dtype {out.dtype}; "
                                 f"the result needs shape {tuple(shape)} and dtype "
                                 f"{np.dtype(dtype)}")
    if not on_device and not out.flags.writeable:
        raise ArgumentValueError(f"{func}: out is read-only")
    if on_device and not out.flags.c_contiguous:
        raise ArgumentValueError(f"{func}: out is a strided view of a device array (strides "
                                 f"{out.strides}), which pyopencl cannot write through; pass a "
                                 "contiguous device array")
    return out


def numpy_result(shape, dtype, out, devices=()) -> np.ndarray:
    """``out``, else a new array for a result computed on ``devices``.

    On a GPU the new array is pinned memory (reused from earlier results that
    are gone), into which the result comes by DMA with no staging copy.
    """
    if out is not None:
        return out
    pinned = result_empty(shape, dtype, devices)
    return pinned if pinned is not None else aligned_empty(shape, dtype)


def probe_rows(n: int, row_bytes: int) -> int:
    """How many rows a speed probe computes: about 8 MB of data, at most all of them."""
    return max(1, min(n, (8 << 20) // max(1, row_bytes)))


def fits(device: Device, *arrays) -> bool:
    """Whether arrays can all be on the device at once, in one piece each."""
    sizes = [a.nbytes for a in arrays]
    return max(sizes) <= device.max_alloc and sum(sizes) <= device.global_mem // 2


def apply(func: str, device, inputs: list, out, shape, dtype, launch, align=INPUT_ALIGN):
    """Run a row-wise library operation, for numpy or device arrays, on one or more devices.

    ``launch(rt, srcs, dst, queue)`` enqueues the kernels that compute ``dst``
    (a device array of ``shape`` and ``dtype``) from ``srcs`` (one device
    array per input), where output row i depends on row i of each input
    only (the first axis).  Numpy inputs give a numpy result (``out`` if
    given); device arrays give a device array.  Several devices, and inputs
    larger than a device, are run in bands of rows (see ``_bands``).
    ``align`` is the kernel's widest load or store in bytes: on devices that
    share memory with the host, numpy inputs and outputs aligned to it are
    used in place.
    """
    from . import _bands  # the band machinery builds on this module
    on_device = is_device_array(inputs[0])
    if any(is_device_array(x) != on_device for x in inputs):
        raise ArgumentTypeError(f"{func}: pass all arrays as numpy arrays or all as device "
                                "arrays, not a mix")
    out = check_out(func, out, shape, dtype, on_device)
    size = int(np.prod(shape, dtype=np.int64))
    if is_multi(device):
        devices = devices_of(device)
        home = device_of(func, None, inputs) if on_device else None
    else:
        home = device_of(func, device, inputs + ([out] if out is not None else []))
        devices = [home]
    if on_device and len(devices) == 1:
        rt = runtime(home)
        srcs = [contiguous_device(x) for x in inputs]
        direct = out is not None and out.offset == 0 and out.flags.c_contiguous
        dst = out if direct else cl_array.empty(rt.queue, shape, dtype)
        if size:
            launch(rt, srcs, dst, rt.queue)
        if out is not None and not direct:
            out[...] = dst
            return out
        return dst
    hosts = [host_copy(x) if on_device else x for x in inputs]
    result = numpy_result(shape, dtype, None if on_device else out, devices)
    nbytes = sum(x.nbytes for x in hosts) + result.nbytes
    if size:
        if len(devices) == 1 and fits(devices[0], *hosts, result) and \
                _bands.pipeline_rows(devices[0], shape[0], nbytes) >= shape[0]:
            rt = runtime(devices[0])
            srcs = [upload(rt, x, align=align) for x in hosts]
            dst = device_output(rt, result, shape, dtype, align=align)
            launch(rt, srcs, dst, rt.queue)
            download(dst, result)
        else:
            def band(rt, queue, r0, r1):
                srcs = [upload(rt, x[r0:r1], queue, align=align) for x in hosts]
                part = result[r0:r1]
                dst = device_output(rt, part, part.shape, dtype, queue, align=align)
                launch(rt, srcs, dst, queue)
                download(dst, part)

            row_bytes = nbytes // shape[0]

            def probe(dev):
                k = probe_rows(shape[0], row_bytes)
                band(runtime(dev), runtime(dev).queue, 0, k)
                return k

            key = (func, tuple(x.dtype for x in hosts), tuple(x.shape[1:] for x in hosts))
            plan = _bands.proportional(devices, shape[0], key, probe)
            _bands.run(plan, band, lambda dev: min(_bands.tile_rows(dev, row_bytes),
                                                   _bands.pipeline_rows(dev, shape[0], nbytes)))
    if on_device:
        dst = out if out is not None else cl_array.empty(runtime(home).queue, shape, dtype)
        dst.set(result)
        return dst
    return result
