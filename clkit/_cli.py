"""The ``clkit`` command.

Every subcommand takes ``--device``.  A mistake in the input prints one line
``clkit: error: ...`` on stderr and exits with status 2, without a
traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import pyopencl as cl

from . import _icd
from ._devices import Device, all_devices, devices, select
from ._errors import ClkitError

_COMMANDS = {}


class _Parser(argparse.ArgumentParser):
    """argparse, with usage mistakes reported in the one-line error format."""

    def error(self, message):
        raise UsageError(f"{message} (see `{self.prog} --help`)")


class UsageError(Exception):
    """A mistake in the command line or its input files: one line, exit status 2."""


def command(name, help):
    """Register a subcommand: ``fn(args)`` plus ``fn.configure(parser)``."""
    def register(fn):
        _COMMANDS[name] = (fn, help)
        return fn
    return register


def _mib(nbytes: int) -> str:
    return f"{nbytes / 2**20:,.0f} MiB"


def _device_record(d: Device) -> dict:
    return {
        "id": d.id, "name": d.name, "platform": d.platform, "vendor": d.vendor, "type": d.type,
        "version": d.version, "driver": d.driver, "compute_units": d.compute_units,
        "clock_mhz": d.clock_mhz, "global_mem": d.global_mem, "local_mem": d.local_mem,
        "max_alloc": d.max_alloc, "max_work_group_size": d.max_work_group_size,
        "fp64": d.fp64, "fp16": d.fp16, "simulator": d.simulator,
    }


@command("devices", "list every OpenCL platform and device with its id")
def cmd_devices(args):
    found = devices()
    if args.json:
        print(json.dumps([_device_record(d) for d in found], indent=2))
        return
    default = None
    try:
        default = select(args.device)
    except ClkitError:
        pass
    rows = [("id", "type", "name", "platform", "version", "CUs", "memory", "max alloc")]
    for d in found:
        mark = "*" if d == default else " "
        rows.append((f"{mark}{d.id}", d.type + (" (sim)" if d.simulator else ""), d.name,
                     d.platform, d.version, str(d.compute_units), _mib(d.global_mem),
                     _mib(d.max_alloc)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    if default is not None:
        print("\n* the default device; CLKIT_DEVICE=<id, type or name> picks another, "
              "CLKIT_VISIBLE_DEVICES=<id,...> hides the rest")


cmd_devices.configure = lambda p: p.add_argument("--json", action="store_true",
                                                  help="print the list as JSON")


@command("info", "everything about one device, as clinfo shows it")
def cmd_info(args):
    d = select(args.spec if args.spec is not None else args.device)
    c = d.cl_device
    record = _device_record(d)

    def get(attr, default=None):
        try:
            return getattr(c, attr)
        except (cl.Error, AttributeError):  # drivers differ in which queries they answer
            return default

    record.update({
        "opencl_c_version": get("opencl_c_version", ""),
        "max_work_item_sizes": list(d.max_work_item_sizes),
        "max_constant_buffer_size": get("max_constant_buffer_size"),
        "preferred_vector_width_float": get("preferred_vector_width_float"),
        "native_vector_width_float": get("native_vector_width_float"),
        "address_bits": get("address_bits"),
        "mem_base_addr_align": get("mem_base_addr_align"),
        "global_mem_cache_size": get("global_mem_cache_size"),
        "global_mem_cacheline_size": get("global_mem_cacheline_size"),
        "image_support": bool(get("image_support", 0)),
        "host_unified_memory": d.unified_memory,
        "profiling_timer_resolution_ns": get("profiling_timer_resolution"),
        "extensions": list(d.extensions),
    })
    if args.json:
        print(json.dumps(record, indent=2))
        return
    width = max(len(k) for k in record)
    for key, value in record.items():
        if key == "extensions":
            value = "\n".join([""] + [" " * (width + 2) + e for e in value]) if value else "none"
        elif key in ("global_mem", "local_mem", "max_alloc", "max_constant_buffer_size",
                     "global_mem_cache_size") and isinstance(value, int):
            value = f"{value:,} bytes ({value / 2**20:,.1f} MiB)"
        print(f"{key.ljust(width)}  {value}")


def _configure_info(p):
    p.add_argument("spec", nargs="?", metavar="DEVICE", help="a device spec (default: the best)")
    p.add_argument("--json", action="store_true", help="print as JSON")


cmd_info.configure = _configure_info


@command("doctor", "check the OpenCL installation and say how to fix what is wrong")
def cmd_doctor(args):
    problems = 0

    def report(ok, text, fix=None):
        nonlocal problems
        print(f"[{'ok' if ok else 'FAIL'}] {text}")
        if not ok:
            problems += 1
            if fix:
                print(f"       fix: {fix}")

    print(f"clkit {_version()}, pyopencl {cl.VERSION_TEXT}, numpy {np.__version__}, "
          f"Python {sys.version.split()[0]}")
    dirs = _icd.vendor_dirs()
    for folder in dirs:
        report(folder.is_dir(), f"ICD folder {folder} exists",
               f"install a driver, e.g. `{_icd.CPU_DRIVER_HINT}`")
    icds = _icd.icd_files()
    if not icds:
        report(False, "no .icd file registers a driver", f"`{_icd.CPU_DRIVER_HINT}`")
    for icd in icds:
        report(icd.error is None, f"{icd.path} -> {icd.library or '(empty)'}"
               + (f": {icd.error}" if icd.error else ": loads and reports a platform"),
               "reinstall that driver, or remove the .icd file if the driver is gone")
    nvidia = _icd.unregistered_nvidia()
    if nvidia:
        report(False, f"NVIDIA's OpenCL library {nvidia} is not registered", _icd.nvidia_fix(nvidia))
    try:
        found = all_devices()
    except ClkitError as exc:
        report(False, str(exc))
        found = []
    for d in found:
        report(True, f"device {d}: {d.version}, driver {d.driver}")
    visible = set(devices()) if found else set()
    for name in ("CLKIT_DEVICE", "CLKIT_VISIBLE_DEVICES"):
        value = os.environ.get(name)
        if value is None:
            continue
        try:
            select() if name == "CLKIT_DEVICE" else devices()
            report(True, f"{name}={value} matches a device")
        except ClkitError as exc:
            report(False, f"{name}={value}: {exc}", f"unset {name} or give it a listed device")
    for d in sorted(visible, key=lambda d: d.id):
        try:
            _smoke_test(d)
            report(True, f"device {d.id} builds and runs a kernel")
        except ClkitError as exc:
            report(False, f"device {d.id} failed to run a test kernel: {exc}",
                   "update or reinstall its driver")
    from ._cache import cache_dir
    folder = cache_dir()
    if folder is None:
        report(True, "kernel cache is off (CLKIT_CACHE=0)")
    else:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            writable = os.access(folder, os.W_OK)
        except OSError:
            writable = False
        report(writable, f"kernel cache {folder} is writable",
               "set CLKIT_CACHE_DIR to a writable folder, or CLKIT_CACHE=0")
    print(f"\n{problems} problem(s) found" if problems else "\neverything works")
    return 1 if problems else 0


cmd_doctor.configure = lambda p: None


def _smoke_test(device: Device) -> None:
    """Build and run a tiny kernel on ``device``; raise if its result is wrong."""
    from ._errors import LaunchError
    from ._program import Program
    prg = Program.from_source("__kernel void clkit_doctor(__global int* x) "
                              "{ x[get_global_id(0)] = 3 * (int)get_global_id(0); }",
                              name="<doctor>")
    x = np.zeros(64, np.int32)
    prg.clkit_doctor(x, device=device)
    if not np.array_equal(x, 3 * np.arange(64)):
        raise LaunchError("the test kernel ran but returned wrong values")


def _version():
    from . import __version__
    return __version__


def build_parser() -> argparse.ArgumentParser:
    from . import _cli_images  # noqa: F401  registers the image commands (it imports this module)
    from . import _cli_check  # noqa: F401  registers `clkit check`
    from . import _cli_bench  # noqa: F401  registers `clkit bench`
    from . import _cli_trace  # noqa: F401  registers `clkit trace`
    parser = _Parser(prog="clkit", description="Run OpenCL kernels on any device.")
    parser.add_argument("--version", action="version", version=f"clkit {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (fn, help_text) in _COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--device", metavar="SPEC",
                       help="device spec: P:D, gpu, cpu, gpu:1, a name such as pocl or nvidia")
        fn.configure(p)
        p.set_defaults(func=fn)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 2
        return args.func(args) or 0
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (UsageError, ClkitError, ValueError, TypeError, OSError) as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"clkit: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("clkit: interrupted", file=sys.stderr)
        return 130
