"""The performance page's tables: one per platform, from ``clkit bench --json`` reports.

    python benchmarks/tables.py run NAME [--device SPEC] [--size SIZE] [--repeat N]
    python benchmarks/tables.py render

``run`` measures every case of ``clkit bench`` on one device (the peers, numpy, scipy, OpenCV,
torch and CuPy where installed, in the same run), keeps the report as ``docs/data/NAME.json``
with the commit it was measured at, and writes the table ``docs/data/NAME.md`` that the
performance page includes.  ``render`` writes every table again from the reports kept (a table
may take its cases from several reports: ``TABLES``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from targets import evaluate_targets

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data"

#: table -> the reports it is made of; a case of a later report replaces the same case of an
#: earlier one.
TABLES = {
    "pocl": ["pocl.json"],
    "intel": ["intel.json"],
    "h200": ["h200.json", "h200-gaussian.json"],
    "h200-e2e": ["h200-e2e.json"],
}

#: (result key, column) of the libraries clkit is compared with, in the order of the columns.
PEERS = [("numpy", "numpy"), ("scipy", "scipy"), ("cv2", "OpenCV"), ("torch", "torch"),
         ("cupy", "CuPy")]
#: peers that run on the GPU from device memory, compared with clkit on device arrays; the
#: others take numpy arrays and are compared with clkit's numpy-in, numpy-out call.
ON_DEVICE = {"torch", "cupy"}
CASE_ORDER = ["grayscale", "convolve_5x5", "convolve_9x9", "gaussian_blur",
              "gaussian_blur_sigma10", "vector_add", "mandelbrot", "depth_to_points"]


def ms(x: float | None) -> str:
    if x is None:
        return ""
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}" if x >= 1 \
        else f"{x:.3f}"


def ratio(x: float) -> str:
    return f"{x:,.0f}x" if x >= 100 else f"{x:.1f}x" if x >= 10 else f"{x:.2f}x"


def _median(case: dict, key: str) -> float | None:
    return next((r["median_ms"] for r in case["results"]
                 if r["key"] == key and r.get("median_ms")), None)


def _title(case: dict) -> str:
    return case["title"].replace("RGB->gray ", "")


def table(reports: list[dict]) -> str:
    """The markdown table of ``reports`` (cases of later reports first), with a line saying
    where and when each report was measured."""
    cases, source = {}, {}
    for i, report in enumerate(reports):
        for case in report["cases"]:
            if case["id"] in CASE_ORDER:
                cases[case["id"]] = case
                source[case["id"]] = i
    ordered = [cases[c] for c in CASE_ORDER if c in cases]
    peers = [(k, name) for k, name in PEERS if any(_median(c, k) for c in ordered)]
    head = (["case", "clkit kernel", "clkit call, device arrays", "clkit, numpy in and out"]
            + [name for _, name in peers] + ["speed-up over the fastest peer"])
    lines = ["| " + " | ".join(head) + " |",
             "| --- |" + " ---: |" * (len(head) - 2) + " --- |"]
    for c in ordered:
        kernel, call, e2e = (_median(c, k) for k in ("clkit_kernel", "clkit_call", "clkit_e2e"))
        times = {k: _median(c, k) for k, _ in peers}
        versus = []
        host = [(t, k) for k, t in times.items() if t and k not in ON_DEVICE]
        device = [(t, k) for k, t in times.items() if t and k in ON_DEVICE]
        if host and e2e:
            t, k = min(host)
            versus.append(f"{ratio(t / e2e)} {dict(PEERS)[k]}")
        if device and (call or kernel):
            t, k = min(device)
            versus.append(f"{ratio(t / (call or kernel))} {dict(PEERS)[k]}")
        lines.append("| " + " | ".join([_title(c), ms(kernel), ms(call), ms(e2e)]
                                        + [ms(times[k]) for k, _ in peers]
                                        + [", ".join(versus)]) + " |")
    note = ("Medians in ms. Speed-up: the fastest peer's time over clkit's (above 1, clkit is "
            "faster); libraries that take numpy arrays are compared with clkit's numpy-in, "
            "numpy-out call, GPU libraries with clkit's call on device arrays.")
    wheres = []
    for i, r in enumerate(reports):
        used = [c for c in CASE_ORDER if source.get(c) == i]
        if used:
            wheres.append((", ".join(used) + ": " if len(reports) > 1 else "") + conditions(r))
    verdicts = [t for r in reports for t in evaluate_targets(r)
                if t["met"] is not None and source.get(t["case"]) == reports.index(r)]
    if verdicts:
        lines += ["", "| acceptance target (`benchmarks/targets.py`) | measured | |",
                  "| --- | --- | --- |"]
        lines += [f"| {t['case']}: {t['target']} | {t['measured']} "
                  f"| {({True: 'met', False: '**not met**', None: '-'})[t['met']]} |"
                  for t in verdicts]
    return "\n".join(lines + ["", note, ""] + [w + "\n" for w in wheres])


def conditions(report: dict) -> str:
    """One line: the device, the host, the versions, the date and the commit."""
    m = report["machine"]
    devices = ", ".join(f"{d['name']} ({d['platform']}, {d['version']}, driver {d['driver']})"
                        for d in m["devices"])
    v = m["versions"]
    libs = ", ".join(f"{k} {v[k]}" for k in ("numpy", "scipy", "cv2", "torch", "cupy", "pyopencl")
                     if v.get(k))
    commit = f" at clkit commit `{report['commit']}`" if report.get("commit") else ""
    return (f"{devices}; host {m['cpu']}, {m['cores']} cores; {libs}; "
            f"measured {m['date'][:10]}{commit} (`{' '.join(_command(report))}`).")


def _command(report: dict) -> list[str]:
    argv = list(report["argv"])
    if argv and argv[0].endswith("__main__.py"):
        argv[:1] = ["python", "-m", "clkit"]
    elif argv[:3] == ["python3", "-m", "clkit"] or argv[:1] == ["python3"]:
        argv[0] = "python"
    return argv


def e2e_table(report: dict) -> str:
    """The tables of ``gpu_e2e.py``'s report: one image and a batch, against the link."""
    lines = ["| one 7680x4320 image | link limit | numpy in and out | pinned in and out "
             "| kernels | device arrays, whole call | OpenCV, all host cores |",
             "| --- |" + " ---: |" * 6]
    for r in report["single"]:
        lines.append(f"| {r['case']} | {ms(r['limit_ms'])} | {ms(r['numpy_ms'])} "
                     f"({r['numpy_ms'] / r['limit_ms']:.2f}x) | {ms(r['pinned_ms'])} "
                     f"({r['pinned_ms'] / r['limit_ms']:.2f}x) | {ms(r['kernel_ms'])} "
                     f"| {ms(r['device_call_ms'])} | {ms(r['opencv_ms'])} |")
    lines += ["", "| batch through clkit.map, per image | link, both directions | pinned "
              "| numpy | OpenCV, all host cores |", "| --- |" + " ---: |" * 4]
    for r in report["batch"]:
        n = r["images"]
        lines.append(f"| {r['case']}, {n} images | {ms(r['link_both_ms'] / n)} "
                     f"| {ms(r['pinned_ms'] / n)} | {ms(r['numpy_ms'] / n)} "
                     f"| {ms(r['opencv_ms'] / n)} |")
    link = report["link"]
    return "\n".join(lines) + (
        f"\n\nms; (x) is the time over the link's limit for the bytes moved, the link measured "
        f"in the same run with pinned buffers: {link['up_GBs']:.1f} GB/s up, "
        f"{link['down_GBs']:.1f} down, {link['both_total_GBs']:.1f} both at once. "
        f"{report['device']}, {report['host_cores']} host cores; measured {report['date'][:10]} "
        f"at clkit commit `{report['commit']}` (`{report['command']}`).\n")


def render() -> None:
    for name, files in TABLES.items():
        paths = [DATA / f for f in files]
        if all(p.exists() for p in paths):
            reports = [json.loads(p.read_text()) for p in paths]
            text = e2e_table(reports[0]) if "single" in reports[0] else table(reports)
            (DATA / f"{name}.md").write_text(text)
            print(f"wrote {DATA / name}.md")


def run(name: str, bench_args: list[str]) -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    out = DATA / f"{name}.json"
    subprocess.run([sys.executable, "-m", "clkit", "bench", *bench_args, "--json", str(out)],
                   check=True, cwd=ROOT)
    report = json.loads(out.read_text())
    report["argv"] = ["python", "benchmarks/tables.py", "run", name, *bench_args]
    # The last commit that changed the code measured (not the docs the table goes into).
    head = subprocess.run(["git", "log", "-1", "--format=%h", "--", "clkit", "kernels_cl"],
                          cwd=ROOT, capture_output=True, text=True)
    if head.returncode == 0:
        report["commit"] = head.stdout.strip()
    out.write_text(json.dumps(report, indent=1) + "\n")
    for older in TABLES.get(name, [])[1:]:  # reports of other cases this run replaces
        if (DATA / older).exists():
            (DATA / older).unlink()
            print(f"removed {DATA / older}: this run measured its cases again")
    (DATA / f"{name}.md").write_text(table([report]))
    print(f"wrote {out} and {DATA / name}.md")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run", help="measure one platform's table")
    r.add_argument("name", help="the table's name: pocl, intel, h200, or a new one")
    r.add_argument("--device", default=None, help="the device spec (clkit bench --device)")
    r.add_argument("--size", default=None, help="clkit bench --size: small, default, gpu, WxH")
    r.add_argument("--repeat", default=None, help="clkit bench --repeat")
    sub.add_parser("render", help="write every table again from the reports in docs/data/")
    args = parser.parse_args(argv)
    if args.what == "render":
        render()
        return
    bench_args = []
    for option in ("device", "size", "repeat"):
        if getattr(args, option) is not None:
            bench_args += [f"--{option}", getattr(args, option)]
    run(args.name, bench_args)


if __name__ == "__main__":
    main()
