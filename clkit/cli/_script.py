"""The script argument of the commands that run a user's Python script (check, trace)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._command import UsageError


def add_script_arguments(p: argparse.ArgumentParser) -> None:
    """``SCRIPT.py`` and the arguments after it, all of which are the script's.

    One list for both: a single positional ``SCRIPT.py`` would take a ``--`` right after it as
    its own and drop it, so that ``clkit trace s.py -- -o x`` could not give the script ``-o``.
    """
    p.add_argument("script_and_args", nargs=argparse.REMAINDER, metavar="SCRIPT.py [ARGS]",
                   help="the Python script to run, and its arguments")


def script_to_run(args: argparse.Namespace) -> tuple[Path, list]:
    """The script ``args`` name, checked to be a file before anything runs, and its arguments."""
    words = list(args.script_and_args)
    if words[:1] == ["--"]:
        words = words[1:]
    if not words:
        raise UsageError(f"give the Python script to run: clkit {args.command} SCRIPT.py "
                         "[ARGS...]")
    script = Path(words[0])
    if not script.is_file():
        raise UsageError(f"{script}: no such script" if not script.exists()
                         else f"{script} is not a file; give the Python script to run")
    return script, words[1:]
