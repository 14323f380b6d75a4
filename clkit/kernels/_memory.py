"""Device memory of the library: a pool per device, and buffers over numpy memory.

Temporaries (the intermediate of a two-pass filter, a result staged on the
device) and the results of calls without ``out=`` come from one
:class:`pyopencl.tools.MemoryPool` per device, which keeps freed buffers for
the next call instead of asking the driver each time.  Buffers go back to
the pool when the last array using them is dropped; since every library
launch on a device goes through its runtime's in-order queue, a buffer
handed out again is only written after the work that used it before.

Held memory (freed, kept for reuse) shows as in use to tools such as
nvidia-smi.  A pool holds at most ``1 / POOL_SHARE`` of its device's memory
that way: past that, the next allocation first gives the held buffers back
to the driver.  :func:`release_memory` gives them back at once.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pyopencl.tools as cl_tools

from .. import _transfer
from .._array import check_alloc
from .._devices import select
from .._runtime import Runtime, runtime_of_array
from .._transfer import OUTPUT_ALIGN

POOL_SHARE = 8

_pools: dict = {}  # Runtime -> MemoryPool
_lock = threading.Lock()


def pool(rt: Runtime) -> cl_tools.MemoryPool:
    """The memory pool of a runtime (made on first use), for its own queue."""
    found = _pools.get(rt)
    if found is None:
        with _lock:
            found = _pools.setdefault(
                rt, cl_tools.MemoryPool(cl_tools.ImmediateAllocator(rt.own_queue)))
    return found


def pooled(rt: Runtime, nbytes: int):
    """A buffer of ``nbytes`` from the runtime's pool, for work on the runtime's queue."""
    p = _pools.get(rt) or pool(rt)
    if p.managed_bytes - p.active_bytes > rt.device.global_mem // POOL_SHARE:
        p.free_held()
    check_alloc(rt, nbytes, "a library result")
    return p.allocate(max(1, nbytes))


def scratch(rt: Runtime, nbytes: int, queue=None, dtype=None):
    """A device buffer of ``nbytes``, pooled for work on the runtime's own queue.

    For values one library kernel writes and a later one of the same call
    reads: the kernels read only elements written earlier in the same call,
    never what an earlier call left there (keep it so for any scratch memory,
    pooled or reused).  Another queue (a tile's, a lane of :func:`clkit.map`)
    gets a buffer of its own: a pooled one could be handed to work on the
    runtime's queue while that queue's work still uses it.

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
    if rt.device.simulator:
        dtype = np.dtype(dtype or np.uint8)
        host = np.full(max(1, nbytes // dtype.itemsize), np.nan if dtype.kind == "f" else 0,
                       dtype)
        return cl.Buffer(rt.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                         hostbuf=host)
    if queue is rt.own_queue:
        return pooled(rt, nbytes)
    check_alloc(rt, nbytes, "a library result")
    return cl.Buffer(rt.context, cl.mem_flags.READ_WRITE, max(1, nbytes))


def empty(rt: Runtime, shape, dtype, queue=None) -> cl_array.Array:
    """An uninitialised device array on a :func:`scratch` buffer."""
    dtype = np.dtype(dtype)
    nbytes = (shape if isinstance(shape, int) else math.prod(shape)) * dtype.itemsize
    return cl_array.Array(queue or rt.queue, shape, dtype, data=scratch(rt, nbytes, queue, dtype))


def release_memory(device=None) -> int:
    """Give the device memory that the library keeps for reuse back to the driver.

    The library keeps freed temporaries and results in a pool per device
    (at most an eighth of the device's memory), so that repeated calls do
    not allocate; tools that show a device's memory count them as used.

    Parameters
    ----------
    device : Device or str, optional
        Whose pool to empty; ``None`` empties every device's.

    Returns
    -------
    int
        The bytes given back.

    Examples
    --------
    >>> from clkit.kernels import release_memory
    >>> release_memory() >= 0
    True
    """
    chosen = None if device is None else select(device)
    freed = 0
    for rt, p in list(_pools.items()):
        if chosen is None or rt.device == chosen:
            freed += p.managed_bytes - p.active_bytes
            p.free_held()
    return freed


def forget() -> None:
    """Drop every pool and constant (their runtimes are being replaced)."""
    with _lock:
        _constants.clear()
        for p in _pools.values():
            p.free_held()
        _pools.clear()


def device_output(rt: Runtime, host: np.ndarray | None, shape, dtype, queue=None,
                  align: int = OUTPUT_ALIGN) -> cl_array.Array:
    """A device array for a result that will end in ``host``.

    On devices that share memory with the host, the buffer is ``host``'s own
    memory when that is aligned to ``align`` bytes (the kernel's widest
    store); otherwise a pooled buffer that :func:`clkit._transfer.download`
    copies home.
    """
    if (host is not None and host.nbytes and rt.device.unified_memory
            and host.flags.c_contiguous and host.ctypes.data % align == 0):
        check_alloc(rt, host.nbytes, "a library result")
        flags = cl.mem_flags.WRITE_ONLY | cl.mem_flags.USE_HOST_PTR
        buf = cl.Buffer(rt.context, flags, hostbuf=host)
        arr = cl_array.Array(queue or rt.queue, shape, dtype, data=buf)
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


_constants: dict = {}  # (runtime, bytes, dtype, shape) -> device array
MAX_CONSTANTS = 256


def constant(rt: Runtime, host: np.ndarray) -> cl_array.Array:
    """A small read-only array (a mask, a row map) on the device, uploaded once.

    Kept by its bytes, so that the same weights passed again are not uploaded
    again; the most recent :data:`MAX_CONSTANTS` are kept.
    """
    key = (rt, host.tobytes(), host.dtype.str, host.shape)
    found = _constants.get(key)
    if found is None:
        # on the runtime's own queue (not a lane's of clkit.map), where the launch takes
        # device arrays as they are
        found = owned_copy(rt, host, rt.own_queue)
        with _lock:
            _constants[key] = found
            while len(_constants) > MAX_CONSTANTS:
                del _constants[next(iter(_constants))]
    return found
