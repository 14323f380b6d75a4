"""``clkit check SCRIPT.py [ARGS...]``: run a script with every kernel checked by Oclgrind.

The script runs in a child process on the Oclgrind simulator (``CLKIT_DEVICE=oclgrind``) with
its checks on: out-of-bounds and unaligned accesses, data races, reads of uninitialised values,
barriers a work-group does not all reach, and failed OpenCL calls (see :mod:`clkit._platform.oclgrind`).
The script's output passes through; Oclgrind's diagnostics are shown on stderr as they come, and
a last line counts them.  Exit status: 1 if there was any diagnostic, else the script's own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .._platform import oclgrind as _oclgrind
from ._command import Command, UsageError
from ._script import add_script_arguments, script_to_run

# The folder that holds the clkit package this command runs from.
_SOURCE_ROOT = str(Path(__file__).resolve().parents[2])


def child_environment(device: str | None) -> dict:
    """This process's environment, set up for Oclgrind (and ``--device``)."""
    try:
        env = _oclgrind.environment()
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    if device:
        env["CLKIT_DEVICE"] = device
    # The child imports the clkit this command runs from, wherever the script lives.
    env["PYTHONPATH"] = os.pathsep.join([_SOURCE_ROOT] + [
        p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != _SOURCE_ROOT])
    return env


class Check(Command):
    def arguments(self, p):
        add_script_arguments(p)
        p.epilog = ("The script runs with CLKIT_DEVICE=oclgrind (or --device) and "
                    "CLKIT_DEBUG=oclgrind; kernels it runs on other devices are not checked. "
                    "Oclgrind runs kernels about 1000 times slower than a CPU: use small inputs.")

    def run(self, args):
        script, script_args = script_to_run(args)
        env = child_environment(args.device)
        err = sys.stderr

        elsewhere = []

        def echo(line):
            if line.startswith(_oclgrind.NOT_CHECKED):
                elsewhere.append(line[len(_oclgrind.NOT_CHECKED):])
            err.write(line + "\n")
            err.flush()

        def show(diagnostic):
            err.write(f"\n{diagnostic.text}\n\n")
            err.flush()

        found = _oclgrind.DiagnosticFilter(echo, show)
        try:
            proc = subprocess.Popen([sys.executable, str(script), *script_args], env=env,
                                    stderr=subprocess.PIPE)
            try:
                for raw in proc.stderr:
                    found.feed(raw.decode("utf-8", "replace"))
                found.close()
            finally:
                status = proc.wait()
        finally:
            _oclgrind.cleanup()
        diagnostics = found.diagnostics
        unchecked = ""
        if elsewhere:  # the script chose other devices with device=
            unchecked = (f"; {len(elsewhere)} kernel{'s' if len(elsewhere) > 1 else ''} ran on "
                         f"{'other devices' if len(elsewhere) > 1 else 'another device'}, "
                         "not checked (see above)")
        if diagnostics:
            kernels = sorted({d.kernel for d in diagnostics if d.kernel})
            where = f" in kernel{'s' if len(kernels) > 1 else ''} {', '.join(kernels)}" \
                if kernels else ""
            print(f"clkit check: {_oclgrind.summary(diagnostics, limit=0).splitlines()[0]}"
                  f"{where} (script exit status {status}){unchecked}", file=err)
            return 1
        print(f"clkit check: no Oclgrind diagnostics in {script} (script exit status {status})"
              f"{unchecked}", file=err)
        return status
