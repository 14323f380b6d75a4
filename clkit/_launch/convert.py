"""Turning a kernel call's Python arguments into what the driver takes.

Each kernel parameter gets a converter, made once per device from the
kernel's signature, that checks one argument and returns the value to set:

- ``__global``/``__constant`` pointers take a numpy array (checked against
  the element type, uploaded, and copied back after the kernel when the
  pointer is not ``const``), a device array (used in place), a buffer, or
  ``None`` for a null pointer (an optional buffer the kernel tests for).
  On a device that shares the host's memory (CPU drivers), a call that waits
  for its kernel has it read and write the numpy arrays themselves, where
  they are aligned as a buffer of their type would be and no array it
  writes overlaps another argument: the same results, without the copies;
- ``__local`` pointers take :class:`LocalMemory`;
- by-value parameters take Python or numpy numbers, range-checked and
  converted to the declared type (vectors take a sequence).

Errors name the kernel, the parameter and its declared type.  A converter
is called as ``convert(value, launch)``: it records on the launch the
element count of the first array (the default global size) and the copies
back that the launch owes.
"""

from __future__ import annotations

import math

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from .._build.source import Param
from .._errors import ArgumentTypeError, ArgumentValueError
from .._memory import transfer as _transfer
from .._memory.array import _size, check_alloc
from .._platform.runtime import driver_error, runtime_of_array
from .._trace import trace as _trace


class LocalMemory:
    """Work-group local memory for a ``__local`` pointer parameter.

    Parameters
    ----------
    nbytes : int
        Size in bytes, per work-group.

    Raises
    ------
    ArgumentValueError
        ``nbytes`` is not a positive whole number.  A size beyond the device's local memory
        is refused at the launch, with what the device leaves beside the kernel's own.

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


def converter(bound, p: Param):
    """The converter of parameter ``p`` of a bound kernel (see the module docstring)."""
    if p.address == "local":
        return _local_converter(bound, p)
    if p.pointer:
        return _pointer_converter(bound, p)
    if p.dtype is None:
        return _record_converter(bound, p)
    if p.width == 1:
        return _scalar_converter(bound, p)
    return _vector_converter(bound, p)


def _record_converter(bound, p):
    """A value of a type clkit cannot read from its name (a struct, a typedef of one): the bytes
    of a numpy scalar or record, of the parameter's size (some drivers check it, PoCL not)."""
    def convert(value, launch):
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]
        if isinstance(value, np.generic):
            return value
        raise ArgumentTypeError(
            f"{bound.where(p)}: clkit cannot tell what {p.type_name!r} is; pass a numpy value of "
            f"its size, e.g. np.float32(x) for a typedef of float, or a record of a structured "
            f"dtype (np.zeros((), dtype)[()]) for a struct, not {type(value).__name__}")
    return convert


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
    shares = bound.device.unified_memory
    # numpy memory used in place must lie as a buffer of the parameter's type would: at least on
    # 16 bytes (the widest load of most kernels), on a whole vector for wider vector types
    align = max(_transfer.INPUT_ALIGN, min(stride * (dtype.itemsize if dtype is not None else 1),
                                           base_align), _transfer.host_ptr_align(bound.device))

    def check_dtype(arr_dtype, what):
        if dtype is not None and arr_dtype != dtype:
            # records of the element type (pyopencl's cltypes.float4 ...) are a view away
            fields = (arr_dtype.fields or {}).values()
            change = "view" if fields and all(f[0] == dtype for f in fields) else "astype"
            raise ArgumentTypeError(
                f"{bound.where(p)}: got a {what} of dtype {arr_dtype}; pass dtype {dtype} "
                f"(e.g. x.{change}(np.{dtype.name}))")

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
                home = runtime_of_array(value)
                if home is not None and home.lost:
                    raise home.gone(f"{bound.where(p)}: the device array")
                if home is None:
                    raise ArgumentValueError(
                        f"{bound.where(p)}: the device array was made in a pyopencl context "
                        "that clkit did not create; make it with clkit.to_device (or "
                        "clkit.empty)")
                raise ArgumentValueError(
                    f"{bound.where(p)}: the device array lives on {home.device}; this launch "
                    f"runs on {bound.device}. Copy it with clkit.to_device(a, device=...) or "
                    "launch with device= its device")
            if not value.flags.forc:
                raise ArgumentValueError(
                    f"{bound.where(p)}: the device array is a strided view (strides "
                    f"{value.strides}); a kernel takes contiguous memory: pass a contiguous "
                    "device array, or the data as a numpy array (clkit copies numpy views)")
            size = value.size
            if size % stride or launch._count is None:
                count(size, launch)
            if value.queue is not launch._queue and value.queue is not None:
                # another queue's array: the launch keeps its order (Kernel.__call__)
                launch._foreign = (launch._foreign or []) + [(value, writes)]
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
            raise ArgumentValueError(f"{bound.where(p)}: the array is read-only, and the "
                                     "parameter is not const, so the kernel may write it; "
                                     "declare it const if the kernel only reads it, or pass a "
                                     "writeable array (e.g. a copy)")
        if p.address == "constant" and arr.nbytes > max_constant:
            raise ArgumentValueError(
                f"{bound.where(p)}: {arr.nbytes:,} bytes is over the device's __constant limit "
                f"of {max_constant:,}; declare the parameter __global const instead")
        if arr.nbytes == 0:
            return None
        check_alloc(rt, arr.nbytes, f"{bound.where(p)}")
        t0 = _trace.active and _trace.clock()
        staging = arr if arr.flags.c_contiguous else np.ascontiguousarray(arr)
        wrapped = launch._in_place
        if wrapped is not None and shares and in_place(staging, writes, wrapped):
            # a CPU driver's kernel reads and writes the numpy memory itself: no copies, and no
            # new memory to fault in
            flags = cl.mem_flags.USE_HOST_PTR | (
                cl.mem_flags.READ_WRITE if writes else cl.mem_flags.READ_ONLY)
            try:
                buf = cl.Buffer(context, flags, hostbuf=staging)
            except cl.Error as exc:
                raise driver_error(exc, rt, f"{bound.where(p)}: using {_size(arr.nbytes)} of "
                                   "host memory", kernel=bound.name) from exc
            wrapped.append((staging, writes))
            how = MAP
        else:
            # COPY_HOST_PTR copies when the buffer is made, outside the queue: an enqueued write
            # would make the host wait for everything queued before it (pyopencl waits for a
            # non-blocking copy's event when the event is dropped). A large array for a GPU,
            # launched on the runtime's queue, goes through that queue's staging buffers
            # instead, as the library's uploads do (faster than the driver's copy from pageable
            # memory); it may wait for work queued before it when a staging
            # buffer is reused. (A queue of the caller's own would need staging buffers of its
            # own, 128 MiB each.)
            stage = launch._queue is rt.queue and _transfer.stages(rt, staging) and \
                _transfer.staging(rt, rt.queue, wait=False)
            try:
                if stage:
                    buf = cl.Buffer(context, cl.mem_flags.READ_WRITE, arr.nbytes)
                    stage.upload(rt.queue, buf, staging)
                else:
                    buf = cl.Buffer(context,
                                    cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                                    hostbuf=staging)
            except cl.Error as exc:
                raise driver_error(exc, rt, f"{bound.where(p)}: uploading {_size(arr.nbytes)}",
                                   kernel=bound.name, advice="use smaller inputs") from exc
            if t0 and not stage:  # the staged pieces are traced as they go
                _trace.host_transfer(t0, "h2d", bound.device, arr.nbytes)
            # staged home too when the call waits: the copies out of the staging buffers are
            # made as it waits (faster than the driver's copy into pageable memory)
            how = STAGE if stage and wrapped is not None else COPY
        if writes:
            if launch._copies is None:
                launch._copies = []
            launch._copies.append((buf, arr, staging, how))
        return buf

    def in_place(host, writes, wrapped) -> bool:
        """Whether the kernel may use ``host`` itself: aligned for the parameter's type and for
        the driver (see _transfer.host_ptr_align), and sharing no memory with an array already
        used in place where either is written (the kernel would read what it writes, where a
        copy keeps each argument as it was at the call)."""
        if host.ctypes.data % align:
            return False
        return not any((writes or other_writes) and np.may_share_memory(host, other)
                       for other, other_writes in wrapped)

    return convert


#: How a written numpy argument comes home after the kernel (see ``Launch._copies``): a copy
#: enqueued after it, the buffer that wraps the array mapped, or staged as the launch is waited for.
COPY, MAP, STAGE = range(3)


def copy_back(queue, copies, traced):
    """Enqueue the copies back of a launch's written numpy arguments (see ``Launch._copies``)
    after its kernel, but the staged ones; returns the last one's event, or None."""
    last = None
    for buf, _, staging, how in copies:
        if how == STAGE:
            continue
        if how == MAP:  # the kernel wrote the array itself: mapping makes its writes visible
            mapped, event = cl.enqueue_map_buffer(queue, buf, cl.map_flags.READ, 0,
                                                  (staging.nbytes,), np.uint8, is_blocking=False)
            if traced:
                _trace.transfer(0, "d2h", event, queue, None, False, "d2h (map)")
            last = mapped.base.release(queue)
        else:
            last = cl.enqueue_copy(queue, staging, buf, is_blocking=False)
            if traced:
                _trace.transfer(0, "d2h", last, queue, staging.nbytes)
    return last


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

    def convert(value, launch):
        return _number(bound, p, value, dtype)
    return convert


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
