"""clkit.ndimage against cupyx.scipy.ndimage on device arrays, every filter, warm.

Both libraries get an array already on the GPU and give one back; each timing is one call
and a wait for the device (``queue.finish()`` for clkit, ``deviceSynchronize()`` for CuPy).
Each round times a burst of calls of each library in turn (after one untimed call, which
pays for the switch between the two drivers' contexts); the table gives each one's median and
clkit's speed-up over cupyx, beside the device time of clkit's kernels in one traced call
(``kernels_ms``: what the call costs beyond them is host work and launch latency). Both
libraries' results are checked against scipy.ndimage's before timing (exact for integer
results, a float32 rounding tolerance otherwise); a case where one of them differs is
reported, and marked in the table.

    python benchmarks/ndimage_vs_cupyx.py [--device gpu] [--size 7680x4320] [--rounds 7]
        [--only NAME ...] [--json FILE]
    python benchmarks/ndimage_vs_cupyx.py --render FILE.json   # writes FILE.md, the table
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import scipy.ndimage as sn

import clkit
from clkit import ndimage as cn

from kept import write_table


def cases(h, w, rng):
    f32 = rng.random((h, w), dtype=np.float32)
    u8 = rng.integers(0, 256, (h, w), dtype=np.uint8)
    vol = rng.random((128, 512, 512), dtype=np.float32)
    w5 = rng.random((5, 5)).astype(np.float32)
    w9 = rng.random(9).astype(np.float32)
    cross = np.array([[0, 0, 1, 0, 0], [0, 1, 1, 1, 0], [1, 1, 1, 1, 1],
                      [0, 1, 1, 1, 0], [0, 0, 1, 0, 0]], bool)
    return [
        # name, data, call(module, array, weights to the module's arrays)
        ("correlate 5x5 float32", f32, lambda m, x, a: m.correlate(x, a(w5))),
        ("convolve 5x5 float32", f32, lambda m, x, a: m.convolve(x, a(w5), mode="constant")),
        ("correlate1d 9 axis 0 float32", f32, lambda m, x, a: m.correlate1d(x, a(w9), axis=0)),
        ("convolve1d 9 axis 1 float32", f32, lambda m, x, a: m.convolve1d(x, a(w9), axis=1)),
        ("gaussian_filter sigma 2 float32", f32, lambda m, x, a: m.gaussian_filter(x, 2.0)),
        ("gaussian_filter sigma 2 uint8", u8, lambda m, x, a: m.gaussian_filter(x, 2.0)),
        ("gaussian_filter sigma 2 3-D float32", vol, lambda m, x, a: m.gaussian_filter(x, 2.0)),
        ("gaussian_filter1d sigma 4 order 1", f32,
         lambda m, x, a: m.gaussian_filter1d(x, 4.0, order=1)),
        ("uniform_filter 5 float32", f32, lambda m, x, a: m.uniform_filter(x, 5)),
        ("uniform_filter1d 9 axis 0 uint8", u8, lambda m, x, a: m.uniform_filter1d(x, 9, axis=0)),
        ("sobel axis 0 float32", f32, lambda m, x, a: m.sobel(x, axis=0)),
        ("prewitt axis 1 float32", f32, lambda m, x, a: m.prewitt(x, axis=1)),
        ("laplace float32", f32, lambda m, x, a: m.laplace(x)),
        ("gaussian_laplace sigma 2 float32", f32, lambda m, x, a: m.gaussian_laplace(x, 2.0)),
        ("gaussian_gradient_magnitude sigma 2 float32", f32,
         lambda m, x, a: m.gaussian_gradient_magnitude(x, 2.0)),
        ("minimum_filter 5 uint8", u8, lambda m, x, a: m.minimum_filter(x, 5)),
        ("maximum_filter 15 float32", f32, lambda m, x, a: m.maximum_filter(x, 15)),
        ("minimum_filter1d 9 axis 0 float32", f32,
         lambda m, x, a: m.minimum_filter1d(x, 9, axis=0)),
        ("maximum_filter1d 9 axis 1 uint8", u8, lambda m, x, a: m.maximum_filter1d(x, 9, axis=1)),
        ("median_filter 3 float32", f32, lambda m, x, a: m.median_filter(x, 3)),
        ("median_filter 5 uint8", u8, lambda m, x, a: m.median_filter(x, 5)),
        ("median_filter cross 5x5 float32", f32, lambda m, x, a: m.median_filter(x, footprint=a(cross))),
        ("rank_filter 5 rank 3 uint8", u8, lambda m, x, a: m.rank_filter(x, 3, 5)),
        ("percentile_filter 3 pct 25 float32", f32, lambda m, x, a: m.percentile_filter(x, 25, 3)),
    ]


def differs(got, expected):
    """Why ``got`` is not scipy's ``expected``, or an empty string."""
    if got.dtype != expected.dtype or got.shape != expected.shape:
        return f"gave {got.dtype} {got.shape}, scipy {expected.dtype} {expected.shape}"
    tol = 0 if got.dtype.kind in "iub" else 2e-5 * max(1.0, float(np.abs(expected).max()))
    worst = float(np.abs(got.astype(np.float64) - expected).max())
    return f"differs by {worst:g} (tolerance {tol:g})" if worst > tol else ""


def timed(fn, sync):
    t = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - t


def render(report: dict) -> str:
    """The markdown table of a ``--json`` report."""
    w, h = report["size"]
    lines = [f"{report['device']} against cupyx.scipy.ndimage {report['cupy']}, {w}x{h} "
             f"device arrays, medians of {report['rounds']} rounds.", "",
             "| filter | clkit ms | clkit's kernels ms | cupyx ms | clkit vs cupyx |",
             "| --- | ---: | ---: | ---: | ---: |"]
    notes = []
    for row in report["rows"]:
        mark = ""
        if "differs_from_scipy" in row:
            mark = f" ({chr(ord('a') + len(notes))})"
            why = "; ".join(f"{k} {v}" for k, v in row["differs_from_scipy"].items())
            notes.append(f"{mark.strip()} {why} from scipy.ndimage.")
        if "clkit_ms" in row:
            lines.append(f"| {row['filter']}{mark} | {row['clkit_ms']:.3f} | "
                         f"{row['kernels_ms']:.3f} | {row['cupyx_ms']:.3f} | "
                         f"{row['vs_cupyx']:.2f}x |")
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="gpu")
    p.add_argument("--size", default="7680x4320")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--burst", type=int, default=4,
                   help="calls timed in a row per library and round, after one untimed")
    p.add_argument("--only", nargs="*", default=None)
    p.add_argument("--json", default=None)
    p.add_argument("--render", metavar="JSON", default=None,
                   help="write the table of a kept report beside it (.md) and stop")
    args = p.parse_args(argv)
    if args.render:
        write_table(args.render, render)
        return
    import cupy
    import cupyx.scipy.ndimage as cx

    w, h = (int(v) for v in args.size.lower().split("x"))
    dev = clkit.select(args.device)
    queue = clkit.runtime(dev).queue
    print(f"clkit.ndimage on {dev} against cupyx.scipy.ndimage {cupy.__version__}, "
          f"{w}x{h}, device arrays, median of {args.rounds} interleaved rounds")
    rows = []
    for name, x, call in cases(h, w, np.random.default_rng(7)):
        if args.only and not any(o in name for o in args.only):
            continue
        d = clkit.to_device(x, device=dev)
        dx = cupy.asarray(x)
        expected = call(sn, x, np.asarray)
        wrong = {lib: why for lib, why in (
            ("clkit", differs(call(cn, d, np.asarray).get(), expected)),
            ("cupyx", differs(cupy.asnumpy(call(cx, dx, cupy.asarray)), expected))) if why}
        if wrong:
            print(f"{name}: " + "; ".join(f"{k} {v}" for k, v in wrong.items()), flush=True)
        variants = {"clkit": (lambda: call(cn, d, np.asarray), queue.finish),
                    "cupyx": (lambda: call(cx, dx, cupy.asarray),
                              cupy.cuda.runtime.deviceSynchronize)}
        times = {k: [] for k in variants}
        for _ in range(args.rounds):
            for k, (fn, sync) in variants.items():
                # a burst per library: the first call of a burst pays for the switch between
                # the two drivers' contexts on the GPU, which neither pays in a program of its own
                burst = [timed(fn, sync) for _ in range(args.burst + 1)]
                times[k].extend(burst[1:])
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        with clkit.trace() as tr:
            call(cn, d, np.asarray)
            queue.finish()
        kernels = sum(e["end_ms"] - e["start_ms"] for e in tr.events
                      if e["kind"] == "kernel" and e["start_ms"] is not None)
        row = {"filter": name, "clkit_ms": round(med["clkit"], 3),
               "kernels_ms": round(kernels, 3),
               "cupyx_ms": round(med["cupyx"], 3),
               "vs_cupyx": round(med["cupyx"] / med["clkit"], 2)}
        if wrong:
            row["differs_from_scipy"] = wrong
        rows.append(row)
        print(" | ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": str(dev), "cupy": cupy.__version__, "size": [w, h],
                       "rounds": args.rounds, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
