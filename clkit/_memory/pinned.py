"""Numpy arrays in page-locked (pinned) host memory.

A GPU's copy engines move data between the device and host memory by DMA,
which needs memory the operating system will not page out.  Ordinary numpy
memory is pageable, so every transfer of it is copied once more on the host,
into pinned staging buffers, before the DMA can start (clkit does that
staging with several threads, see :mod:`clkit._memory.transfer`).  A numpy array
made here lives in pinned memory from the start: the transfer paths recognise
it and hand its memory straight to the DMA engine.

The memory belongs to an OpenCL buffer made with ``ALLOC_HOST_PTR`` (the
driver allocates it pinned) and kept mapped for as long as the array, or any
view of it, is alive; dropping the last reference unmaps and frees it.
"""

from __future__ import annotations

import os
import threading
import weakref

import numpy as np
import pyopencl as cl

from .._platform.runtime import runtime, working_runtimes
from .array import _converting, byte_span, check_alloc, check_shape

# id of the array that owns a mapping -> (first byte address, end address, context)
_regions: dict[int, tuple[int, int, cl.Context]] = {}
_lock = threading.RLock()  # a finalizer may run (in a collection) while it is held


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

    Raises
    ------
    ArgumentValueError
        A shape with negative or non-integer sizes.
    DeviceNotFoundError
        ``device`` names no visible device.

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
    check_alloc(rt, nbytes, "pinned_empty")

    raw = _map(rt, nbytes)
    host = raw[:nbytes].view(dtype).reshape(dims)
    # Every view of ``host`` keeps ``raw`` alive (numpy's views lead to the array that
    # wraps the mapping), so the memory goes only once no view can reach it.
    weakref.finalize(raw, _forget, _remember(raw, rt.context))
    return host


def _map(rt, nbytes: int) -> np.ndarray:
    """A new pinned buffer of ``rt``'s context, mapped: its bytes as a uint8 array."""
    def make():
        # A buffer may not be empty: a zero-size array still gets one byte behind it.
        buf = cl.Buffer(rt.context, cl.mem_flags.ALLOC_HOST_PTR | cl.mem_flags.READ_WRITE,
                        max(1, nbytes))
        raw, _ = cl.enqueue_map_buffer(rt.queue, buf,
                                       cl.map_flags.READ | cl.map_flags.WRITE, 0,
                                       (max(1, nbytes),), np.uint8)
        return raw  # its base, the mapping, keeps the buffer alive and unmaps it when freed

    return _converting(make, rt, nbytes)


def _remember(raw: np.ndarray, context) -> int:
    key = id(raw)
    with _lock:
        _regions[key] = (raw.ctypes.data, raw.ctypes.data + raw.nbytes, context)
    return key


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

    Raises
    ------
    DeviceNotFoundError
        ``device`` names no visible device.

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

    Parameters
    ----------
    array : object
        Anything; only numpy arrays (and their views) made by :func:`pinned_empty` or
        :func:`pinned_like` are pinned.
    device : Device or str, optional
        Pinned for this device's context; None: for any device.

    Returns
    -------
    bool

    Raises
    ------
    DeviceNotFoundError
        ``device`` names no visible device (asked only about a pinned array).

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
    first, last = byte_span(array.__array_interface__["data"][0], array)
    for start, end, context in list(_regions.values()):
        if start <= first and last <= end:
            return context
    return None


def _forget(key: int) -> None:
    with _lock:
        _regions.pop(key, None)


# -- results of library calls on GPUs -------------------------------------------------------------

# Pinned memory the result blocks may hold, lent out and idle together.
def _default_pool_bytes() -> int:
    """2 GiB, or an eighth of the host's memory where that is less."""
    try:
        host = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        host = 16 << 30
    return min(2 << 30, host // 8)


POOL_BYTES = int(os.environ.get("CLKIT_PINNED_POOL", _default_pool_bytes()))
_GRAIN = 1 << 20  # blocks are whole MiB, so that results of one size share blocks


class _Lease:
    """One loan of a pool block: the numpy array made on it keeps it (and the block) alive."""

    def __init__(self, raw: np.ndarray, nbytes: int):
        self.raw = raw
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "version": 3,
                                    "data": (raw.ctypes.data, False)}


class _Budget:
    """The bytes of page-locked memory the result blocks of every context hold together, at
    most ``POOL_BYTES``: one budget for the process, as the host's memory is one.

    A block counts from its mapping until it is freed (its finalizer gives the bytes back),
    whichever context it belongs to and whether it is lent or idle.
    """

    def __init__(self):
        self.held = 0
        self.lock = threading.RLock()  # a finalizer may run (in a collection) while it is held

    def freed(self, size: int) -> None:
        with self.lock:
            self.held -= size


_budget = _Budget()


class _Blocks:
    """The pinned blocks of one context for the numpy results of GPU calls, reused once a
    result is dropped; held by the context's runtime (``rt.held``), so that its idle blocks
    go with it when the context is lost or released, and a block lent out then is freed when
    its result is dropped instead of coming back.

    A result in pinned memory comes home by DMA straight into it, with no
    staging copy and no page faults on fresh memory.  Beyond the budget
    (``POOL_BYTES`` for all contexts) results are ordinary numpy memory.
    """

    def __init__(self, rt):
        self.rt = rt
        self.free: dict = {}  # block bytes -> [raw, ...]

    def take(self, nbytes: int) -> np.ndarray | None:
        size = -(-nbytes // _GRAIN) * _GRAIN
        rt = self.rt
        with _budget.lock:
            blocks = self.free.get(size)
            raw = blocks.pop() if blocks else None
            if raw is None:
                if size > POOL_BYTES - _budget.held:
                    _trim(POOL_BYTES - size)
                if size > POOL_BYTES - _budget.held:
                    return None
                _budget.held += size
        if raw is None:
            try:
                raw = _map(rt, size)
            except Exception:
                _budget.freed(size)
                return None
            key = _remember(raw, rt.context)  # for the block's life: never unmapped in use
            weakref.finalize(raw, _unmapped, key, size)
        lent = np.asarray(_Lease(raw, nbytes))
        # (weakly: a result still held must not keep the idle blocks of a lost context)
        weakref.finalize(lent, _give_back, weakref.ref(self), size, raw)
        return lent


def _give_back(blocks_ref, size, raw) -> None:
    """A result is gone: its block back to its context's idle blocks, or, where the runtime
    dropped them (a lost context), gone with this last reference.  A forked child's runtimes
    keep theirs (freeing there could hang): back it goes."""
    blocks = blocks_ref()
    if blocks is not None and blocks.rt.holds(_Blocks) is blocks:
        with _budget.lock:
            blocks.free.setdefault(size, []).append(raw)


def _unmapped(key: int, size: int) -> None:
    _forget(key)
    _budget.freed(size)


def release_blocks(rt) -> int:
    """Let ``rt``'s idle result blocks go (their finalizers unmap them and give their bytes
    back to the budget); the bytes they held.  A block lent to a result still alive stays
    that result's, and comes back as an idle block when the result is dropped."""
    blocks = rt.holds(_Blocks)
    if blocks is None:
        return 0
    with _budget.lock:
        idle, blocks.free = blocks.free, {}
    return sum(size * len(raws) for size, raws in idle.items())


def _trim(keep: int) -> None:
    """Let idle blocks go (their finalizers unmap them) until at most ``keep`` bytes are held
    (the budget's lock is held)."""
    for rt in working_runtimes():
        mine = rt.holds(_Blocks)
        for blocks in (mine.free.values() if mine is not None else ()):
            while blocks and _budget.held > keep:
                blocks.pop()  # its finalizer, run now, gives its bytes back


def result_empty(shape, dtype, devices) -> np.ndarray | None:
    """Pinned memory for a library call's numpy result on ``devices``, where it pays; else None.

    Only for one device with memory of its own (a GPU), and results of at
    least a megabyte; ``None`` means: use ordinary memory.
    """
    if len(devices) != 1 or devices[0].unified_memory or POOL_BYTES <= 0:
        return None
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes < _GRAIN:
        return None
    rt = runtime(devices[0])
    lent = rt.held(_Blocks, _Blocks, rt).take(nbytes)
    return None if lent is None else lent.view(dtype).reshape(shape)
