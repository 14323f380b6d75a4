"""Work in row bands: several devices at once, and inputs larger than a device.

An operation that can compute any band of output rows ``[r0, r1)`` from the
input rows it needs (with a halo where it reads neighbours) is run here as
a set of bands:

- across devices, in proportion to each device's measured speed for that
  operation (measured once per operation and device, remembered for the
  process), all devices working at once;
- within a device, in tiles small enough for its memory; on a device with memory of its
  own two tiles in flight on two queues, so that one tile's transfers overlap the other's
  kernels.

``band(rt, queue, r0, r1)`` does one band's whole job: upload what it
needs, enqueue the kernels, and bring its rows of the result home.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._errors import OutOfDeviceMemoryError
from .._platform.devices import Device, turns
from .._platform.runtime import Runtime, runtime

QUEUES_PER_DEVICE = 2
_speeds: dict = {}  # (operation's speed key, device) -> rows per second: the device's, kept
_speeds_lock = threading.Lock()


def queues(rt: Runtime, n: int = QUEUES_PER_DEVICE) -> list:
    """``n`` extra in-order queues of a device, made once.

    In a lane of :func:`clkit.map`, the lane's own queue only: the lanes
    already overlap one image's transfers with another's kernels.
    """
    if rt.queue is not rt.own_queue:
        return [rt.queue]
    have = rt.held(queues, list)  # the runtime's: a lost context's queues go with it
    with _speeds_lock:
        while len(have) < n:
            have.append(rt.new_queue())
        return have[:n]


def speed(key, device: Device, probe) -> float:
    """Rows per second of operation ``key`` on ``device``, measured once.

    ``probe(device)`` runs the operation on a sample and returns how many rows
    it computed; it runs twice, the first time to compile and warm up.
    """
    cached = _speeds.get((key, device))
    if cached is not None:
        return cached
    probe(device)
    start = time.perf_counter()
    rows = probe(device)
    value = rows / max(time.perf_counter() - start, 1e-9)
    with _speeds_lock:
        _speeds[(key, device)] = value
    return value


def split(n: int, weights) -> list[tuple[int, int]]:
    """Cut ``[0, n)`` into consecutive bands in proportion to ``weights``.

    Bands may be empty when there are fewer rows than devices.
    """
    weights = np.asarray(weights, dtype=np.float64)
    edges = np.rint(np.concatenate([[0.0], np.cumsum(weights)]) / weights.sum() * n)
    edges = edges.astype(np.int64)
    edges[-1] = n
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


def tiles(r0: int, r1: int, max_rows: int) -> list[tuple[int, int]]:
    """Cut ``[r0, r1)`` into tiles of at most ``max_rows`` rows, about equal in size."""
    if r1 <= r0:
        return []
    count = -(-(r1 - r0) // max(1, max_rows))
    return [(r0 + (r1 - r0) * i // count, r0 + (r1 - r0) * (i + 1) // count)
            for i in range(count)]


def tile_rows(device: Device, row_bytes: int, halo_rows: int = 0, halo_row_bytes: int = 0,
              what: str = "input") -> int:
    """The most output rows of a tile that fit a device comfortably.

    ``row_bytes`` is what one output row needs on the device (its input row,
    temporaries and output together), ``halo_rows`` extra input rows of
    ``halo_row_bytes`` each come with every tile.  Each buffer must stay
    under the device's max allocation, and the tiles in flight under an
    eighth of its memory each.
    """
    budget = min(device.max_alloc, device.global_mem // (4 * QUEUES_PER_DEVICE))
    rows = (budget - halo_rows * halo_row_bytes) // max(1, row_bytes)
    if rows < 1:
        need = row_bytes + halo_rows * halo_row_bytes
        raise OutOfDeviceMemoryError(
            f"even one row of the {what} ({need} bytes with its halo) does not fit in "
            f"{device} (a tile may use {budget} bytes: max allocation {device.max_alloc}, "
            f"memory {device.global_mem})")
    return rows


def run(plan: list[tuple[Device, int, int]], band, max_rows) -> None:
    """Run every band of ``plan`` (device, r0, r1), tiled, all devices at once.

    ``max_rows(device)`` bounds a tile's rows on that device.  The first
    error stops the remaining tiles and is raised.
    """
    work = []
    for device, r0, r1 in plan:
        rt = runtime(device)
        # Two queues overlap one tile's transfers with another's kernels; a device that shares
        # the host's memory has no transfers to overlap, and each kernel uses all its cores.
        # (Oclgrind also aborts when two threads run kernels at once.)
        qs = queues(rt, 1 if device.unified_memory or device.simulator else QUEUES_PER_DEVICE)
        for i, (a, b) in enumerate(tiles(r0, r1, max_rows(device))):
            work.append((rt, qs[i % len(qs)], a, b))
    if len(work) == 1:
        rt, queue, a, b = work[0]
        band(rt, queue, a, b)
        return
    # One worker per queue: a queue's tiles run in order, the queues of a device overlap.
    lanes: dict = {}
    for rt, queue, a, b in work:
        lanes.setdefault(id(queue), []).append((rt, queue, a, b))
    failed = threading.Event()
    # PoCL 4 and 5 abort when one kernel runs on two of their devices at once with unequal bands
    together = turns([device for device, _, _ in plan])

    def lane(items):
        for rt, queue, a, b in items:
            if failed.is_set():
                return
            try:
                with together:
                    band(rt, queue, a, b)
            except BaseException:
                failed.set()
                raise

    # With the simulator in the plan every lane runs on this thread, one after another:
    # Oclgrind's uninitialised-value check (OCLGRIND_UNINITIALIZED, on under `clkit check`)
    # keeps per-thread state that only the thread that made the context has, and another
    # driver compiling in a second thread beside Oclgrind's own clang crashes the process.
    simulated = any(items[0][0].device.simulator for items in lanes.values())
    here = list(lanes.values()) if simulated else []
    away = [] if simulated else list(lanes.values())
    errors = []
    with ThreadPoolExecutor(max_workers=max(1, len(away))) as pool:
        futures = [pool.submit(lane, items) for items in away]
        for items in here:
            try:
                lane(items)
            except BaseException as exc:  # raised below, once the other lanes have stopped
                errors.append(exc)
    errors += [f.exception() for f in futures if f.exception() is not None]
    if errors:
        raise errors[0]


def proportional(devices: list[Device], n: int, key, probe) -> list[tuple[Device, int, int]]:
    """Bands of ``n`` rows for ``devices``, in proportion to their measured speed."""
    if len(devices) == 1:
        return [(devices[0], 0, n)]
    weights = [speed(key, d, probe) for d in devices]
    return [(d, a, b) for d, (a, b) in zip(devices, split(n, weights))]
