"""What a task runs on a worker: one output block of a chain of filters.

It assembles the block's first window from the input chunks on the host, moves it to the
worker's device once, runs every filter there (gathering a filter's window on the device
where the plan says so), and brings the last result home: device arrays live only inside
the task.  Nothing here runs when the graph is built, and nothing OpenCL is made before the
first task of a process runs.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading

import numpy as np

#: The ids of the devices this process's tasks ran on (for tests and diagnostics).
used_devices: set = set()
_lock = threading.Lock()
_resolved: dict = {}
_turns: dict = {}  # device id -> the lock of its turn

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
    worker's), per input axis the block's :class:`~._plan.AxisPlan` and its window's pieces,
    and the index of each chunk the task is given.  One object, so that dask sees no keys or
    tasks inside it."""

    __slots__ = ("filters", "device", "axes", "keys")

    def __init__(self, filters, device, axes, keys):
        self.filters, self.device, self.axes, self.keys = filters, device, axes, keys

    def __reduce__(self):
        return Block, (self.filters, self.device, self.axes, self.keys)


def run_block(block, *chunks):
    """One output block of ``block.filters`` from the input ``chunks``."""
    filters, axes = block.filters, block.axes
    dev = worker_device(block.device)
    with _lock:
        used_devices.add(dev.id)
    window = _assemble(axes, dict(zip(block.keys, chunks)), chunks[0].dtype)
    with _device_turn(dev):
        if len(filters) == 1:
            # numpy in, numpy out: the library moves the window in and the block home itself
            # (in place on devices that share the host's memory, staged on the others)
            f = filters[0]
            out = f.function(window, *f.args, device=dev, **f.kwargs)
        else:
            out = _chain(filters, axes, window, dev)
    return out[tuple(plan.crop for plan, _ in axes[:out.ndim])]


def _device_turn(dev):
    """What a task holds while it uses ``dev``: on a CPU device (whose driver spreads each
    kernel over every core) and on the Oclgrind simulator (which takes one thread's launches at
    a time), the device alone; other threads meanwhile build their windows and store their
    blocks.  Two tasks' kernels at once on one CPU only contend for its cores: 8192x8192 in
    1024x1024 blocks, Gaussian sigma 4 on PoCL with 2 cores and dask's 2 threads, 0.79 s
    without the turn, about 0.5 s with it.  GPUs overlap one task's transfers with another's
    kernels, so there tasks share the device."""
    if not (dev.simulator or dev.type == "cpu"):
        return contextlib.nullcontext()
    with _lock:
        return _turns.setdefault(dev.id, threading.Lock())


def _chain(filters, axes, window, dev):
    """The filters one after the other on the device: one transfer in, one home."""
    data = _to_device(window, dev)
    for k, f in enumerate(filters):
        for axis, (plan, _) in enumerate(axes):
            index = plan.gathers[k] if k < len(plan.gathers) else None
            if index is not None:
                data = _take(data, index, axis, dev)
        data = f.function(data, *f.args, device=dev, **f.kwargs)
    return data.get()


def _to_device(window, dev):
    """``window`` on the device; where the device shares the host's memory, the window's own
    memory (it lives until the task's last transfer, ``get``, has finished)."""
    import clkit
    if not dev.unified_memory or not window.nbytes:
        return clkit.to_device(window, device=dev)
    import pyopencl as cl
    import pyopencl.array as cl_array
    if window.ctypes.data % 128 or not window.flags.writeable:
        copy = _aligned_empty(window.shape, window.dtype)
        copy[...] = window
        window = copy
    rt = clkit.runtime(dev)
    buf = cl.Buffer(rt.context, cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR,
                    hostbuf=window)
    data = cl_array.Array(rt.queue, window.shape, window.dtype, data=buf)
    data.host_window = window
    return data


def _assemble(axes, chunks, dtype):
    shape = tuple(len(plan.source) for plan, _ in axes)
    first = [pieces for _, pieces in axes]
    if all(len(p) == 1 for p in first):  # one chunk holds the whole window
        key = tuple(p[0][2] for p in first)
        src = tuple(slice(p[0][3], p[0][3] + p[0][1] - p[0][0]) for p in first)
        return np.ascontiguousarray(chunks[key][src], dtype=dtype)
    window = _aligned_empty(shape, dtype)
    for combo in _product(first):
        key = tuple(p[2] for p in combo)
        dst = tuple(slice(p[0], p[1]) for p in combo)
        src = tuple(slice(p[3], p[3] + p[1] - p[0]) for p in combo)
        window[dst] = chunks[key][src]
    return window


def _aligned_empty(shape, dtype, align: int = 128):
    """An empty array whose data starts at a multiple of ``align`` bytes: what drivers need to
    use host memory in place, and what the kernels' widest loads assume."""
    dtype = np.dtype(dtype)
    raw = np.empty(math.prod(shape) * dtype.itemsize + align, np.uint8)
    start = -raw.ctypes.data % align
    return raw[start:start + math.prod(shape) * dtype.itemsize].view(dtype).reshape(shape)


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
