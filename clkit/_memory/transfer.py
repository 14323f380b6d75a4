"""Moving numpy data to and from a device: :func:`upload` and :func:`download`.

Every transfer the kernel library makes goes through this pair (and is
traced there).  Devices that share memory with the host (CPU drivers) read
and write numpy memory in place (``USE_HOST_PTR`` buffers): an upload wraps
the array, a download maps the buffer.  For the others (GPUs), a copy from
ordinary (pageable) host memory is slow:
the driver stages it through pinned memory one piece at a time.  clkit does
the staging itself: the data goes through a few pinned buffers (allocated
with ``ALLOC_HOST_PTR`` and kept mapped), in chunks, so that the host copies
one chunk while the device's DMA engine moves another; a queue's buffers are
made in the background when its first large transfer wants them, which goes
by the driver's own copy meanwhile.  Arrays that already live in pinned memory
of the device's context (:func:`clkit.pinned_empty`) skip the staging: the DMA
engine reads and writes them directly.
"""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from .._errors import ArgumentTypeError
from .._platform.runtime import (_simulator_turn, driver_error, runtime, runtime_of_array,
                                 simulator_turn)
from .._trace import trace as _trace
from .array import _converting, _size, byte_span, check_alloc, wrap
from .pinned import pinned_context

# The fastest sizes measured (docs/performance.md, "Measurements behind the code")
CHUNK = int(os.environ.get("CLKIT_STAGING_CHUNK", 64 << 20))
SLOTS = int(os.environ.get("CLKIT_STAGING_SLOTS", 2))
THREADS = int(os.environ.get("CLKIT_STAGING_THREADS", min(8, os.cpu_count() or 1)))
SMALL = 1 << 20  # below this, one plain copy is quicker than the pipeline
# Library kernels read their inputs with loads of up to 16 bytes that assume the alignment of
# the loaded type; buffers the driver allocates are aligned far more than that.
INPUT_ALIGN = 16
OUTPUT_ALIGN = 128
# A transfer shorter than PIECES chunks goes in PIECES smaller ones (at least MIN_CHUNK), so
# that the host copies one while the device moves another: a 33 MB result in one chunk would
# wait for the whole DMA before its copy could start.
PIECES = 4
MIN_CHUNK = 8 << 20

_copiers = None
_copiers_lock = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _copiers
    with _copiers_lock:
        if _copiers is None:
            # THREADS split one copy; the pool has a thread per core, so that the copies of
            # several queues (the lanes of clkit.map) run side by side.
            _copiers = ThreadPoolExecutor(max_workers=max(THREADS, os.cpu_count() or 1),
                                          thread_name_prefix="clkit-copy")
        return _copiers


def _copy(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[...] = src`` for flat byte arrays, split over the copier threads."""
    n = dst.size
    parts = min(THREADS, max(1, n // (1 << 20)))
    if parts == 1:
        np.copyto(dst, src)
        return
    edges = [n * i // parts for i in range(parts + 1)]
    futures = [_pool().submit(np.copyto, dst[a:b], src[a:b]) for a, b in zip(edges, edges[1:])]
    for f in futures:
        f.result()


class _Slot:
    """One pinned buffer, mapped, and the last transfer that used it."""

    def __init__(self, context, queue, nbytes):
        self.buffer = cl.Buffer(context, cl.mem_flags.ALLOC_HOST_PTR | cl.mem_flags.READ_WRITE,
                                nbytes)
        self.host, _ = cl.enqueue_map_buffer(queue, self.buffer,
                                             cl.map_flags.READ | cl.map_flags.WRITE, 0,
                                             (nbytes,), np.uint8)
        self.event = None

    def wait(self):
        if self.event is not None:
            self.event.wait()
            self.event = None


class Staging:
    """The pinned staging buffers of one device (one set per queue, used in turn)."""

    def __init__(self, context, queue, chunk: int = CHUNK, slots: int = SLOTS):
        self.chunk = chunk
        self.slots = [_Slot(context, queue, chunk) for _ in range(slots)]
        self.lock = threading.Lock()  # one transfer at a time through these buffers

    def chunk_for(self, nbytes: int) -> int:
        """The chunk size for a transfer of ``nbytes``: ``PIECES`` chunks of it, within limits."""
        return min(self.chunk, max(MIN_CHUNK, -(-nbytes // PIECES)))

    def upload(self, queue, dst: cl.Buffer, host: np.ndarray, offset: int = 0) -> None:
        """Copy C-contiguous ``host`` into ``dst`` at byte ``offset``; returns once enqueued."""
        data = host.reshape(-1).view(np.uint8)
        chunk = self.chunk_for(data.size)
        with self.lock:
            for i, start in enumerate(range(0, data.size, chunk)):
                t0 = _trace.active and _trace.clock()
                piece = data[start:start + chunk]
                slot = self.slots[i % len(self.slots)]
                slot.wait()
                _copy(slot.host[:piece.size], piece)
                slot.event = cl.enqueue_copy(queue, dst, slot.host[:piece.size],
                                             dst_offset=offset + start, is_blocking=False)
                if t0:
                    _trace.transfer(t0, "h2d", slot.event, queue, piece.size)

    def download(self, queue, src: cl.Buffer, host: np.ndarray, offset: int = 0) -> None:
        """Copy ``src`` from byte ``offset`` into C-contiguous ``host``; returns when done."""
        data = host.reshape(-1).view(np.uint8)
        chunk = self.chunk_for(data.size)
        starts = list(range(0, data.size, chunk))
        with self.lock:
            pending = []
            for i, start in enumerate(starts):
                t0 = _trace.active and _trace.clock()
                slot = self.slots[i % len(self.slots)]
                if len(pending) == len(self.slots):  # every slot in flight: drain the oldest
                    self._land(pending.pop(0), data)
                slot.wait()
                size = min(chunk, data.size - start)
                slot.event = cl.enqueue_copy(queue, slot.host[:size], src,
                                             src_offset=offset + start, is_blocking=False)
                if t0:
                    _trace.transfer(t0, "d2h", slot.event, queue, size)
                pending.append((slot, start, size))
            for item in pending:
                self._land(item, data)

    @staticmethod
    def _land(item, data):
        slot, start, size = item
        slot.wait()
        _copy(data[start:start + size], slot.host[:size])


_staging_lock = threading.Lock()
_maker = None  # the thread that makes staging buffers


def staging(rt, queue, wait: bool = True) -> Staging | None:
    """The staging buffers for transfers on ``queue``.

    They are made on first use, in the background: pinning their 128 MiB costs more than one
    transfer through the driver's own copy.  With ``wait=False``, None until they are ready, and for good where they could not
    be made (no pinned memory to spare): the caller then makes a plain copy.
    """
    global _maker
    key = id(queue)
    made_for = rt.held(staging, dict)  # id(queue) -> (queue, the future of its Staging)
    found = made_for.get(key)
    if found is None:
        with _staging_lock:
            found = made_for.get(key)
            if found is None:
                if _maker is None:
                    _maker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="clkit-staging")
                # mapped through a queue of their own: a blocking map on ``queue`` would wait for
                # whatever the caller enqueued on it
                made = _maker.submit(lambda: Staging(rt.context, cl.CommandQueue(rt.context)))
                found = made_for[key] = (queue, made)
    made = found[1]
    if wait:
        return made.result()
    return made.result() if made.done() and not made.exception() else None


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


def _copy_traced(queue, dst, src, direction, nbytes, blocking, **offsets):
    t0 = _trace.active and _trace.clock()
    event = cl.enqueue_copy(queue, dst, src, is_blocking=blocking, **offsets)
    if t0:
        _trace.transfer(t0, direction, event, queue, nbytes, blocking=blocking)
    return event


def host_ptr_align(device) -> int:
    """The alignment in bytes at which ``device``'s driver uses host memory in place.

    PoCL takes any address.  Intel's CPU runtime copies host memory that is not aligned to
    the device's base-address alignment (128 bytes; numpy's large arrays are aligned to 16),
    which costs it more than clkit's own copy into aligned memory.
    """
    if device.platform.startswith("Intel(R) OpenCL"):
        return device.cl_device.mem_base_addr_align // 8
    return 1


def to_device(array, device=None) -> cl_array.Array:
    """Copy a numpy array to a device.

    On a GPU a large array goes through clkit's pinned staging buffers, as the
    library's own uploads do (faster than a plain pyopencl copy); the call
    returns once the data is on the device.

    Parameters
    ----------
    array : array_like or device array
        Copied as a C-contiguous array of the same dtype (a device array's
        values go through the host, so this also moves data between devices).
    device : Device or str, optional
        Any spec :func:`clkit.select` takes.

    Returns
    -------
    pyopencl.array.Array
        On the device's clkit runtime; ``.get()`` copies it back.

    Raises
    ------
    ArgumentTypeError
        A string, or an array that is not of numbers or bools (Python objects, strings,
        dates).
    DeviceNotFoundError
        ``device`` names no visible device.
    OutOfDeviceMemoryError
        More bytes than the device can allocate at once (its ``max_alloc``).

    Examples
    --------
    >>> import numpy as np, clkit
    >>> d = clkit.to_device(np.arange(4, dtype=np.float32), device="cpu")
    >>> d.get()
    array([0., 1., 2., 3.], dtype=float32)
    """
    if isinstance(array, cl_array.Array):  # a device array: its values, through the host
        home = runtime_of_array(array)
        array = download(home, array) if home is not None else array.get()
    elif isinstance(array, (str, bytes)):
        raise ArgumentTypeError(f"to_device takes a numpy array (or a list of numbers), not "
                                f"{type(array).__name__} {array!r:.40}")
    host = np.asarray(array, order="C")
    if host.dtype.kind not in "biufc":
        what = "Python objects" if host.dtype == object else f"dtype {host.dtype}"
        raise ArgumentTypeError(f"to_device: an array of {what} cannot go to a device; "
                                "convert it to a numeric or bool dtype first")
    rt = runtime(device)
    check_alloc(rt, host.nbytes, "to_device")
    out = _converting(lambda: cl_array.empty(rt.queue, host.shape, host.dtype), rt,
                      host.nbytes, "to_device")
    with simulator_turn(rt.device):
        upload(rt, host, out=out)
        if host.nbytes and not rt.device.unified_memory:
            rt.queue.finish()  # the data is there, as after a blocking copy
    return out


def stages(rt, host: np.ndarray) -> bool:
    """Whether ``host`` goes to or comes from ``rt``'s device through the staging buffers: on a
    device with memory of its own, from SMALL bytes up, unless it is pinned memory of the
    device's context (which the DMA engine reads and writes as it is)."""
    return not (rt.device.unified_memory or host.nbytes < SMALL or _pinned_here(rt, host))


def upload(rt, host: np.ndarray, queue=None, *, out=None, align: int = INPUT_ALIGN):
    """A device array with ``host``'s data (``out`` when given, else a new one).

    Without ``out``, on devices that share memory with the host (CPU drivers)
    the buffer wraps the numpy memory itself (``USE_HOST_PTR``: no copy) when
    it is aligned to ``align`` bytes (what the kernel's widest load assumes)
    and to what the driver needs to use it in place (:func:`host_ptr_align`);
    otherwise it is copied to aligned memory first.  So ``host`` must stay
    alive and unchanged until the work reading it has finished.  Elsewhere
    the data is copied, staged through pinned memory when large; the call
    returns once the copy is enqueued and ``host`` may be reused, except
    pinned memory of this device, which goes by DMA in the queue's order
    (``host`` must stay unchanged until the queue's work has finished).
    """
    queue = queue or rt.queue
    if rt.device.simulator and not _simulator_turn.held():
        with _simulator_turn:  # (a blocking copy runs the queue's kernels: see simulator_turn)
            return upload(rt, host, queue, out=out, align=align)
    host = np.asarray(host, order="C")  # (ascontiguousarray makes 0-d arrays 1-d)
    if out is None:
        check_alloc(rt, host.nbytes, "upload")
        if host.nbytes and rt.device.unified_memory:
            if host.ctypes.data % max(align, host_ptr_align(rt.device)):
                copy = aligned_empty(host.shape, host.dtype)
                copy[...] = host
                host = copy
            flags = cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR
            buf = cl.Buffer(rt.context, flags, hostbuf=host)
            out = wrap(queue, host.shape, host.dtype, buf)
            out.host_ref = host  # the buffer's memory
            return out
        out = cl_array.empty(queue, host.shape, host.dtype)
    if host.nbytes:
        try:
            stage = stages(rt, host) and staging(rt, queue, wait=False)
            if stage:
                stage.upload(queue, out.base_data, host, out.offset)
            else:  # one copy
                pinned = _pinned_here(rt, host)
                _copy_traced(queue, out.base_data, host, "h2d", host.nbytes, not pinned,
                             dst_offset=out.offset)
        except cl.Error as exc:
            raise driver_error(exc, rt, f"copying {_size(host.nbytes)} to the device") from exc
    return out


def download(rt, arr, host: np.ndarray | None = None) -> np.ndarray:
    """``arr``'s data in ``host`` (a new array when None); returns once it is there.

    ``arr`` may be a strided view of a device array (which pyopencl's own
    copies refuse): the span of the buffer it covers comes home, and numpy
    takes the view of it.  A buffer that wraps ``host`` (see :func:`upload`)
    is mapped, which makes the device's writes visible without a copy.
    """
    if host is None:
        host = np.empty(arr.shape, arr.dtype)
    if arr.size == 0:
        return host
    if rt.device.simulator and not _simulator_turn.held():
        with _simulator_turn:  # (a blocking copy runs the queue's kernels: see simulator_turn)
            return download(rt, arr, host)
    queue = arr.queue
    if getattr(arr, "host_ref", None) is host:
        t0 = _trace.active and _trace.clock()
        # mapped and unmapped in the queue's order, one wait for both (the memory is host's)
        mapped, event = cl.enqueue_map_buffer(queue, arr.base_data, cl.map_flags.READ, 0,
                                              (arr.nbytes,), np.uint8, is_blocking=False)
        if t0:
            _trace.transfer(t0, "d2h", event, queue, None, False, "d2h (map)")  # no copy
        mapped.base.release(queue)
        queue.finish()
        return host
    if not arr.flags.c_contiguous:
        lo, hi = byte_span(arr.offset, arr)
        span = np.empty(hi - lo, np.uint8)
        _copy_traced(queue, span, arr.base_data, "d2h", span.nbytes, True, src_offset=lo)
        host[...] = np.ndarray(arr.shape, arr.dtype, buffer=span, offset=arr.offset - lo,
                               strides=arr.strides)
        return host
    target = host if host.flags.c_contiguous else np.empty(arr.shape, arr.dtype)
    try:
        if _pinned_here(rt, target):
            pinned_download(queue, target, arr.base_data, arr.offset)
        elif stages(rt, target) and (stage := staging(rt, queue, wait=False)):
            stage.download(queue, arr.base_data, target, arr.offset)
        else:
            _copy_traced(queue, target, arr.base_data, "d2h", target.nbytes, True,
                         src_offset=arr.offset)
    except cl.Error as exc:
        raise driver_error(exc, rt, f"copying {_size(target.nbytes)} from the device") from exc
    if target is not host:
        host[...] = target
    return host


def overlap(a, b) -> bool:
    """Whether two device arrays cover some of the same bytes of one buffer."""
    if not (a.size and b.size) or a.base_data.int_ptr != b.base_data.int_ptr:
        return False
    (lo_a, hi_a), (lo_b, hi_b) = byte_span(a.offset, a), byte_span(b.offset, b)
    return lo_a < hi_b and lo_b < hi_a


def pinned_download(queue, host: np.ndarray, src: cl.Buffer, offset: int) -> None:
    """DMA ``src`` from byte ``offset`` into pinned ``host``; returns when it is there.

    The copy is enqueued without blocking and its event waited for: a blocking copy on NVIDIA's
    OpenCL keeps the copies of the process's other queues from overlapping it.
    """
    _copy_traced(queue, host, src, "d2h", host.nbytes, False, src_offset=offset).wait()


def _pinned_here(rt, host: np.ndarray) -> bool:
    """Whether ``host`` is pinned memory of ``rt``'s context (a CPU driver needs no DMA)."""
    if rt.device.unified_memory:
        return False
    context = pinned_context(host)
    return context is not None and context == rt.context
