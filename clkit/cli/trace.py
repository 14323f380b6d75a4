"""``clkit trace SCRIPT.py [ARGS...]``: run a script under :func:`clkit.trace` and print where
the time went.

The script runs in this process, as ``python SCRIPT.py ARGS`` would run it (its own
``sys.argv``, its folder first on ``sys.path``, ``__name__ == "__main__"``), inside one trace.
Its output passes through; the summary follows on stderr.  ``-o FILE.json`` saves the
timeline for Perfetto or chrome://tracing, ``--plot FILE.png`` draws it.  Exit status: the
script's own (1 if it raised).
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import traceback
from pathlib import Path

from .._trace.trace import LIMIT, Trace
from ._command import Command, Parser
from ._outputs import check_plot, output_folder
from ._script import add_script_arguments, script_to_run


def run_script(script: Path, argv: list, trace: Trace) -> int:
    """Run ``script`` as ``__main__`` with ``argv`` inside ``trace``; its exit status."""
    script = script.resolve()
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *argv]
    sys.path.insert(0, str(script.parent))
    try:
        with trace:
            runpy.run_path(str(script), run_name="__main__")
        return 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)  # sys.exit("message"), as Python itself reports it
        return 1
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the script's own failure: shown as Python would show it
        tb = exc.__traceback__
        while tb is not None and Path(tb.tb_frame.f_code.co_filename) != script:
            tb = tb.tb_next  # from the script's first frame on, without this module's
        traceback.print_exception(type(exc), exc, tb or exc.__traceback__)
        return 1
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def _take_own_options(args, rest: list) -> list:
    """The script's arguments of ``rest``; ``-o``, ``--plot`` and ``--limit`` among them are
    clkit's (set on ``args``).

    After ``--`` every argument is the script's (for a script with options of the same names).
    """
    after = []
    if "--" in rest:
        cut = rest.index("--")
        rest, after = rest[:cut], rest[cut + 1:]
    own = Parser(prog="clkit trace", add_help=False)
    _add_own_options(own)
    found, script_args = own.parse_known_args(rest)
    for name in ("output", "plot", "limit"):
        if getattr(found, name) is not None:
            setattr(args, name, getattr(found, name))
    return script_args + after


def _limit(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of commands, got {text!r}")
    return value


def _add_own_options(p, limit=None):
    p.add_argument("-o", "--output", metavar="FILE.json",
                   help="write the trace as Chrome trace-event JSON")
    p.add_argument("--plot", metavar="FILE.png", help="draw the timeline (needs matplotlib)")
    p.add_argument("--limit", type=_limit, default=limit, metavar="N",
                   help="the most commands kept (default %(default)s); later ones are counted")


class TraceScript(Command):
    def arguments(self, p):
        add_script_arguments(p)
        _add_own_options(p, LIMIT)
        p.epilog = ("-o, --plot and --limit are clkit's wherever they stand; arguments after -- "
                    "all go to the script. Copies made by pyopencl's own array methods (a.get(), "
                    "a.set()) are not clkit's and are not recorded.")

    def run(self, args):
        script, script_args = script_to_run(args)
        if args.script_and_args[:1] != ["--"]:  # (after a -- before the script: all the script's)
            script_args = _take_own_options(args, script_args)
        if args.output:
            output_folder(args.output, "-o")
        if args.plot:
            check_plot(args.plot)
        if args.device:
            os.environ["CLKIT_DEVICE"] = args.device
        t = Trace(args.limit)
        status = run_script(script, script_args, t)
        sys.stdout.flush()
        err = sys.stderr
        print(f"\n{t.summary()}", file=err)
        if args.output:
            t.save(args.output)
            print(f"clkit trace: wrote {args.output} (open it in https://ui.perfetto.dev or "
                  "chrome://tracing)", file=err)
        else:
            print("clkit trace: -o FILE.json saves the timeline for Perfetto or chrome://tracing",
                  file=err)
        if args.plot:
            t.plot(args.plot)
            print(f"clkit trace: wrote {args.plot}", file=err)
        return status
