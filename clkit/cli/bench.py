"""``clkit bench``: the kernel library against serial Python, NumPy, OpenCV, torch.

The measuring is :mod:`clkit.bench`; this module parses the command line,
prints each case's table as soon as it is measured, and writes ``--json``
and ``--plot`` whole or not at all.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings

import pyopencl as cl

from .. import bench as _bench
from .._files import atomic_write
from .._platform.devices import select_many
from . import _types
from ._command import Command
from ._outputs import check_plot, output_folder


def _preset(text):
    try:
        return _bench.parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _write_json(report: dict, path: str) -> None:
    with atomic_write(path) as f:
        f.write((json.dumps(report, indent=1) + "\n").encode())


class Bench(Command):
    def arguments(self, p):
        names = ", ".join(_bench.kernel_names())
        p.add_argument("kernels", nargs="*", metavar="KERNEL",
                       help=f"what to measure (default: all): {names}; or a case such as "
                            "convolve_5x5")
        p.add_argument("--size", type=_preset, default=_bench.PRESETS["default"],
                       help="small (seconds), default (3840x2160 images, 2^24 vectors, "
                            "1920x1080 mandelbrot), gpu (7680x4320, 2^26), or WxH")
        p.add_argument("--repeat", type=_types.positive_int, default=15, metavar="N",
                       help="timed runs per variant after one warm-up (fewer for slow ones, "
                            "at least 3; default 15)")
        p.add_argument("--json", metavar="FILE",
                       help="write every number and the machine to FILE")
        p.add_argument("--plot", metavar="FILE.png",
                       help="draw the medians as a bar chart (needs matplotlib: clkit[plot])")
        p.epilog = ("--device takes a spec, a comma-separated list of specs, or all (the "
                    "default: every device but the Oclgrind simulator, which runs only when "
                    "named)")

    def run(self, args):
        cases = _bench.make_cases(args.size, args.kernels)
        if args.json:
            output_folder(args.json, "--json")
        if args.plot:
            check_plot(args.plot)
        spec = args.device or "all"
        devices = select_many("all" if spec.strip().lower() == "all"
                              else [s for s in spec.split(",") if s.strip()])
        records = {d.id: d.as_dict() for d in devices}

        print(_bench.format_header(_bench.machine_info(devices), args.size), flush=True)

        def show(case):
            print("\n" + _bench.format_record(case, records), flush=True)

        def progress(text):
            if sys.stderr.isatty():
                print(f"\r\033[K  measuring {text}", end="", file=sys.stderr, flush=True)

        try:
            with warnings.catch_warnings():
                # A driver's remarks while building a kernel are not part of a benchmark's table.
                warnings.simplefilter("ignore", cl.CompilerWarning)
                report = _bench.run(cases, devices, args.size, args.repeat, on_case=show,
                                    progress=progress)
        finally:
            if sys.stderr.isatty():
                print("\r\033[K", end="", file=sys.stderr, flush=True)
        load = report["machine"]["load_average_after"]
        if load:
            print(f"\nload average after the run: {', '.join(f'{x:.2f}' for x in load)}")
        if args.json:
            _write_json(report, args.json)
            print(f"wrote {args.json}")
        if args.plot:
            _bench.plot(report, args.plot)
            print(f"wrote {args.plot}")
        failed = [f"{c['id']}/{r['label']}" for c in report["cases"] for r in c["results"]
                  if (r.get("check") or "").startswith("MISMATCH")]
        if failed:
            print(f"clkit: error: results differ from the reference: {', '.join(failed)}",
                  file=sys.stderr)
            return 1
        return 0
