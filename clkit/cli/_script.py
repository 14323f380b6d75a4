"""The script argument of the commands that run a user's Python script (check, trace)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._command import UsageError


def add_script_arguments(p: argparse.ArgumentParser) -> None:
    """``SCRIPT.py`` and the arguments after it, all of which are the script's."""
    p.add_argument("script", metavar="SCRIPT.py", help="the Python script to run")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                   help="arguments for the script")


def script_to_run(args: argparse.Namespace) -> Path:
    """The script ``args`` name, checked to be a file before anything runs."""
    script = Path(args.script)
    if not script.is_file():
        raise UsageError(f"{script}: no such script" if not script.exists()
                         else f"{script} is not a file; give the Python script to run")
    return script
