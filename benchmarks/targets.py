"""clkit's acceptance targets: the speed-ups the kernel library is held to, per device type.

Evaluated from the medians of a ``clkit bench --json`` report (or, through
``report.py``, of a pytest-benchmark run)::

    clkit bench --json bench.json
    python benchmarks/targets.py bench.json

On a CPU device: grayscale within 2x of cv2.cvtColor and 100x serial Python,
convolve 5x5 and gaussian_blur within 1.5x of OpenCV and 10x scipy, vector_add
at 0.9x numpy's bandwidth, mandelbrot 20x numpy, numpy-in/out calls within 2x
of the kernel.  On a GPU: vector_add at 0.97x torch.add, grayscale and
convolve at 0.75x and 0.5x of torch's device copy bandwidth, convolve faster
than torch conv2d, numpy in/out transfers at 0.8x torch's pinned copies.
"""

from __future__ import annotations

import json
import sys


def _median_of(case: dict | None, key: str, device: str | None = None) -> dict | None:
    if case is None:
        return None
    for r in case["results"]:
        if r["key"] == key and (device is None or r["device"] == device) and \
                r.get("median_ms") is not None:
            return r
    return None


def evaluate_targets(report: dict) -> list[dict]:
    """The acceptance targets for each measured device, from a report's medians.

    Each entry: device, case, target (text), measured (text), value, limit,
    met (True/False, or None when a baseline needed is missing).
    """
    cases = {c["id"]: c for c in report["cases"]}
    out = []
    for dev in report["machine"]["devices"]:
        did, dtype = dev["id"], dev["type"]

        def add(case_id, target, value, limit, higher_is_better, what):
            if case_id not in cases:
                return  # not asked for in this run
            met = None if value is None else (value >= limit if higher_is_better
                                              else value <= limit)
            out.append({"device": did, "device_type": dtype, "case": case_id, "target": target,
                        "value": value, "limit": limit,
                        "measured": "not measured" if value is None else what.format(value),
                        "met": met})

        def ms(case_id, key, device=None):
            r = _median_of(cases.get(case_id), key, device)
            return None if r is None else r["median_ms"]

        def gbps(case_id, key, device=None):
            r = _median_of(cases.get(case_id), key, device)
            return None if r is None else r.get("gbps")

        def ratio(a, b):
            return None if a is None or b is None or b == 0 else a / b

        kernel = lambda case_id: ms(case_id, "clkit_kernel", did)  # noqa: E731
        e2e = lambda case_id: ms(case_id, "clkit_e2e", did)  # noqa: E731

        def within(case_id, key, limit, target):
            """The kernel's time at most ``limit`` times the baseline ``key``'s."""
            add(case_id, target, ratio(kernel(case_id), ms(case_id, key)), limit, False,
                f"kernel/{key} = {{:.2f}}x")

        def faster(case_id, key, limit, target, what):
            """The baseline ``key``'s time at least ``limit`` times the kernel's."""
            add(case_id, target, ratio(ms(case_id, key), kernel(case_id)), limit, True, what)

        if dtype == "cpu":
            within("grayscale", "cv2", 2.0, "kernel <= 2.0x cv2.cvtColor time")
            faster("grayscale", "serial", 100, ">= 100x serial Python", "serial/kernel = {:,.0f}x")
            within("convolve_5x5", "cv2", 1.5, "kernel <= 1.5x cv2.filter2D (BORDER_REFLECT)")
            faster("convolve_5x5", "scipy", 10, ">= 10x scipy.ndimage.convolve",
                   "scipy/kernel = {:.1f}x")
            within("gaussian_blur", "cv2", 1.5, "kernel <= 1.5x cv2.GaussianBlur")
            faster("gaussian_blur", "scipy", 10, ">= 10x scipy.ndimage.gaussian_filter",
                   "scipy/kernel = {:.1f}x")
            faster("vector_add", "numpy", 0.9, "device arrays: >= 0.9x numpy add(out=) bandwidth",
                   "kernel/numpy bandwidth = {:.2f}x")
            faster("mandelbrot", "numpy", 20, ">= 20x a vectorized numpy version",
                   "numpy/kernel = {:.1f}x")
            for cid in ("grayscale", "convolve_5x5", "convolve_9x9"):
                add(cid, "numpy in and out: end-to-end <= 2x kernel time",
                    ratio(e2e(cid), kernel(cid)), 2.0, False, "e2e/kernel = {:.2f}x")
        elif dtype == "gpu":
            copy = gbps("transfers", "torch_copy")
            faster("vector_add", "torch", 0.97, ">= 0.97x torch.add bandwidth",
                   "kernel/torch bandwidth = {:.2f}x")
            add("grayscale", "bandwidth (4 B/pixel) >= 0.75x torch device copy",
                ratio(gbps("grayscale", "clkit_kernel", did), copy), 0.75, True,
                "{:.2f}x of torch copy")
            for cid in ("convolve_5x5", "convolve_9x9"):
                add(cid, "bandwidth (8 B/pixel) >= 0.5x torch device copy",
                    ratio(gbps(cid, "clkit_kernel", did), copy), 0.5, True,
                    "{:.2f}x of torch copy")
                faster(cid, "torch", 1.0, "faster than torch conv2d", "conv2d/kernel = {:.2f}x")
            # numpy in/out: vector_add's bytes over the time the call spends beyond its kernel,
            # against torch's pinned copies in the same mix (8 B up, 4 B down per element).
            k, e = kernel("vector_add"), e2e("vector_add")
            vec = cases.get("vector_add")
            xfer = None
            if k is not None and e is not None and e > k and vec is not None:
                xfer = vec["bytes"] / ((e - k) * 1e6)
            h2d, d2h = gbps("transfers", "torch_h2d_pinned"), gbps("transfers",
                                                                   "torch_d2h_pinned")
            pinned = 12 / (8 / h2d + 4 / d2h) if h2d and d2h else None
            add("transfers", "numpy in/out transfers >= 0.8x torch pinned H2D/D2H",
                ratio(xfer, pinned), 0.8, True, "{:.2f}x" + (
                    f" ({xfer:.1f} vs {pinned:.1f} GB/s)" if xfer and pinned else ""))
    return out


# ---------------------------------------------------------------------------------------------


def format_targets(targets: list, size: str) -> str:
    """The targets as a table, one line each with its verdict."""
    if not targets:
        return ""
    lines = ["Targets (ratios from this run's medians)"]
    if size not in ("default", "gpu"):
        lines[0] += f", at size {size}: the targets are set for the default and gpu sizes"
    width = max(len(f"{t['case']}: {t['target']}") for t in targets)
    for t in targets:
        verdict = {True: "met", False: "NOT MET", None: "-"}[t["met"]]
        lines.append(f"  {t['device']:5s} {(t['case'] + ': ' + t['target']).ljust(width)}  "
                     f"{t['measured']:40s} {verdict}")
    return "\n".join(lines)


def main(argv) -> int:
    if len(argv) != 2:
        print("usage: python benchmarks/targets.py BENCH.json (from clkit bench --json)",
              file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        report = json.load(f)
    text = format_targets(evaluate_targets(report), report.get("size", ""))
    print(text or "no target applies to the cases and devices of this report")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
