"""The two tiers of convolve and gaussian_blur side by side, and what a background build costs.

    python benchmarks/tiers.py [--device SPEC] [--size WxH] [--rounds 5] [--contention]

For each mask (general 2-D masks of several sizes, separable boxes, Gaussian
sigmas) on a float32 image (3840x2160 by default): the median time of a whole
call with the generic kernel and with the specialised one, built beforehand,
rounds interleaved, and their ratio.

``--contention``: the time of a loop of calls of an already-built variant
(the foreground) alone, while the background thread compiles other variants
at its usual lowest priority, and while the same builds run at normal
priority, interleaved; the ratios to "alone" are what a background build costs
the caller.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time

import numpy as np

import clkit
from clkit._build import helper as _helper, tiers as _tiers
from clkit.kernels import convolve, gaussian_blur


def _cases(rng):
    for n in (3, 5, 7, 9, 15):
        yield f"convolve {n}x{n} (2-D)", convolve, rng.standard_normal((n, n)) / n ** 2
    for n in (5, 15):
        yield f"convolve box {n} (separable)", convolve, np.ones((n, n)) / n ** 2
    for s in (1.0, 2.0, 4.0):
        yield f"gaussian_blur sigma {s:g}", gaussian_blur, s


def _time(fn, image, arg, device) -> float:
    start = time.perf_counter()
    fn(image, arg, device=device)
    return (time.perf_counter() - start) * 1e3


def compare(opts, device, image):
    rng = np.random.default_rng(1)
    print(f"{device}, {image.shape[1]}x{image.shape[0]} float32, median of {opts.rounds} "
          "interleaved rounds, whole call (ms)")
    print(f"{'case':32} {'generic':>9} {'specialised':>12} {'ratio':>6}")
    for label, fn, arg in _cases(rng):
        for name in ("generic", "specialised"):  # build both first
            with _tiers.tier(name):
                fn(image, arg, device=device)
        times = {"generic": [], "specialised": []}
        for _ in range(opts.rounds):
            for name in times:
                with _tiers.tier(name):
                    times[name].append(_time(fn, image, arg, device))
        g, s = (statistics.median(times[k]) for k in ("generic", "specialised"))
        print(f"{label:32} {g:9.1f} {s:12.1f} {g / s:6.2f}", flush=True)


def contention(opts, device, image):
    """Foreground loop time alone, with low-priority background builds, with normal ones."""
    mask = np.ones((5, 5)) / 25
    with _tiers.tier("specialised"):
        convolve(image, mask, device=device)

    def loop():
        start = time.perf_counter()
        with _tiers.tier("specialised"):
            for _ in range(20):
                convolve(image, mask, device=device)
        return time.perf_counter() - start

    sizes = iter(range(30, 400))

    def builds(low: bool, stop: threading.Event):
        if low:
            _helper.lower_priority()
        while not stop.is_set():  # new variants (mask sizes), each a full compile
            n = next(sizes)
            prg = clkit.Program.from_source(
                f"__kernel void k{n}(__global float* a) {{ float s = 0; "
                f"for (int i = 0; i < {n}; ++i) s += a[i] * a[i + 1]; a[0] = s; }}")
            prg.build(device)

    results = {"alone": [], "background, lowest priority": [], "background, normal priority": []}
    for _ in range(opts.rounds):
        for name in results:
            stop = threading.Event()
            worker = None
            if name != "alone":
                worker = threading.Thread(target=builds, args=(name.endswith("lowest priority"),
                                                               stop))
                worker.start()
                time.sleep(0.2)
            results[name].append(loop())
            stop.set()
            if worker:
                worker.join()
    alone = statistics.median(results["alone"])
    print(f"\nforeground: 20 calls of convolve 5x5 (specialised) on {image.shape[1]}x"
          f"{image.shape[0]}, median of {opts.rounds} rounds")
    for name, t in results.items():
        m = statistics.median(t)
        print(f"  {name:30} {m:6.2f} s  {m / alone:5.2f}x")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None)
    ap.add_argument("--size", default="3840x2160")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--contention", action="store_true")
    opts = ap.parse_args(argv)
    w, h = (int(v) for v in opts.size.lower().split("x"))
    device = clkit.select(opts.device)
    image = np.random.default_rng(0).random((h, w), dtype=np.float32)
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    if opts.contention:
        contention(opts, device, image)
    else:
        compare(opts, device, image)


if __name__ == "__main__":
    main()
