"""``clkit doctor``: check the OpenCL installation and say how to fix what is wrong."""

from __future__ import annotations

import os
import sys

import numpy as np
import pyopencl as cl

from .._build.build import cache_dir
from .._errors import ClkitError, LaunchError
from .._platform import icd as _icd, oclgrind as _oclgrind
from .._platform.devices import Device, all_devices, devices, select
from ._command import Command


def smoke_test(device: Device) -> None:
    """Build and run a tiny kernel on ``device``; raise if its result is wrong."""
    from .._launch.program import Program
    prg = Program.from_source("__kernel void clkit_doctor(__global int* x) "
                              "{ x[get_global_id(0)] = 3 * (int)get_global_id(0); }",
                              name="<doctor>")
    x = np.zeros(64, np.int32)
    prg.clkit_doctor(x, device=device)
    if not np.array_equal(x, 3 * np.arange(64)):
        raise LaunchError("the test kernel ran but returned wrong values")


class Doctor(Command):
    def run(self, args):
        from .. import __version__
        problems = 0

        def report(ok, text, fix=None):
            nonlocal problems
            print(f"[{'ok' if ok else 'FAIL'}] {text}")
            if not ok:
                problems += 1
                if fix:
                    print(f"       fix: {fix}")

        print(f"clkit {__version__}, pyopencl {cl.VERSION_TEXT}, numpy {np.__version__}, "
              f"Python {sys.version.split()[0]}")
        for folder in _icd.vendor_dirs():
            report(folder.is_dir(), f"ICD folder {folder} exists",
                   f"install a driver, e.g. `{_icd.CPU_DRIVER_HINT}`")
        icds = _icd.icd_files()
        if not icds:
            report(False, "no .icd file registers a driver", f"`{_icd.CPU_DRIVER_HINT}`")
        for icd in icds:
            report(icd.error is None, f"{icd.path} -> {icd.library or '(empty)'}"
                   + (f": {icd.error}" if icd.error else ": loads and reports a platform"),
                   _icd.load_fix(icd) or
                   "reinstall that driver, or remove the .icd file if the driver is gone")
        for library in _icd.unregistered_pip_drivers():
            # installed but not asked for: a note, not a problem
            package, icd_name = _icd.PIP_DRIVERS[library.name]
            print(f"[note] {library} ({package} from pip) is installed but no .icd file "
                  f"registers it\n       to use it: "
                  f"{_icd.register_command(library, _icd.vendor_dirs()[0] / icd_name)}")
        oclgrind = None if _oclgrind.registered() else _oclgrind.find_library()
        if oclgrind is not None:
            # apt-get install oclgrind registers no .icd file: not a problem either, since
            # clkit check and CLKIT_DEBUG=oclgrind register it for their own process
            print(f"[note] Oclgrind's driver {oclgrind} is installed but no .icd file registers "
                  "it, so it is no device here (clkit check uses it all the same)\n"
                  f"       to list it as a device: "
                  f"{_icd.register_command(oclgrind, _icd.vendor_dirs()[0] / 'oclgrind.icd')}")
        nvidia = _icd.unregistered_nvidia()
        if nvidia:
            report(False, f"NVIDIA's OpenCL library {nvidia} is not registered",
                   _icd.nvidia_fix(nvidia))
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
                smoke_test(d)
                report(True, f"device {d.id} builds and runs a kernel")
            except ClkitError as exc:
                report(False, f"device {d.id} failed to run a test kernel: {exc}",
                       "update or reinstall its driver")
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
