"""Device arrays.

A clkit device array is a :class:`pyopencl.array.Array` on the device's
clkit runtime queue, so pyopencl's array API works on it (its reductions, such as
``pyopencl.array.sum``, need Mako, which pyopencl leaves optional), and kernels
launched through clkit use it in place.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from .._errors import ArgumentTypeError, ArgumentValueError, OutOfDeviceMemoryError
from .._platform.runtime import Runtime, driver_error, runtime

Array = cl_array.Array
# pyopencl's own constructor for arrays it derives from others, which skips the checks of the
# shape with numpy (a large part of a call's host work on a CPU driver)
_FAST = "_fast" in inspect.signature(Array.__init__).parameters


def wrap(queue, shape: tuple, dtype: np.dtype, buffer) -> Array:
    """A C-contiguous device array of ``shape`` and ``dtype`` over all of ``buffer``, on
    ``queue``: what ``Array(queue, shape, dtype, data=buffer)`` makes, for a shape of whole
    numbers at least 0 and a numpy dtype (the library's own, already checked), in about a
    microsecond."""
    if not _FAST:
        return Array(queue, shape, dtype, data=buffer)
    strides, step = [], dtype.itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(1, n)
    return Array(None, shape, dtype, data=buffer, strides=tuple(reversed(strides)), _fast=True,
                 _size=math.prod(shape), _context=queue.context, _queue=queue)


def empty(shape, dtype, device=None) -> Array:
    """An uninitialised device array.

    Parameters
    ----------
    shape : int or tuple of int
    dtype : numpy dtype
    device : Device or str, optional

    Returns
    -------
    pyopencl.array.Array

    Raises
    ------
    ArgumentTypeError
        A dtype that cannot live on a device (Python objects).
    ArgumentValueError
        A shape with negative or non-integer sizes.
    DeviceNotFoundError
        ``device`` names no visible device.
    OutOfDeviceMemoryError
        More bytes than the device can allocate at once (its ``max_alloc``).

    Examples
    --------
    >>> import numpy as np, clkit
    >>> clkit.empty((2, 3), np.uint8, device="cpu").shape
    (2, 3)
    """
    dims, dtype, nbytes = check_shape("empty", shape, dtype)
    rt = runtime(device)
    check_alloc(rt, nbytes, "empty")
    return _converting(lambda: cl_array.empty(rt.queue, shape, dtype), rt, nbytes, "empty")


def check_shape(what: str, shape, dtype) -> tuple[tuple, np.dtype, int]:
    """A new array's shape (a tuple), dtype and size in bytes, checked."""
    dtype = np.dtype(dtype)
    if dtype == object:
        raise ArgumentTypeError(f"{what}: an array of Python objects cannot live on a device; "
                                "use a numeric dtype")
    try:
        dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    except TypeError:
        dims = (None,)
    if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 0
               for n in dims):
        raise ArgumentValueError(f"{what}: shape must be whole numbers of at least 0, got {shape!r}")
    dims = tuple(int(n) for n in dims)
    return dims, dtype, math.prod(dims) * dtype.itemsize  # (Python's integers: no overflow)


def byte_span(start: int, a) -> tuple[int, int]:
    """The bytes ``[lo, hi)`` that array ``a`` (numpy or device, perhaps a view with negative
    strides) covers, its first element at byte ``start``; none for an empty one."""
    if not a.size:
        return start, start
    ends = [(n - 1) * s for n, s in zip(a.shape, a.strides)]
    return (start + sum(min(0, e) for e in ends),
            start + sum(max(0, e) for e in ends) + a.dtype.itemsize)


#: What to do about an allocation over the device's limit, in general.
SPLIT = ("split the data, or use the clkit.kernels functions, which stream large numpy inputs "
         "in tiles")


def check_alloc(rt: Runtime, nbytes: int, what: str, advice: str = SPLIT) -> None:
    """Refuse, before the driver does, an allocation over the device's limits."""
    dev = rt.device
    if nbytes > dev.max_alloc:
        raise OutOfDeviceMemoryError(
            f"{what}: {_size(nbytes)} is more than one allocation may hold on {dev} "
            f"(max {_size(dev.max_alloc)}); {advice}", device=dev)


def _converting(make, rt: Runtime, nbytes: int, what: str = "allocation"):
    try:
        return make()
    except cl.Error as exc:
        raise driver_error(exc, rt, f"{what}: allocating {_size(nbytes)}",
                           advice=f"it has {_size(rt.device.global_mem)} in all: free device "
                           "arrays no longer needed, or use smaller ones") from exc


def _size(nbytes: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if nbytes < 1024 or unit == "TiB":
            return f"{nbytes:.0f} {unit}" if unit == "bytes" else f"{nbytes:.2f} {unit}"
        nbytes /= 1024
    return str(nbytes)

