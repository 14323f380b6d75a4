"""clkit.ndimage against scipy.ndimage and OpenCV, numpy in and numpy out, interleaved.

Each round times every implementation of every filter once, in turn, so that load from other
processes falls on all of them alike, and a burst of it (seconds on a shared machine) on one
round of many filters rather than on every round of one (scipy calls of more than
SCIPY_ONCE_S seconds, the large medians, are timed once); the table gives each one's median
over the rounds and the speed-ups of clkit (numpy in and out, and on device arrays) over scipy
and OpenCV. Each timed call follows WARM_S of untimed calls of the same implementation, so
that every library is timed warm, as in a run of calls: on a VM, cores left idle while
another worked (scipy's calls use one) run the next calls slowly for a while (on the 2-core
VM, after 100 ms of one busy core a uint8 Gaussian of clkit took up to 1.7x its time, and
OpenCV's 3x3 erode 1.5x; after one untimed call, a 3x3 minimum of clkit still took 1.5x).
Results are checked against scipy's before timing, and the kernels that the first calls
queued for the background builds (clkit's specialised tier) are built before it: the figures
are those of a warm process.

    python benchmarks/ndimage_vs_scipy.py [--device SPEC] [--size 3840x2160] [--rounds 7]
        [--only NAME ...] [--json FILE]
    python benchmarks/ndimage_vs_scipy.py --render FILE.json   # writes FILE.md, the table

On a GPU, ``benchmarks/ndimage_vs_cupyx.py`` compares the device-array calls with
cupyx.scipy.ndimage.
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
from clkit._build import tiers as _tiers

from kept import write_table

try:
    import cv2
except ImportError:  # OpenCV is optional
    cv2 = None


def cases(h, w, rng):
    f32 = rng.random((h, w), dtype=np.float32)
    u8 = rng.integers(0, 256, (h, w), dtype=np.uint8)
    w5 = rng.random((5, 5)).astype(np.float32)
    k5 = np.ones((5, 5), np.uint8)
    cv = cv2 is not None
    R = cv2.BORDER_REFLECT if cv else None
    return [
        # name, data, clkit/scipy call (fn(module, x)), OpenCV call or None
        ("gaussian_filter sigma 2 float32", f32, lambda m, x: m.gaussian_filter(x, 2.0), None),
        ("gaussian_filter sigma 2 uint8", u8, lambda m, x: m.gaussian_filter(x, 2.0), None),
        ("uniform_filter 5 float32", f32, lambda m, x: m.uniform_filter(x, 5),
         cv and (lambda x: cv2.blur(x, (5, 5), borderType=R))),
        ("correlate 5x5 float32", f32, lambda m, x: m.correlate(x, w5), None),
        ("sobel axis 0 float32", f32, lambda m, x: m.sobel(x, axis=0),
         cv and (lambda x: cv2.Sobel(x, cv2.CV_32F, 0, 1, ksize=3, borderType=R))),
        ("laplace float32", f32, lambda m, x: m.laplace(x), None),
        ("gaussian_gradient_magnitude sigma 2 float32", f32,
         lambda m, x: m.gaussian_gradient_magnitude(x, 2.0), None),
        *[(f"minimum_filter {k} {x.dtype}", x, (lambda k: lambda m, x: m.minimum_filter(x, k))(k),
           cv and (lambda k: lambda x: cv2.erode(x, np.ones((k, k), np.uint8),
                                                 borderType=R))(k))
          for x in (u8, f32) for k in (3, 9, 31)],
        *[(f"maximum_filter {k} uint8", u8, (lambda k: lambda m, x: m.maximum_filter(x, k))(k),
           cv and (lambda k: lambda x: cv2.dilate(x, np.ones((k, k), np.uint8),
                                                  borderType=R))(k))
          for k in (5, 31)],
        *[(f"median_filter {k} uint8", u8,
           (lambda k: lambda m, x: m.median_filter(x, k, mode="nearest"))(k),
           cv and (lambda k: lambda x: cv2.medianBlur(x, k))(k))
          for k in (3, 5, 9, 15)],
        ("median_filter 5 float32", f32, lambda m, x: m.median_filter(x, 5),
         cv and (lambda x: cv2.medianBlur(x, 5))),
    ]


#: scipy calls slower than this (seconds) are timed once, not every round.
SCIPY_ONCE_S = 3.0
#: Seconds of untimed calls before each timed one (at least one call).
WARM_S = 0.1


def timed(fn, sync=None):
    t = time.perf_counter()
    fn()
    if sync is not None:
        sync()
    return time.perf_counter() - t


def _ms(v: float) -> str:
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def render(report: dict) -> str:
    """The markdown table of a ``--json`` report."""
    w, h = report["size"]
    lines = [f"| filter ({w}x{h}) | scipy ms | clkit ms, numpy in and out | "
             "clkit ms, device arrays | vs scipy | OpenCV ms | vs OpenCV |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in report["rows"]:
        cv = (f"{_ms(row['cv2_ms'])} | {row['vs_cv2']:.2f}x" if "cv2_ms" in row else " | ")
        lines.append(f"| {row['filter']} | {_ms(row['scipy_ms'])} | {_ms(row['clkit_ms'])} | "
                     f"{_ms(row['clkit_device_ms'])} | {row['vs_scipy']:.1f}x | {cv} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default=None)
    p.add_argument("--size", default="3840x2160")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--only", nargs="*", default=None)
    p.add_argument("--json", default=None)
    p.add_argument("--render", metavar="JSON", default=None,
                   help="write the table of a kept report beside it (.md) and stop")
    args = p.parse_args(argv)
    if args.render:
        write_table(args.render, render)
        return
    w, h = (int(v) for v in args.size.lower().split("x"))
    dev = clkit.select(args.device)
    rt = clkit.runtime(dev)
    print(f"clkit.ndimage on {dev}, {w}x{h}, median of {args.rounds} interleaved rounds")
    filters = []  # (name, variants, times)
    for name, x, call, cv_call in cases(h, w, np.random.default_rng(7)):
        if args.only and not any(o in name for o in args.only):
            continue
        t0 = time.perf_counter()
        expected = call(sn, x)
        scipy_once = time.perf_counter() - t0
        got = call(_On(dev), x)
        tol = 0 if x.dtype == np.uint8 else 1e-4
        assert np.allclose(got, expected, atol=tol, rtol=tol), name
        d = clkit.to_device(x, device=dev)
        call(_On(None), d)
        variants = {"scipy": (lambda call=call, x=x: call(sn, x), None),
                    "clkit": (lambda call=call, x=x: call(_On(dev), x), None),
                    "clkit_device": (lambda call=call, d=d: call(_On(None), d),
                                     rt.queue.finish)}
        if cv_call:
            cv_call(x)
            variants["cv2"] = (lambda cv_call=cv_call, x=x: cv_call(x), None)
        times = {k: [] for k in variants}
        if scipy_once > SCIPY_ONCE_S:  # (large medians: scipy's checking call is its time)
            del variants["scipy"]
            times["scipy"] = [scipy_once]
        filters.append((name, variants, times))
    _tiers.wait_idle()
    for _ in range(args.rounds):
        for name, variants, times in filters:
            for k, (fn, sync) in variants.items():
                warm = time.perf_counter() + WARM_S  # (untimed: the cores awake, see above)
                while True:
                    timed(fn, sync)
                    if time.perf_counter() >= warm:
                        break
                times[k].append(timed(fn, sync))
    rows = []
    for name, variants, times in filters:
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        row = {"filter": name, **{f"{k}_ms": round(v, 2) for k, v in med.items()},
               "vs_scipy": round(med["scipy"] / med["clkit"], 1)}
        if "cv2" in med:
            row["vs_cv2"] = round(med["cv2"] / med["clkit"], 2)
        rows.append(row)
        print(" | ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": str(dev), "size": [w, h], "rounds": args.rounds,
                       "rows": rows}, f, indent=1)


class _On:
    """clkit.ndimage with ``device=`` bound (None: the device array's own)."""

    def __init__(self, device):
        self.device = device

    def __getattr__(self, name):
        f = getattr(cn, name)
        return lambda *a, **k: f(*a, device=self.device, **k) if self.device else f(*a, **k)


if __name__ == "__main__":
    main()
