"""Print each benchmark group's medians, speed-ups, and the acceptance targets' ratios.

Usage: python benchmarks/report.py RESULTS.json [--markdown]

RESULTS.json comes from ``pytest benchmarks --benchmark-only --benchmark-json=RESULTS.json``.
A benchmark ``test_<group>__<variant>`` belongs to ``<group>``.  Each row shows
the variant's median (a ``serial`` one scaled to the full size by its
``extra_info["scale"]``), its effective bandwidth where the bytes are known,
the kernels' device time of a ``clkit_kernel`` row, and "vs X": X's median
over the row's (above 1: the row is faster) for every baseline X of the group
(the variants not named clkit...).  Then the targets of ``targets.py``,
evaluated from these medians by :func:`targets.evaluate_targets`, with the
kernels' device time (profiling events) as a ``clkit_kernel``'s time, as
``clkit bench`` does; the rest are wall-clock medians.
"""

import json
import sys

from targets import evaluate_targets


def groups(results):
    """{group: [(variant, median ms, benchmark record)]}, in the file's order."""
    out = {}
    for b in results["benchmarks"]:
        name = b["name"].split("[")[0].removeprefix("test_")
        group, _, variant = name.partition("__")
        info = b.get("extra_info") or {}
        ms = b["stats"]["median"] * 1e3 * info.get("scale", 1.0)
        out.setdefault(group, []).append((variant, ms, b))
    return out


def _ms(ms):
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.2f}" if ms >= 1 else f"{ms:.4f}"


def _x(ratio):
    return f"{ratio:,.0f}x" if ratio >= 100 else f"{ratio:.1f}x" if ratio >= 10 else \
        f"{ratio:.2f}x"


def _is_base(group, variant):
    return group != "transfers" and not variant.startswith("clkit") and \
        not variant.endswith("_e2e")


def table(results):
    """Header and rows for every group."""
    head = ["group", "variant", "median ms", "GB/s", "kernel ms", "speed-ups"]
    rows = []
    for group, variants in groups(results).items():
        bases = [(v, ms) for v, ms, _ in variants if _is_base(group, v)]
        for variant, ms, b in variants:
            info = b.get("extra_info") or {}
            nbytes = info.get("bytes")
            speedups = ", ".join(f"{_x(base_ms / ms)} vs {base}" for base, base_ms in bases
                                 if base != variant)
            rows.append([group, variant + (" (scaled)" if info.get("scale", 1) != 1 else ""),
                         _ms(ms), f"{nbytes / (ms * 1e6):.2f}" if nbytes else "",
                         _ms(info["kernel_ms"]) if "kernel_ms" in info else "", speedups])
    return head, rows


def as_bench_report(results):
    """The benchmark medians in the shape of a ``clkit bench`` report, for the targets."""
    devices = {}
    cases = {}
    for group, variants in groups(results).items():
        case = cases.setdefault(group, {"id": group, "results": [], "bytes": None})
        for variant, ms, b in variants:
            info = b.get("extra_info") or {}
            if info.get("device"):
                devices[info["device"]] = {"id": info["device"], "type": info.get("device_type")}
            nbytes = info.get("bytes")
            if variant == "clkit_e2e" or variant == "clkit_kernel":
                case["bytes"] = nbytes if nbytes else case["bytes"]
            if variant == "clkit_kernel" and "kernel_ms" in info:
                ms = info["kernel_ms"]  # the kernels' device time, as `clkit bench` reports it
            case["results"].append({"key": variant, "device": info.get("device"),
                                    "median_ms": ms,
                                    "gbps": nbytes / (ms * 1e6) if nbytes else None})
    return {"machine": {"devices": list(devices.values())}, "cases": list(cases.values())}


def main(argv):
    if len(argv) < 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        results = json.load(f)
    markdown = "--markdown" in argv
    head, rows = table(results)
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("| --- | --- | ---: | ---: | ---: | --- |")
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head) - 1)]
        for r in [head] + rows:
            print("  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                            for i, (c, w) in enumerate(zip(r, widths))) + "  " + r[-1])
    targets = evaluate_targets(as_bench_report(results))
    if not targets:
        return 0
    print()
    if markdown:
        print("| device | case | target | measured | verdict |\n| --- | --- | --- | --- | --- |")
    else:
        print("Targets (medians of this run; clkit kernel: device events)")
    for t in targets:
        verdict = {True: "met", False: "NOT MET", None: "-"}[t["met"]]
        if markdown:
            print(f"| {t['device']} | {t['case']} | {t['target']} | {t['measured']} | "
                  f"{verdict} |")
        else:
            print(f"  {t['device']:5s} {t['case']:14s} {t['target']:52s} {t['measured']:34s} "
                  f"{verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
