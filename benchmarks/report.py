"""Print each benchmark group's medians and ratios to its baseline.

Usage: python benchmarks/report.py RESULTS.json [--markdown]

A benchmark ``test_<group>__<variant>`` belongs to ``<group>``; the baseline
is the first variant that is not ``clkit`` (numpy, cv2, torch, pyopencl...),
and each row shows its median over the baseline's: under 1 is faster.
"""

import json
import sys


def rows(results):
    groups = {}
    for b in results["benchmarks"]:
        name = b["name"].split("[")[0].removeprefix("test_")
        group, _, variant = name.partition("__")
        groups.setdefault(group, []).append((variant, b["stats"]["median"] * 1e3))
    for group, variants in groups.items():
        baseline = next((ms for v, ms in variants if not v.startswith("clkit")), variants[0][1])
        for variant, ms in variants:
            yield group, variant, ms, ms / baseline


def main(argv):
    with open(argv[1]) as f:
        results = json.load(f)
    markdown = "--markdown" in argv
    if markdown:
        print("| case | variant | median ms | ratio to baseline |\n| --- | --- | ---: | ---: |")
    for group, variant, ms, ratio in rows(results):
        if markdown:
            print(f"| {group} | {variant} | {ms:.4f} | {ratio:.2f}x |")
        else:
            print(f"{group:32s} {variant:24s} {ms:10.4f} ms {ratio:7.2f}x")


if __name__ == "__main__":
    main(sys.argv)
