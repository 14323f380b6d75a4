"""The whole benchmark pass, every output into one folder.

Usage: python3 benchmarks/run_all.py OUTDIR [--size SIZE] [--device SPEC] [--no-pytest]
                                           [--pytest-all-devices]

1. ``clkit bench --size SIZE --device SPEC`` (every device but the simulator by
   default): OUTDIR/bench-SIZE.txt (the tables), .json (every number and the
   machine) and .png (when matplotlib is installed), and targets.py's verdicts
   on it in OUTDIR/targets-SIZE.txt;
2. the pytest-benchmark suite on the best of those devices (on each of them with
   ``--pytest-all-devices``): OUTDIR/pytest-SIZE-DEVICE.json, and report.py's
   ratios of it in OUTDIR/report-SIZE-DEVICE.md.

Each step's output also goes to the terminal.  The exit status is the first
failing step's.  Run from anywhere; it runs the checkout it lives in.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tee(cmd, path: Path | None, env=None) -> int:
    """Run ``cmd`` from the checkout's root, its output to the terminal and to ``path``."""
    print(f"\n$ {' '.join(map(str, cmd))}", flush=True)
    start = time.perf_counter()
    proc = subprocess.Popen(list(map(str, cmd)), cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    out = open(path, "w") if path else None
    try:
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            if out:
                out.write(line)
    finally:
        if out:
            out.close()
    rc = proc.wait()
    print(f"[exit status {rc} after {time.perf_counter() - start:.0f} s]", flush=True)
    return rc


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--size", default="default", help="small, default, gpu or WxH")
    parser.add_argument("--device", default="all", help="a spec, a comma list, or all")
    parser.add_argument("--no-pytest", action="store_true", help="only `clkit bench`")
    parser.add_argument("--pytest-all-devices", action="store_true",
                        help="run the pytest-benchmark suite on every device, not the best only")
    args = parser.parse_args(argv)
    args.outdir.mkdir(parents=True, exist_ok=True)
    out = args.outdir.resolve()
    py = sys.executable
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                     else "")
    sys.path.insert(0, str(ROOT))
    import clkit
    from clkit._platform.devices import select_many

    spec = args.device
    devices = select_many("all" if spec.lower() == "all" else spec.split(","))
    best = clkit.select(None)
    devices.sort(key=lambda d: d != best)  # the best first, if it is among them
    tag = re.sub(r"[^A-Za-z0-9_.-]+", "_", args.size)
    bench = [py, "-m", "clkit", "bench", "--size", args.size, "--device",
             ",".join(d.id for d in devices), "--json", out / f"bench-{tag}.json"]
    try:
        import matplotlib  # noqa: F401
        bench += ["--plot", out / f"bench-{tag}.png"]
    except ImportError:
        print("matplotlib is not installed: no plot (draw it later from the JSON with "
              "`python -c \"import json, clkit.bench as b; "
              f"b.plot(json.load(open('bench-{tag}.json')), 'bench-{tag}.png')\"`)")
    status = tee(bench, out / f"bench-{tag}.txt", env)
    if (out / f"bench-{tag}.json").exists():
        status = status or tee([py, ROOT / "benchmarks" / "targets.py", out / f"bench-{tag}.json"],
                               out / f"targets-{tag}.txt", env)
    if args.no_pytest:
        return status
    for d in devices if args.pytest_all_devices else devices[:1]:
        name = f"{tag}-{d.id.replace(':', '_')}"
        result = out / f"pytest-{name}.json"
        denv = dict(env, CLKIT_BENCH_SIZE=args.size, CLKIT_BENCH_DEVICE=d.id)
        rc = tee([py, "-m", "pytest", "benchmarks", "--benchmark-only", "-q",
                  "-p", "no:cacheprovider", "--benchmark-columns=min,median,max,rounds",
                  f"--benchmark-json={result}"], None, denv)
        status = status or rc
        if result.exists():
            rc = tee([py, "benchmarks/report.py", result, "--markdown"],
                     out / f"report-{name}.md", env)
            status = status or rc
    print(f"\noutputs in {out}: " + ", ".join(sorted(p.name for p in out.iterdir())))
    return status


if __name__ == "__main__":
    sys.exit(main())
