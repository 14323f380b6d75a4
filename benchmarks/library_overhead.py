"""Library call overhead: a clkit.kernels call against raw pyopencl running the same kernels.

    python benchmarks/library_overhead.py [DEVICE] [--size 256|WxH] [--rounds 51] [--calls 100]

For each library function, one call is made first with device arrays and
``out=`` while every kernel launch it makes is recorded (kernel, arguments,
work sizes).  The raw side replays those launches with plain pyopencl: the
same built programs, fresh ``pyopencl.Kernel`` objects with their scalar
types declared, and the library's buffers (masks, row maps, temporaries)
already on the device, so it pays for the enqueues alone.  Each round times
CALLS library calls, then CALLS raw replays, each loop followed by one
``queue.finish()``; the medians over the rounds are compared, with the
kernels' own event time beside them.  Interleaving keeps the two sides under
the same load: on a shared CPU the time per call drifts by more than the
difference measured.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import clkit
import scale  # benchmarks/ is the script's folder, first on sys.path
from clkit import kernels as ck
from clkit._launch.kernel import Kernel, recording
from clkit._build.tiers import tier


def cases(width: int, height: int, rng):
    """(name, function, arrays for the device, further arguments) of each call measured."""
    rgb = rng.integers(0, 256, (height, width, 3), np.uint8)
    flat = rng.random((height, width), dtype=np.float32)
    yield "vector_add", ck.vector_add, (flat, flat), ()
    yield "grayscale", ck.grayscale, (rgb,), ()
    for k in (3, 5, 9):  # the mask stays a numpy array, as users pass it
        yield f"convolve {k}x{k}", ck.convolve, (flat,), (rng.random((k, k)).astype(np.float32),)
    yield "gaussian_blur sigma 2", ck.gaussian_blur, (flat,), (2.0,)


def capture(call):
    """Run ``call()`` and return what each kernel launch it made was called with."""
    seen = []
    original = Kernel.__call__

    def spy(self, *args, **kwargs):
        seen.append((self, args, kwargs))
        return original(self, *args, **kwargs)

    Kernel.__call__ = spy
    try:
        with recording():  # a recorded call goes through Kernel.__call__ (clkit/_launch/kernel.py)
            call()
    finally:
        Kernel.__call__ = original
    return seen


def raw_kernel(knl, dev):
    """A plain pyopencl kernel object of clkit kernel ``knl``'s build, its scalar types
    declared (as a fast hand-written pyopencl program declares them)."""
    raw = cl.Kernel(knl.program.build(dev).program, knl.name)
    raw.set_scalar_arg_dtypes([None if p.pointer or p.width != 1 else p.dtype
                               for p in knl.params(dev)])
    return raw


def sizes(kwargs):
    """(global, local) work sizes of a captured launch, as tuples (local may be None)."""
    gsize, lsize = kwargs["global_size"], kwargs.get("local_size")
    return ((gsize,) if isinstance(gsize, int) else tuple(gsize),
            (lsize,) if isinstance(lsize, int) else lsize)


def raw_replay(seen, rt):
    """A function that enqueues the captured launches with plain pyopencl."""
    launches = []
    for knl, args, kwargs in seen:
        raw = raw_kernel(knl, rt.device)
        values = []
        for a in args:
            if isinstance(a, cl_array.Array):
                values.append(a.base_data)
            elif isinstance(a, np.ndarray):  # pre-allocated once, as a raw program would
                values.append(cl.Buffer(rt.context, cl.mem_flags.READ_WRITE |
                                        cl.mem_flags.COPY_HOST_PTR, hostbuf=a))
            else:
                values.append(a)
        launches.append((raw, kwargs.get("queue") or rt.queue, *sizes(kwargs), values))

    def replay():
        for raw, queue, gsize, lsize, values in launches:
            raw(queue, gsize, lsize, *values)
    return replay


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("device", nargs="?", default=None)
    ap.add_argument("--size", default="256",
                    help="image side in pixels, or WxH (default 256)")
    ap.add_argument("--rounds", type=int, default=51)
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--only", default=None, help="run the cases whose name contains this")
    opts = ap.parse_args(argv)
    dev = clkit.select(opts.device)
    rt = clkit.runtime(dev)
    queue = rt.queue
    rng = np.random.default_rng(0)
    width, _, height = opts.size.lower().partition("x")
    width, height = int(width), int(height or width)

    print(f"{dev}, {width}x{height}, {opts.rounds} rounds of {opts.calls} calls of each "
          "side, interleaved; medians")
    print("wall: per call, the queue finished after each loop; CPU: the calling thread's CPU "
          "time per call (steadier than the wall clock under load)")
    print(f"{'case':22} {'clkit us':>9} {'raw us':>9} {'kernels us':>10} {'clkit/raw':>9} "
          f"{'clkit/kernels':>13} {'CPU clkit':>9} {'CPU raw':>8}")
    for name, fn, arrays, extra in cases(width, height, rng):
        if opts.only and opts.only not in name:
            continue
        args = [clkit.to_device(x, device=dev) for x in arrays] + list(extra)
        with tier("specialised"):  # built now: the loops below run the kernels a loop settles on
            out = fn(*args, device=dev)

        def ours():
            fn(*args, out=out, device=dev)

        seen = capture(ours)
        theirs = raw_replay(seen, rt)
        with recording() as launches:
            ours()
        queue.finish()
        kernel_us = sum(l.kernel_ms for l in launches) * 1e3
        mine, raws = scale.interleaved_us(ours, theirs, opts.rounds, opts.calls, queue, warmup=20)
        (m, mc), (r, rc) = np.median(mine, axis=0), np.median(raws, axis=0)
        print(f"{name:22} {m:9.1f} {r:9.1f} {kernel_us:10.1f} {m / r:9.2f} "
              f"{m / kernel_us:13.2f} {mc:9.1f} {rc:8.1f}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
