"""Numpy arrays to a GPU and back: ``clkit.to_device``, ``.get()``, the driver's own ways.

    python benchmarks/uploads.py [--device gpu] [--ways]

``clkit.to_device`` of fresh numpy arrays (filled before the clock starts, as new data is) of
100, 8 and 2 MiB, one after another: GB/s and ms per array.  Then a 100 MiB device array home:
pyopencl's ``.get()`` into a new numpy array, a copy into a new numpy array enqueued without
blocking and waited for (a user kernel's copy back), ``.get(ary=...)`` into a pinned array
(:func:`clkit.pinned_like`), and clkit's staged download into a new numpy array (what the
library does for a numpy result it cannot make pinned).  With ``--ways``, the ways a numpy
array reaches the device without clkit's staging, in plain pyopencl: the driver's copy from
pageable memory, a ``USE_HOST_PTR`` buffer over the array and a copy from it, and the same
after migrating the buffer to the device; 24 fresh 7680x4320 RGB images spread over 1, 2, 4
and 8 threads, each thread with a queue and a device buffer of its own: aggregate GB/s.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl

import clkit

MF = cl.mem_flags
IMAGE = 7680 * 4320 * 3


def fresh(count: int, size: int) -> list:
    return [np.full(size, i % 256, np.uint8) for i in range(count)]


def to_device_rates(device) -> None:
    clkit.to_device(np.zeros(1 << 20, np.uint8), device=device)
    for size in (100 << 20, 8 << 20, 2 << 20):
        count = max(8, (1200 << 20) // size)
        arrays = fresh(count, size)
        start = time.perf_counter()
        for a in arrays:
            clkit.to_device(a, device=device)
        seconds = time.perf_counter() - start
        print(f"to_device {size >> 20} MiB x {count}: {count * size / seconds / 1e9:.1f} GB/s, "
              f"{seconds / count * 1e3:.2f} ms each", flush=True)


def download_rates(device, rounds: int = 12) -> None:
    from clkit._memory import transfer as _transfer
    host = np.full(100 << 20, 7, np.uint8)
    arr = clkit.to_device(host, device=device)
    pinned = clkit.pinned_like(host, device=device)
    rt = clkit.runtime(device)
    queue = arr.queue

    def enqueued():  # a user kernel's copy back: enqueued without blocking, waited for
        back = np.empty_like(host)
        cl.enqueue_copy(queue, back, arr.base_data, is_blocking=False).wait()
        return back

    ways = {"get()": lambda: arr.get(),
            "enqueued copy, waited for": enqueued,
            "get(ary=pinned)": lambda: arr.get(ary=pinned),
            "staged download": lambda: _transfer.download(rt, arr)}
    for name, way in ways.items():
        way()
        start = time.perf_counter()
        for _ in range(rounds):
            got = way()
        seconds = (time.perf_counter() - start) / rounds
        assert got[-1] == 7
        print(f"100 MiB home, {name}: {host.nbytes / seconds / 1e9:.1f} GB/s, "
              f"{seconds * 1e3:.2f} ms", flush=True)


def pageable(ctx, queue, host, dst):
    cl.enqueue_copy(queue, dst, host, is_blocking=True)


def host_ptr(ctx, queue, host, dst):
    buf = cl.Buffer(ctx, MF.READ_ONLY | MF.USE_HOST_PTR, hostbuf=host)
    cl.enqueue_copy(queue, dst, buf).wait()
    buf.release()


def host_ptr_migrated(ctx, queue, host, dst):
    buf = cl.Buffer(ctx, MF.READ_ONLY | MF.USE_HOST_PTR, hostbuf=host)
    cl.enqueue_migrate_mem_objects(queue, [buf]).wait()
    cl.enqueue_copy(queue, dst, buf).wait()
    buf.release()


def way_rate(ctx, way, threads: int, count: int = 24) -> float:
    images = fresh(count, IMAGE)
    queues = [cl.CommandQueue(ctx) for _ in range(threads)]
    targets = [cl.Buffer(ctx, MF.READ_WRITE, IMAGE) for _ in range(threads)]
    for q, t in zip(queues, targets):
        cl.enqueue_copy(q, t, images[0][:1 << 20], is_blocking=True)

    def lane(k):
        for i in range(k, count, threads):
            way(ctx, queues[k], images[i], targets[k])
    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lane, range(threads)))
    return count * IMAGE / (time.perf_counter() - start) / 1e9


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="gpu")
    parser.add_argument("--ways", action="store_true", help="also the driver's own ways")
    args = parser.parse_args(argv)
    device = clkit.select(args.device)
    print(device, flush=True)
    to_device_rates(device)
    download_rates(device)
    if args.ways:
        ctx = cl.Context([device.cl_device])
        for way in (pageable, host_ptr, host_ptr_migrated):
            for threads in (1, 2, 4, 8):
                print(f"{way.__name__}, {threads} threads: {way_rate(ctx, way, threads):.1f} GB/s",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
