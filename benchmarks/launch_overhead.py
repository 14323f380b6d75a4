"""Launch overhead, clkit against raw pyopencl, with the two variants interleaved.

    python benchmarks/launch_overhead.py [DEVICE] [--rounds 101] [--calls 200] [--trace]

The pytest-benchmark groups of test_launch_overhead.py run one variant after
the other; on a CPU driver the cost of waking its threads drifts from minute
to minute by more than the difference being measured.  Here each round times
CALLS launches of clkit, then CALLS of raw pyopencl (same kernel source, same
queue, device arrays, scalar types declared as fast pyopencl code does), and
the medians over the rounds are compared.  Two pairs: waiting for each kernel
(clkit's default; raw: ``.wait()`` on the event) and enqueueing only
(``wait=False``; raw: the call alone, the queue finished after each round).
Each also reports the calling thread's CPU time per call (``time.thread_time``), which
other processes on the machine disturb far less than the wall time. Last, clkit's own work
per call alone: the enqueue replaced by a stub.
``--trace`` runs it all inside ``clkit.trace()``: the cost of recording each launch.
"""

import argparse

import numpy as np
import pyopencl as cl

import clkit
import scale  # benchmarks/ is the script's folder, first on sys.path
from clkit._launch import kernel as _launch

SRC = "__kernel void nothing(__global float* a, __global const float* b, const uint n) { }"
N = 1 << 16


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("device", nargs="?", default=None)
    ap.add_argument("--rounds", type=int, default=101)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--trace", action="store_true",
                    help="measure inside clkit.trace(), which records every clkit launch")
    opts = ap.parse_args(argv)
    if not opts.trace:
        measure(opts)
        return
    with clkit.trace(limit=1 << 20) as t:
        measure(opts)
    print(f"inside clkit.trace(): {len(t.events)} launches recorded, {t.dropped} dropped")


def measure(opts):
    dev = clkit.select(opts.device)
    rt = clkit.runtime(dev)
    queue = rt.queue
    a = clkit.to_device(np.zeros(N, np.float32), device=dev)
    b = clkit.to_device(np.zeros(N, np.float32), device=dev)
    knl = clkit.Program.from_source(SRC, device=dev).nothing
    raw = cl.Kernel(cl.Program(rt.context, SRC).build(), "nothing")
    raw.set_scalar_arg_dtypes([None, None, np.uint32])

    pairs = {
        "wait": (lambda: knl(a, b, N),
                 lambda: raw(queue, (N,), None, a.data, b.data, N).wait()),
        "enqueue only": (lambda: knl(a, b, N, wait=False),
                         lambda: raw(queue, (N,), None, a.data, b.data, N)),
    }

    def per_call_us(fn):
        return scale.per_call_us(fn, opts.calls, queue)

    print(f"{dev}, {opts.rounds} rounds of {opts.calls} calls of each, interleaved; medians")
    print("wall: per call, the queue finished after each round; host CPU: the calling thread's "
          "CPU time per call (steady under load)")
    print(f"{'variant':14} {'clkit us':>9} {'raw us':>9} {'ratio':>6} {'ratio/round':>12} "
          f"{'CPU clkit':>10} {'CPU raw':>8} {'ratio':>6}")
    for name, (ours, theirs) in pairs.items():
        mine, raws = scale.interleaved_us(ours, theirs, opts.rounds, opts.calls, queue, warmup=50)
        (wall, cpu), (raw_wall, raw_cpu) = mine.T, raws.T
        print(f"{name:14} {np.median(wall):9.2f} {np.median(raw_wall):9.2f} "
              f"{np.median(wall) / np.median(raw_wall):6.2f} {np.median(wall / raw_wall):12.2f} "
              f"{np.median(cpu):10.2f} {np.median(raw_cpu):8.2f} "
              f"{np.median(cpu) / np.median(raw_cpu):6.2f}")

    enqueue, _launch._enqueue = _launch._enqueue, lambda *args: None
    try:
        alone = np.median([per_call_us(lambda: knl(a, b, N, wait=False))[1]
                           for _ in range(opts.rounds)])
    finally:
        _launch._enqueue = enqueue
    print(f"clkit's own work per call (the enqueue stubbed out, CPU time): {alone:.2f} us")


if __name__ == "__main__":
    main()
