"""Device memory of the library: pools per device, and buffers over numpy memory.

Temporaries (the intermediate of a two-pass filter, a result staged on the
device, an uploaded input) and the results of calls without ``out=`` come
from a :class:`pyopencl.tools.MemoryPool`, which keeps freed buffers for the
next call instead of asking the driver each time (a GPU driver's free can
wait for the whole device, which would stall the other queues' copies and
kernels).  Buffers go back to their pool when the last array using them is
dropped, and a pool serves one in-order queue, so a buffer handed out again
is only written after the work that used it before: the runtime's own queue
has one, and so does each other queue (a lane of :func:`clkit.map`, a
call's tiles) for the buffers that live only inside one numpy call's band
(:func:`band`).

Held memory (freed, kept for reuse) shows as in use to tools such as
nvidia-smi.  A device's pools together hold at most ``1 / POOL_SHARE`` of
its memory that way: past that, the next allocation first gives the held
buffers back to the driver.  :func:`release_memory` gives them back at once, with the
idle pinned blocks of numpy results (``clkit._memory.pinned``).

A runtime's pools (:func:`pools`) and the masks it keeps on the device
(:func:`constant`) are held by the runtime, and go with its context.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import threading

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pyopencl.tools as cl_tools

from .._platform.devices import select
from .._platform.runtime import Runtime, runtime_of_array, working_runtimes
from . import transfer as _transfer
from .array import check_alloc, wrap
from .pinned import release_blocks
from .transfer import OUTPUT_ALIGN

POOL_SHARE = 8
#: Device arrays are computed whole; numpy arrays go through the device in tiles.
WHOLE = ("device arrays are computed whole: pass the data as numpy arrays (e.g. d.get()), "
         "which the clkit.kernels functions stream through the device in tiles")

# The queue whose work, in this context, runs one numpy call's band whole: buffers for it
# live only inside the band, so they may come from that queue's own pool.
_band_queue: contextvars.ContextVar = contextvars.ContextVar("clkit_band_queue", default=None)


@contextlib.contextmanager
def band(queue):
    """Within: scratch buffers for ``queue`` come from its pool (they must not outlive the
    block, which ends with the queue's work on them finished, as a numpy band's does)."""
    token = _band_queue.set(queue)
    try:
        yield
    finally:
        _band_queue.reset(token)


class Pools:
    """The memory pools of one runtime: one per in-order queue that takes pooled buffers (the
    runtime's own, and the queue of each numpy band or lane of :func:`clkit.map`)."""

    def __init__(self, rt: Runtime):
        self.rt = rt
        self._by_queue: dict = {}  # id(queue) -> (queue, MemoryPool)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._by_queue)

    def _pool(self, queue) -> cl_tools.MemoryPool:
        found = self._by_queue.get(id(queue))
        if found is None:
            with self._lock:
                found = self._by_queue.setdefault(
                    id(queue), (queue, cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue))))
        return found[1]

    def allocate(self, nbytes: int, queue=None):
        """A buffer of ``nbytes`` from the pool of ``queue`` (the runtime's own by default), for
        work on that queue; past the device's share, the held buffers go back first."""
        p = self._pool(queue or self.rt.own_queue)
        held = (p.managed_bytes - p.active_bytes if len(self._by_queue) == 1 else
                self.held_bytes())
        if held > self.rt.device.global_mem // POOL_SHARE:
            self.free_held()
        return p.allocate(max(1, nbytes))

    def held_bytes(self) -> int:
        """Bytes freed and kept for reuse, every queue's pool together."""
        return sum(p.managed_bytes - p.active_bytes for _, p in list(self._by_queue.values()))

    def managed_bytes(self) -> int:
        """Bytes the pools hold from the driver, lent out or kept."""
        return sum(p.managed_bytes for _, p in list(self._by_queue.values()))

    def free_held(self) -> int:
        """Give the kept buffers back to the driver; the bytes given back."""
        freed = 0
        for _, p in list(self._by_queue.values()):
            before = p.managed_bytes  # (the blocks lent out keep theirs, rounding included)
            p.free_held()
            freed += before - p.managed_bytes
        return freed


def pools(rt: Runtime) -> Pools:
    """The runtime's pools, made on first use."""
    return rt.held(Pools, Pools, rt)


def scratch(rt: Runtime, nbytes: int, queue=None, dtype=None):
    """A device buffer of ``nbytes``, pooled for work on the runtime's own queue.

    For values one library kernel writes and a later one of the same call
    reads: the kernels read only elements written earlier in the same call,
    never what an earlier call left there (keep it so for any scratch memory,
    pooled or reused).  Another queue (a tile's, a lane of :func:`clkit.map`)
    gets a buffer of that queue's pool inside a numpy band (:func:`band`),
    else one of its own: the array may leave the call (a device-array result
    of a lane), and a pooled buffer dropped while another queue's work still
    reads it could be handed out again.

    On the Oclgrind simulator the buffer is new and starts as NaN (a
    floating ``dtype``), copied from the host.  Oclgrind 21.10's
    uninitialised-value check loses the stores into a buffer made without
    host data where a smaller freed buffer lay (shown with pyopencl alone: a
    buffer of 32 floats written by one kernel and read by the next reports
    16 uninitialised reads once a buffer of 16 was freed before it), which
    would report every call after the first one.  A buffer made from host
    data is tracked right, and NaN still carries a read of an element no
    kernel wrote into the result, where the tests compare it with scipy.
    """
    queue = queue or rt.queue
    check_alloc(rt, nbytes, "a library result", WHOLE)
    if rt.device.simulator:
        dtype = np.dtype(dtype or np.uint8)
        host = np.full(max(1, nbytes // dtype.itemsize), np.nan if dtype.kind == "f" else 0,
                       dtype)
        return cl.Buffer(rt.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                         hostbuf=host)
    if queue is rt.own_queue or queue is _band_queue.get():
        return pools(rt).allocate(nbytes, queue)
    return cl.Buffer(rt.context, cl.mem_flags.READ_WRITE, max(1, nbytes))


def empty(rt: Runtime, shape, dtype, queue=None) -> cl_array.Array:
    """An uninitialised device array on a :func:`scratch` buffer."""
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    buffer = scratch(rt, math.prod(shape) * dtype.itemsize, queue, dtype)
    return wrap(queue or rt.queue, shape, dtype, buffer)


def release_memory(device=None) -> int:
    """Give the memory that the library keeps for reuse back to the driver.

    The library keeps freed temporaries and results in pools per device
    (together at most an eighth of the device's memory), so that repeated
    calls do not allocate; tools that show a device's memory count them as
    used.  On GPUs it also keeps the page-locked host blocks that numpy
    results come home in (see :func:`clkit.pinned_empty`); the idle ones go
    too.  Memory a live result or device array uses stays valid and is kept
    for reuse again once that is dropped.

    Parameters
    ----------
    device : Device or str, optional
        Whose memory to give back; ``None``: every device's.

    Returns
    -------
    int
        The bytes given back, device and pinned host memory together.

    Raises
    ------
    DeviceNotFoundError
        ``device`` names no visible device.

    Examples
    --------
    >>> from clkit.kernels import release_memory
    >>> release_memory() >= 0
    True
    """
    chosen = None if device is None else select(device)
    return sum(pools(rt).free_held() + release_blocks(rt) for rt in working_runtimes()
               if chosen is None or rt.device == chosen)


def device_output(rt: Runtime, host: np.ndarray | None, shape, dtype, queue=None,
                  align: int = OUTPUT_ALIGN) -> cl_array.Array:
    """A device array for a result that will end in ``host``.

    On devices that share memory with the host, the buffer is ``host``'s own
    memory when that is aligned to ``align`` bytes (the kernel's widest
    store); otherwise a pooled buffer that :func:`clkit._memory.transfer.download`
    copies home.
    """
    if (host is not None and host.nbytes and rt.device.unified_memory
            and host.flags.c_contiguous and host.ctypes.data % align == 0):
        check_alloc(rt, host.nbytes, "a library result", WHOLE)
        flags = cl.mem_flags.WRITE_ONLY | cl.mem_flags.USE_HOST_PTR
        buf = cl.Buffer(rt.context, flags, hostbuf=host)
        arr = wrap(queue or rt.queue, tuple(shape), np.dtype(dtype), buf)
        arr.host_ref = host
        return arr
    return empty(rt, shape, dtype, queue)


def contiguous_device(a: cl_array.Array) -> cl_array.Array:
    """A device array that starts at its buffer's origin and is C-contiguous.

    Vector loads in the library kernels assume the buffer's alignment.
    """
    if a.offset == 0 and a.flags.c_contiguous:
        return a
    if a.flags.c_contiguous:
        return a.copy()
    rt = runtime_of_array(a)
    return _transfer.upload(rt, _transfer.download(rt, a), a.queue, out=cl_array.empty(a.queue, a.shape, a.dtype))


def owned_copy(rt: Runtime, host: np.ndarray, queue) -> cl_array.Array:
    """A device array with a copy of small ``host`` in memory the driver owns.

    The copy is made before this returns, and the driver frees the memory
    only after the last command that uses it, however soon the array is
    dropped.  An upload to a CPU driver would use ``host``'s own memory in
    place, which a kernel still queued when its array went would read after
    Python had freed it.
    """
    host = np.ascontiguousarray(host)
    if not host.nbytes:
        return cl_array.empty(queue, host.shape, host.dtype)
    buf = cl.Buffer(rt.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                    hostbuf=host)
    return cl_array.Array(queue, host.shape, host.dtype, data=buf)


#: Masks and row maps kept on the device, per runtime.
MAX_CONSTANTS = 256


def constant(rt: Runtime, host: np.ndarray) -> cl_array.Array:
    """A small read-only array (a mask, a row map) on the device, uploaded once.

    Kept by its bytes, so that the same weights passed again are not uploaded
    again; the most recent :data:`MAX_CONSTANTS` are kept.
    """
    # on the runtime's own queue (not a lane's of clkit.map), where the launch takes device
    # arrays as they are
    return rt.memo(constant, MAX_CONSTANTS).make(
        (host.tobytes(), host.dtype.str, host.shape), lambda: owned_copy(rt, host, rt.own_queue))
