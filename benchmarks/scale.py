"""Scale figures: two devices against one, and the streamed path against the in-memory one.

    python benchmarks/scale.py            # on this machine's CPU driver (PoCL)

Two devices: the same process cannot add a PoCL device once the driver has
loaded, so the two-device half runs in a child process with
POCL_DEVICES="<driver> <driver>" and compares device=[first] with device="all"
there.  Streamed: the same device, once with the image in one piece and once
with the device reporting a 64 MiB allocation limit, which makes clkit stream
the image through it in tiles (two queues, halos included).  numpy in, numpy
out; medians of 5 runs after a warm-up.

The timing helpers below serve the other scripts of benchmarks/ too.
"""

import os
import subprocess
import sys
import time

import numpy as np

import clkit
from clkit import kernels as ck
from clkit._build import tiers as _tiers


def median_ms(fn, n=5):
    fn()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3


def per_call_us(fn, calls, queue):
    """(wall, this thread's CPU time) per call of ``fn``, in microseconds, ``calls`` calls in a
    loop and ``queue`` finished after it (the CPU time stops before the finish)."""
    c0, t0 = time.thread_time(), time.perf_counter()
    for _ in range(calls):
        fn()
    c1 = time.thread_time()
    queue.finish()
    return ((time.perf_counter() - t0) / calls * 1e6, (c1 - c0) / calls * 1e6)


def interleaved_us(ours, theirs, rounds, calls, queue, warmup):
    """:func:`per_call_us` of ``ours`` and of ``theirs`` taken in turn, ``rounds`` times each,
    after ``warmup`` calls of both: two arrays of (wall, CPU time) rows, one row a round."""
    for _ in range(warmup):
        ours(), theirs()
    queue.finish()
    mine, raws = [], []
    for _ in range(rounds):
        mine.append(per_call_us(ours, calls, queue))
        raws.append(per_call_us(theirs, calls, queue))
    return np.array(mine), np.array(raws)


def kernel_ms(fn, queue, repeat):
    """Median over ``repeat`` runs of the summed event times of the kernels ``fn`` launches
    (``queue`` finished after each), after one run as a warm-up and the background builds it
    queued: the kernels a loop of such calls settles on."""
    fn()
    queue.finish()
    _tiers.wait_idle()
    times = []
    for _ in range(repeat):
        with clkit.trace() as recorded:
            fn()
        queue.finish()
        times.append(sum(e["end_ms"] - e["start_ms"] for e in recorded.events
                         if e["kind"] == "kernel"))
    return float(np.median(times))


def cases(device):
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (4320, 7680, 3), dtype=np.uint8)
    image = rng.random((4320, 7680), dtype=np.float32)
    mask = rng.random((5, 5)).astype(np.float32)
    return [("grayscale 7680x4320 uint8", lambda d: ck.grayscale(rgb, device=d)),
            ("convolve 5x5 7680x4320 float32", lambda d: ck.convolve(image, mask, device=d))]


def two_devices():
    devices = [d for d in clkit.devices() if not d.simulator]
    print(f"two devices: {', '.join(str(d) for d in devices)}")
    for name, fn in cases(devices[0]):
        one = median_ms(lambda: fn([devices[0]]))
        both = median_ms(lambda: fn("all"))
        print(f"  {name:32s} one {one:8.1f} ms   two {both:8.1f} ms   speed-up {one / both:.2f}x")


def streamed():
    device = clkit.select("cpu")
    print(f"streamed against in-memory on {device}")
    for name, fn in cases(device):
        whole = median_ms(lambda: fn(device))
        saved = device.max_alloc, device.global_mem
        object.__setattr__(device, "max_alloc", 64 << 20)
        object.__setattr__(device, "global_mem", 512 << 20)
        try:
            tiled = median_ms(lambda: fn(device))
        finally:
            object.__setattr__(device, "max_alloc", saved[0])
            object.__setattr__(device, "global_mem", saved[1])
        print(f"  {name:32s} in memory {whole:8.1f} ms   streamed {tiled:8.1f} ms   "
              f"throughput {whole / tiled:.2f}x of in-memory")


if __name__ == "__main__":
    if os.environ.get("CLKIT_SCALE_CHILD"):
        two_devices()
        sys.exit(0)
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), f"load {os.getloadavg()[0]:.2f}")
    streamed()
    pocl = [d for d in clkit.devices() if d.short_platform == "pocl"]
    name = "pthread" if pocl and pocl[0].driver.split(".")[0] in ("1", "2", "3") else "cpu"
    env = dict(os.environ, CLKIT_SCALE_CHILD="1", POCL_DEVICES=f"{name} {name}",
               CLKIT_VISIBLE_DEVICES="pocl")
    subprocess.run([sys.executable, __file__], env=env, check=True)
