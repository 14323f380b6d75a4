"""A numpy ``grayscale`` call on a CPU driver against plain pyopencl, with new and kept buffers.

    python benchmarks/host_buffers.py [DEVICE] [--size 3840x2160] [--calls 41] [--rounds 2]

On a device that shares memory with the host, a call with numpy arrays wraps
them in ``USE_HOST_PTR`` buffers and maps the result.  This times, per call,
with the same arrays in each round (medians):

- plain pyopencl with the kernel, scalar arguments and work sizes a library
  call launches (recorded from one), two new buffers over the arrays each
  call (what any caller taking numpy arrays makes), the launch, a map and
  unmap of the result, one wait;
- the same with two buffers made once and kept;
- ``clkit.kernels.grayscale(rgb, out=gray)``.

The difference between the first two is what a new buffer costs the driver.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pyopencl as cl

import clkit
from clkit.kernels import grayscale
from library_overhead import capture, raw_kernel, sizes  # benchmarks/: first on sys.path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("device", nargs="?", default="cpu")
    ap.add_argument("--size", default="3840x2160")
    ap.add_argument("--calls", type=int, default=41)
    ap.add_argument("--rounds", type=int, default=2)
    opts = ap.parse_args(argv)
    dev = clkit.select(opts.device)
    if not dev.unified_memory:
        raise SystemExit(f"{dev} does not share memory with the host: numpy arrays are copied "
                         "there, not wrapped")
    width, height = (int(v) for v in opts.size.lower().split("x"))
    rt = clkit.runtime(dev)
    queue = rt.own_queue
    n = width * height
    rgb = clkit.pinned_empty((height, width, 3), np.uint8, device=dev)
    rgb[...] = np.random.default_rng(0).integers(0, 256, rgb.shape, np.uint8)
    gray = clkit.pinned_empty((height, width), np.uint8, device=dev)
    (knl, args, kwargs), = capture(lambda: grayscale(rgb, out=gray, device=dev))
    kernel, scalars, (gsize, lsize) = raw_kernel(knl, dev), args[2:], sizes(kwargs)
    flags = cl.mem_flags

    def buffers():
        return (cl.Buffer(rt.context, flags.READ_ONLY | flags.USE_HOST_PTR, hostbuf=rgb),
                cl.Buffer(rt.context, flags.WRITE_ONLY | flags.USE_HOST_PTR, hostbuf=gray))

    kept = buffers()

    def plain(src, dst):
        kernel(queue, gsize, lsize, src, dst, *scalars)
        mapped, _ = cl.enqueue_map_buffer(queue, dst, cl.map_flags.READ, 0, (n,), np.uint8,
                                          is_blocking=False)
        mapped.base.release(queue)
        queue.finish()

    sides = (("plain pyopencl, new buffers", lambda: plain(*buffers())),
             ("plain pyopencl, kept buffers", lambda: plain(*kept)),
             ("clkit grayscale(out=)", lambda: grayscale(rgb, out=gray, device=dev)))
    want = None
    print(f"{dev}, {width}x{height} RGB uint8, {opts.calls} calls a side; medians")
    for rnd in range(opts.rounds):
        for name, call in sides:
            for _ in range(5):
                call()
            times = []
            for _ in range(opts.calls):
                t0 = time.perf_counter()
                call()
                times.append(time.perf_counter() - t0)
            got = gray.copy()
            if want is None:
                want = got
            assert np.array_equal(got, want), name
            print(f"round {rnd + 1}: {name:30} {np.median(times) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
