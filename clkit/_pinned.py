"""Numpy arrays in page-locked (pinned) host memory.

A GPU's copy engines move data between the device and host memory by DMA,
which needs memory the operating system will not page out.  Ordinary numpy
memory is pageable, so every transfer of it is copied once more on the host,
into pinned staging buffers, before the DMA can start (clkit does that
staging with several threads, see :mod:`clkit._transfer`).  A numpy array
made here lives in pinned memory from the start: the transfer paths recognise
it and hand its memory straight to the DMA engine.

The memory belongs to an OpenCL buffer made with ``ALLOC_HOST_PTR`` (the
driver allocates it pinned) and kept mapped for as long as the array, or any
view of it, is alive; dropping the last reference unmaps and frees it.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np
import pyopencl as cl

from ._array import _converting, check_shape
from ._runtime import runtime

# id of the array that owns a mapping -> (first byte address, end address, context)
_regions: dict[int, tuple[int, int, cl.Context]] = {}
_lock = threading.Lock()


def pinned_empty(shape, dtype, device=None) -> np.ndarray:
    """An uninitialised numpy array in page-locked host memory.

    Transfers between a pinned array and the device it was made for run by
    DMA at the link's full speed, with no host-side staging copy: clkit's
    library functions recognise pinned inputs and pinned ``out=`` arrays
    (and slices and reshapes of them).  On devices that share memory with
    the host (CPU drivers) the array is an ordinary host array that kernels
    read and write in place.

    Use them for data that goes to or comes from a GPU again and again:
    frames of a video, the images of a batch (:func:`clkit.map`), the
    ``out=`` of a loop.  Allocating pinned memory is slower than
    ``numpy.empty`` and takes memory the operating system cannot page out,
    so make them once and reuse them rather than making one per call; for
    a single transfer of ordinary data the staged copy is as good.

    Parameters
    ----------
    shape : int or tuple of int
    dtype : numpy dtype
    device : Device or str, optional
        The device whose transfers it serves (any :func:`clkit.select` spec);
        on another device it behaves as an ordinary numpy array.

    Returns
    -------
    numpy.ndarray
        C-contiguous, uninitialised; freed when it and its views are gone.

    Examples
    --------
    >>> import numpy as np, clkit
    >>> from clkit.kernels import grayscale
    >>> rgb = clkit.pinned_empty((4, 6, 3), np.uint8, device="cpu")
    >>> rgb[...] = 200
    >>> gray = clkit.pinned_empty((4, 6), np.uint8, device="cpu")
    >>> int(grayscale(rgb, out=gray, device="cpu")[0, 0])
    200
    """
    dims, dtype, nbytes = check_shape("pinned_empty", shape, dtype)
    rt = runtime(device)

    def make():
        # A buffer may not be empty: a zero-size array still gets one byte behind it.
        buf = cl.Buffer(rt.context, cl.mem_flags.ALLOC_HOST_PTR | cl.mem_flags.READ_WRITE,
                        max(1, nbytes))
        raw, _ = cl.enqueue_map_buffer(rt.queue, buf, cl.map_flags.READ | cl.map_flags.WRITE,
                                       0, (max(1, nbytes),), np.uint8)
        return raw  # its base, the mapping, keeps the buffer alive and unmaps it when freed

    raw = _converting(make, rt, nbytes)
    host = raw[:nbytes].view(dtype).reshape(dims)
    start = raw.ctypes.data
    key = id(raw)
    with _lock:
        _regions[key] = (start, start + raw.nbytes, rt.context)
    # Every view of ``host`` keeps ``raw`` alive, so the region is forgotten only once the
    # memory can no longer be reached.
    weakref.finalize(raw, _forget, key)
    return host


def pinned_like(array, device=None) -> np.ndarray:
    """A pinned copy of ``array``: same shape, dtype and values, in page-locked memory.

    Parameters
    ----------
    array : array_like or device array
        A device array's values are copied home into the new array.
    device : Device or str, optional
        The device whose transfers it serves (see :func:`pinned_empty`).

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> import numpy as np, clkit
    >>> p = clkit.pinned_like(np.arange(3, dtype=np.float32), device="cpu")
    >>> p, clkit.is_pinned(p)
    (array([0., 1., 2.], dtype=float32), True)
    """
    if hasattr(array, "get") and hasattr(array, "base_data"):  # a device array
        array = array.get()
    src = np.asarray(array)
    out = pinned_empty(src.shape, src.dtype, device)
    np.copyto(out, src)
    return out


def is_pinned(array, device=None) -> bool:
    """Whether a numpy array's memory is pinned for ``device`` (any device when None).

    Views count: a slice or reshape of a pinned array is pinned.

    Examples
    --------
    >>> import numpy as np, clkit
    >>> clkit.is_pinned(np.zeros(3)), clkit.is_pinned(clkit.pinned_empty(3, np.uint8)[1:])
    (False, True)
    """
    context = pinned_context(array)
    if context is None or device is None:
        return context is not None
    return context == runtime(device).context


def pinned_context(array) -> cl.Context | None:
    """The OpenCL context whose pinned memory holds all of ``array``, else None."""
    if not isinstance(array, np.ndarray) or not _regions:
        return None
    lo = array.__array_interface__["data"][0]
    if array.size == 0:
        return None
    # The span a view covers (strides may be negative).
    ends = [(n - 1) * s for n, s in zip(array.shape, array.strides)]
    first = lo + sum(min(0, e) for e in ends)
    last = lo + sum(max(0, e) for e in ends) + array.itemsize
    for start, end, context in list(_regions.values()):
        if start <= first and last <= end:
            return context
    return None


def _forget(key: int) -> None:
    with _lock:
        _regions.pop(key, None)
