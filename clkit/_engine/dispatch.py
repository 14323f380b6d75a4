"""The dispatch layer: every library function runs through :func:`run`.

A library function checks its arguments and describes its work as an
:class:`Operation`: the result's shape and dtype, which input rows a band of
output rows reads, and a *plan* per device and band (the kernels with every
argument that does not change from call to call already made: built
programs, masks and row maps on the device, work sizes).  This module owns
everything else:

- the device: ``device=``, else that of the device-array inputs, else the
  best; ``"all"`` or a list of specs runs bands of rows on several devices
  at once (:mod:`._bands`), in proportion to their measured speed;
- device arrays in: the plan's kernels are enqueued on the device's queue and
  the call returns without waiting (a pooled result when there is no
  ``out=``);
- numpy arrays in: uploaded (wrapped in place on CPU drivers), computed and
  copied home, in tiles when they do not fit the device;
- the plans, made once per (operation, its parameters and shapes, band) and
  kept by the device's runtime (the most recent :data:`MAX_PLANS`);
- at a runtime's first call, the builds later calls will likely want, queued
  ahead (:func:`~clkit._engine.filter.prebuild_generic`).
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
from pyopencl.array import Array

from .._errors import ArgumentValueError
from .._memory import transfer as _transfer
from .._memory import pools as _memory
from .._memory.pinned import result_empty
from .._memory.transfer import aligned_empty
from .._platform.devices import Device, check_process, default_device, select, select_many
from .._platform.runtime import (Runtime, after, runtime, runtime_of_array, simulator_in_use,
                                 simulator_turn)
from . import bands as _bands
from .checks import check_out, check_same_kind
from .filter import prebuild_generic
from .operation import Operation

#: Plans kept; each holds a few small device buffers (masks, row maps).
MAX_PLANS = 256
#: Bytes of data a speed probe moves through a device.
PROBE_BYTES = 8 << 20


def is_multi(device) -> bool:
    """Whether ``device`` asks for several devices (``"all"`` or a list of specs)."""
    return (isinstance(device, str) and device.strip().lower() == "all") or \
        isinstance(device, (list, tuple))


def home_device(name: str, device, arrays) -> Device:
    """The one device to run on: ``device`` if given, else that of a device array, else the best.

    Device-array arguments must all live on that device.
    """
    homes = []
    for a in arrays:
        if isinstance(a, Array):
            rt = runtime_of_array(a)
            if rt is None:
                raise ArgumentValueError(f"{name}: a device array was made in a pyopencl "
                                         "context that clkit did not create; make it with "
                                         "clkit.to_device")
            homes.append(rt.device)
    if device is not None:
        chosen = select(device)
    else:
        chosen = homes[0] if homes else default_device()
    for home in homes:
        if home is not chosen and home != chosen:
            raise ArgumentValueError(f"{name}: a device array lives on {home}, but the work runs "
                                     f"on {chosen}; copy it with clkit.to_device(a.get(), "
                                     "device=...) or pass device= its device")
    return chosen


def _plan(op: Operation, rt: Runtime, r0: int, r1: int):
    """``(input rows, launch)`` of output rows ``[r0, r1)`` on ``rt``: the operation's plan,
    made once per runtime (which keeps the most recent :data:`MAX_PLANS`); a plan with tiers
    (one with a ``choose()``) gives the launch of the tier this call runs."""
    dev = rt.device
    # the device's kind, local memory and fp64 choose kernel variants (and tests change them)
    key = (op.key, dev.type, dev.local_mem, dev.fp64, r0, r1)
    found = rt.memo(_plan, MAX_PLANS).get(key)
    if found is None:
        # the first library call on a runtime queues the builds its later calls will likely
        # want, ahead (the convolution's generic program, its conversions)
        rt.held(prebuild_generic, lambda: prebuild_generic(dev) or True)

        def make():
            plan = op.plan(rt, r0, r1)
            return op.rows(r0, r1), plan, getattr(plan, "choose", None)
        found = rt.memo(_plan, MAX_PLANS).make(key, make)
    rows, launch, choose = found
    return rows, launch if choose is None else choose()


def run(op: Operation, inputs: list, out=None, device=None, on_device=None):
    """Compute ``op`` from ``inputs`` into ``out`` (or a new result) on ``device``.

    Numpy inputs give a numpy result; device arrays give a device array, with
    no transfer when one device runs it.  ``on_device`` says which, for an
    operation without inputs (from its ``out=``).  A call on the Oclgrind
    simulator takes its turn and ends with its work there done
    (:func:`clkit._platform.runtime.simulator_turn`).
    """
    if simulator_in_use():
        simulated = _simulated(device, inputs + [out])
        if simulated:
            with simulator_turn(simulated[0].device):
                result = _run(op, inputs, out, device, on_device)
                for rt in simulated:
                    rt.queue.finish()
            return result
    return _run(op, inputs, out, device, on_device)


def _simulated(device, arrays) -> list:
    """The runtimes of the simulators a call with ``device=`` and these arrays runs on."""
    if is_multi(device):
        devices = select_many(device)
    elif device is not None:
        devices = [select(device)]
    else:
        homes = [runtime_of_array(a) for a in arrays if isinstance(a, Array)]
        devices = [rt.device for rt in homes if rt is not None] or [default_device()]
    return [runtime(d) for d in devices if d.simulator]


def _run(op: Operation, inputs: list, out=None, device=None, on_device=None):
    name = op.name
    if on_device is None:
        on_device = check_same_kind(name, inputs) if inputs else False
    multi = is_multi(device)
    if not op.gathers:
        out = check_out(name, out, op.shape, op.dtype, on_device)
        # (several devices' speed probes compute bands into out before the bands themselves)
        if out is not None and _overlaps(out, inputs, op.elementwise and not multi):
            # the kernels would overwrite input they have yet to read: compute aside, then copy
            result = _run(op, inputs, None, device, on_device)
            if on_device:
                copy_into(out, result)
            else:
                out[...] = result
            return out
    if on_device and not multi:
        rt = _arrays_runtime(inputs + [out]) if device is None else None
        if rt is None:
            rt = runtime(home_device(name, device, inputs + [out]))
        return _run_on_device(op, rt, inputs, out)
    if multi:
        devices = select_many(device)
        home = home_device(name, None, inputs + [out]) if on_device else None
    else:
        home = home_device(name, device, [])
        devices = [home]
    hosts = [_transfer.download(runtime_of_array(x), x) for x in inputs] if on_device else inputs
    if op.gathers:
        results = _run_gathering(op, hosts, devices, multi)
    else:
        result = out if out is not None and not on_device else _numpy_result(op, devices)
        if result.size:
            _run_in_bands(op, hosts, result, devices, multi)
        results = (result,)
    if not on_device:
        return results if op.gathers else results[0]
    rt = runtime(home)
    if op.gathers:
        return tuple(_transfer.upload(rt, r, out=_memory.empty(rt, r.shape, r.dtype)) for r in results)
    return _transfer.upload(rt, result, out=out if out is not None else _memory.empty(rt, op.shape, op.dtype))


def _arrays_runtime(arrays: list) -> Runtime | None:
    """The working runtime every device array (None counts as none) belongs to; None when they
    belong to several, one is lost or clkit did not make one (home_device then decides)."""
    arrays = [x for x in arrays if x is not None]
    rt = runtime_of_array(arrays[0])
    if rt is None or rt.lost is not None:
        return None
    if any(runtime_of_array(x) is not rt for x in arrays[1:]):
        return None
    check_process()
    return rt


def _overlaps(out, inputs: list, elementwise: bool) -> bool:
    """Whether writing ``out`` could change an input before the kernels have read it: it
    shares memory with one, other than being that very input of an elementwise operation
    (whose work-items each read their own elements before writing them)."""
    return any(_shares(x, out) and not (elementwise and _same_view(x, out)) for x in inputs)


def _shares(x, out) -> bool:
    if isinstance(x, Array):
        return _transfer.overlap(x, out)
    return np.may_share_memory(x, out)


def _same_view(x, out) -> bool:
    """Whether two arrays over the same memory are the same elements in the same order."""
    start = (lambda a: a.offset) if isinstance(x, Array) else (lambda a: a.ctypes.data)
    return start(x) == start(out) and x.strides == out.strides and x.shape == out.shape


def _numpy_result(op: Operation, devices) -> np.ndarray:
    """A new numpy result: on a GPU pinned memory (reused from earlier results that are gone),
    into which the result comes by DMA with no staging copy."""
    pinned = result_empty(op.shape, op.dtype, devices)
    return pinned if pinned is not None else aligned_empty(op.shape, op.dtype)


def _run_on_device(op: Operation, rt: Runtime, inputs: list, out):
    """Enqueue the whole operation on one device, for device arrays; no waiting.

    It runs on the runtime's queue (a lane's, inside :func:`clkit.map`), after the work
    already enqueued on the arrays' own queues, and work enqueued later on ``out``'s queue
    runs after it: each array's queue is its order, as in pyopencl.
    """
    queue = rt.queue
    srcs = [_memory.contiguous_device(x) for x in inputs]
    foreign = [x for x in srcs if x.queue is not queue and x.queue is not None]
    for x in foreign:
        after(queue, x.queue)
    if out is not None:
        after(queue, out.queue)
    if op.gathers:
        if op.shape[0] == 0:
            results = tuple(_transfer.upload(rt, r, out=_memory.empty(rt, r.shape, r.dtype))
                            for r in op.empty())
        else:
            results = _plan(op, rt, 0, op.shape[0])[1](queue, srcs, None)
    else:
        direct = out is not None and out.offset == 0
        results = out if direct else _memory.empty(rt, op.shape, op.dtype)
        if results.size:
            _plan(op, rt, 0, op.shape[0])[1](queue, srcs, results)
        if out is not None and not direct:
            copy_into(out, results)
            results = out
        elif out is not None:
            after(out.queue, queue)
    if foreign:
        # an input of another queue's pool would go back to it, and be written there, while
        # these kernels still read it: each stays until they are done
        rt.in_use.keep(cl.enqueue_marker(queue), *(x.base_data for x in foreign))
    return results


def copy_into(out, src) -> None:
    """``out[...] = src`` on ``src``'s queue, after the work already enqueued on ``out``'s, and
    what is enqueued later on ``out``'s queue runs after the copy: a pooled ``src`` goes back
    to the pool of its own queue, whose order puts its reuse after the copy too."""
    if out.queue is src.queue or out.queue is None:
        out[...] = src
        return
    after(src.queue, out.queue)
    out.with_queue(src.queue)[...] = src
    after(out.queue, src.queue)


def _upload(rt: Runtime, host: np.ndarray, queue, align: int):
    """A numpy input's rows on the device: used in place where the device shares the host's
    memory, else copied into a pooled buffer (see :func:`_memory.band`)."""
    out = None if rt.device.unified_memory else _memory.empty(rt, host.shape, host.dtype, queue)
    return _transfer.upload(rt, host, queue, out=out, align=align)


def _take(host: np.ndarray, rows):
    if isinstance(rows, tuple):
        lo, hi = rows
        return host if lo == 0 and hi == host.shape[0] else host[lo:hi]
    contiguous = rows[-1] - rows[0] + 1 == rows.size
    return host[rows[0]:rows[-1] + 1] if contiguous else host[rows]


def _sizes(op: Operation, hosts, result_row: int):
    """(bytes per output row on a device, bytes per halo row) of a tile."""
    n = max(1, op.shape[0])
    in_row = sum(x.nbytes for x in hosts) // n
    halo_row = in_row + op.scratch_row_bytes
    return halo_row + result_row, halo_row


def _bands_of(op: Operation, devices, multi, row_bytes, halo_row, band, measured=lambda: None):
    """Run ``band`` over the operation's rows: whole, tiled, or across devices.

    ``measured()`` is called once the speed probes (which run bands too) are done.
    """
    n = op.shape[0]

    def max_rows(dev):  # tiles small enough for the device
        return _bands.tile_rows(dev, row_bytes, op.halo, halo_row, what=op.what)

    if not multi and max_rows(devices[0]) >= n:
        rt = runtime(devices[0])
        band(rt, rt.queue, 0, n)
        return

    def probe(dev):
        r0, r1 = op.probe_band(max(1, min(n, PROBE_BYTES // max(1, row_bytes))))
        band(runtime(dev), runtime(dev).queue, r0, r1)
        return r1 - r0

    plan = _bands.proportional(devices, n, op.speed_key, probe)
    measured()
    _bands.run(plan, band, max_rows)


def _run_in_bands(op: Operation, hosts, result, devices, multi):
    def band(rt, queue, r0, r1):
        rows, launch = _plan(op, rt, r0, r1)
        with _memory.band(queue):
            # srcs may wrap host memory (no copy): they live until the band is home
            srcs = [_upload(rt, _take(x, rows), queue, op.align) for x in hosts]
            part = result[r0:r1]
            dst = _memory.device_output(rt, part, part.shape, op.dtype, queue, align=op.align)
            launch(queue, srcs, dst)
            _transfer.download(rt, dst, part)

    row_bytes, halo_row = _sizes(op, hosts, result[:1].nbytes)
    _bands_of(op, devices, multi, row_bytes, halo_row, band)


def _run_gathering(op: Operation, hosts, devices, multi) -> tuple:
    if op.shape[0] == 0:
        return op.empty()
    pieces = {}

    def band(rt, queue, r0, r1):
        rows, launch = _plan(op, rt, r0, r1)
        with _memory.band(queue):
            srcs = [_upload(rt, _take(x, rows), queue, op.align) for x in hosts]
            pieces[r0] = tuple(_transfer.download(rt, r) for r in launch(queue, srcs, None))

    row_bytes, halo_row = _sizes(op, hosts, op.result_row_bytes)
    _bands_of(op, devices, multi, row_bytes, halo_row, band, measured=pieces.clear)
    ordered = [pieces[r0] for r0 in sorted(pieces)]
    return tuple(np.concatenate(parts) for parts in zip(*ordered))


def rows_needed(op: Operation, r0: int, r1: int) -> np.ndarray:
    """The input rows that output rows ``[r0, r1)`` of ``op`` read (for MPI ranks)."""
    rows = op.rows(r0, r1)
    return np.arange(*rows) if isinstance(rows, tuple) else rows


def run_rows(op: Operation, rows_data: list, r0: int, r1: int, device) -> np.ndarray:
    """Output rows ``[r0, r1)`` of ``op`` on one device, from ``rows_needed``'s input rows."""
    rt = runtime(device)
    part = aligned_empty((r1 - r0,) + tuple(op.shape[1:]), op.dtype)
    if part.size:
        _, launch = _plan(op, rt, r0, r1)
        srcs = [_upload(rt, x, rt.queue, op.align) for x in rows_data]
        dst = _memory.device_output(rt, part, part.shape, op.dtype, align=op.align)
        launch(rt.queue, srcs, dst)
        _transfer.download(rt, dst, part)
    return part
