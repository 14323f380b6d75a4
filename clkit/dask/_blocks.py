"""What a task runs on a worker: one output block of a chain of filters.

It assembles the block's first window from the input chunks on the host, moves it to the
worker's device once, runs every filter there (gathering a filter's window on the device
where the plan says so), and brings the last result home: device arrays live only inside
the task.  Nothing here runs when the graph is built, and nothing OpenCL is made before the
first task of a process runs.
"""

from __future__ import annotations

import math
import os
import threading

import numpy as np
import pyopencl as cl

#: The ids of the devices this process's tasks ran on (for tests and diagnostics).
used_devices: set = set()
_lock = threading.Lock()
_resolved: dict = {}

# OpenCL C names by element size, for take_axis, which only moves elements.
_MOVE_TYPES = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong"}
_MOVE_DTYPES = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def worker_device(device=None):
    """The device this process's tasks use for ``device`` (a spec, or None for the rule of
    :func:`clkit.dask.worker_device`)."""
    import clkit
    if device is not None:
        return clkit.select(device)
    env = os.environ.get("CLKIT_DEVICE", "")
    index = _worker_index()
    key = (env, index)
    with _lock:
        if key in _resolved:
            return _resolved[key]
    if env.strip() or index is None:
        chosen = clkit.select()
    else:
        default = clkit.select()
        peers = [d for d in clkit.devices() if d.type == default.type and not d.simulator]
        chosen = peers[index % len(peers)]
    with _lock:
        _resolved[key] = chosen
    return chosen


def _worker_index():
    """This dask worker's name as a number (LocalCluster and dask-mpi name their workers
    0, 1, 2, ...), or None outside a worker or for other names."""
    try:
        from distributed import get_worker
        name = get_worker().name
    except (ImportError, ValueError):
        return None
    try:
        return int(name)
    except (TypeError, ValueError):
        return None


class Block:
    """What one task needs besides the chunks: the filters, the device spec (None for the
    worker's), per input axis the block's :class:`~._plan.AxisPlan`, per input (the chain's
    source, then each elementwise operand) its window as pieces of its chunks along each axis
    and the index of each chunk of it the task is given.  One object, so that dask sees no
    keys or tasks inside it."""

    __slots__ = ("filters", "device", "axes", "windows", "keys")

    def __init__(self, filters, device, axes, windows, keys):
        self.filters, self.device, self.axes = filters, device, axes
        self.windows, self.keys = windows, keys

    def __reduce__(self):
        return Block, (self.filters, self.device, self.axes, self.windows, self.keys)


def run_block(block, *chunks):
    """One output block of ``block.filters`` from the input ``chunks`` (the chain's source's,
    then each operand's).

    The work goes to the device's one in-order queue, so the kernels of the tasks that
    dask's threads run at once follow each other there, each spread over the whole device
    (a CPU driver's threads take every core), while the threads build their next windows
    and store their blocks.  On the Oclgrind simulator, which runs one thread's work at a
    time, a task takes the simulator's turn throughout.
    """
    import clkit
    from .._memory import transfer
    from .._platform.runtime import simulator_turn

    filters, axes = block.filters, block.axes
    dev = worker_device(block.device)
    with _lock:
        used_devices.add(dev.id)
    rt = clkit.runtime(dev)
    given, at = [], 0
    for keys in block.keys:
        given.append(dict(zip(keys, chunks[at:at + len(keys)])))
        at += len(keys)
    try:
        window = _assemble(block.windows[0], given[0], 0)
        operand = 1
        with simulator_turn(dev):
            data = transfer.upload(rt, window)
            for k, f in enumerate(filters):
                for axis, plan in enumerate(axes):
                    index = plan.gathers[k] if k < len(plan.gathers) else None
                    if index is not None:
                        data = _take(data, index, axis, dev)
                more = []
                for _ in range(f.operands):
                    host = _assemble(block.windows[operand], given[operand], operand)
                    more.append(transfer.upload(rt, host))
                    operand += 1
                data = f.function(data, *more, *f.args, device=dev, **f.kwargs)
            crop = tuple(plan.crop for plan in axes[:data.ndim])
            if not dev.unified_memory:
                return transfer.download(rt, data)[crop]
            # the device's memory is the host's: the result mapped (no copy), its block
            # copied out
            mapped, event = cl.enqueue_map_buffer(data.queue, data.base_data,
                                                  cl.map_flags.READ, data.offset, data.shape,
                                                  data.dtype, is_blocking=False)
            event.wait()
            out = mapped[crop].copy()
            mapped.base.release(data.queue)
            return out
    except BaseException:
        _local.windows = None  # the device may still be reading them
        raise


_local = threading.local()


def _assemble(pieces, chunks, slot):
    """An input's window, from its chunks (``pieces`` per axis: see ``_plan.pieces``); in a
    buffer this thread reuses for input ``slot`` (the task waits for its result, so the
    device has finished with the previous window), so that each task does not fault in
    fresh pages."""
    dtype = next(iter(chunks.values())).dtype
    if all(len(p) == 1 for p in pieces):  # one chunk holds the whole window
        key = tuple(p[0][2] for p in pieces)
        src = tuple(slice(p[0][3], p[0][3] + p[0][1] - p[0][0]) for p in pieces)
        return np.ascontiguousarray(chunks[key][src], dtype=dtype)
    window = _window(slot, tuple(p[-1][1] for p in pieces), dtype)
    for combo in _product(pieces):
        key = tuple(p[2] for p in combo)
        dst = tuple(slice(p[0], p[1]) for p in combo)
        src = tuple(slice(p[3], p[3] + p[1] - p[0]) for p in combo)
        window[dst] = chunks[key][src]
    return window


def _window(slot, shape, dtype, align: int = 128):
    """This thread's buffer for input ``slot`` as an empty array of ``shape``, its data
    aligned to ``align`` bytes: what drivers need to use host memory in place, and what the
    kernels' widest loads assume."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    buffers = getattr(_local, "windows", None)
    if buffers is None:
        buffers = _local.windows = {}
    raw = buffers.get(slot)
    if raw is None or raw.nbytes < nbytes + align:
        raw = buffers[slot] = np.empty(nbytes + align, np.uint8)
    start = -raw.ctypes.data % align
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def _product(lists):
    if not lists:
        yield ()
        return
    for head in lists[0]:
        for tail in _product(lists[1:]):
            yield (head,) + tail


_programs: dict = {}


def _take(data, index, axis, dev):
    """``data`` taken along ``axis`` by ``index``, on the device."""
    import clkit
    shape = tuple(data.shape)
    m_in, m_out = shape[axis], len(index)
    outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    out_shape = shape[:axis] + (m_out,) + shape[axis + 1:]
    size = data.dtype.itemsize
    key = (dev.id, size)
    with _lock:
        program = _programs.get(key)
    if program is None:
        program = clkit.load("take_axis", device=dev, defines={"T": _MOVE_TYPES[size]})
        with _lock:
            _programs[key] = program
    move = np.dtype(_MOVE_DTYPES[size])
    out = clkit.empty(out_shape, data.dtype, device=dev)
    total = outer * m_out * inner
    if total:
        program.take_axis(data.view(move), out.view(move), np.asarray(index, np.int64),
                          m_in, m_out, inner, total, global_size=total, device=dev)
    return out
