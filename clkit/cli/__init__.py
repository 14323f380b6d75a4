"""The ``clkit`` command.

Each subcommand is a :class:`~clkit.cli._command.Command` in a module of this
package, listed in :data:`COMMANDS`; ``main`` imports only the module of the
command it runs, so ``clkit devices`` does not load the benchmarks, and a new
command is a new module plus one row.

Every subcommand takes ``--device``.  A mistake in the input prints one line
``clkit: error: ...`` on stderr and exits with status 2, without a
traceback.  Any other exception is a bug in clkit: exit status 1, with the
traceback under ``--debug`` (or with ``CLKIT_DEBUG`` set).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import threading
import traceback

from .._errors import ClkitError
from ._command import Command, Parser, UsageError

__all__ = ["COMMANDS", "Command", "Parser", "UsageError", "add_command", "build_parser",
           "create_command", "main"]

#: name -> (module of clkit.cli, its Command class, one line of help), in the order of --help.
COMMANDS = {
    "devices": ("devices", "Devices", "list every OpenCL platform and device with its id"),
    "info": ("info", "Info", "everything about one device, as clinfo shows it"),
    "doctor": ("doctor", "Doctor",
               "check the OpenCL installation and say how to fix what is wrong"),
    "hello": ("hello", "Hello", "run the hello-world kernel: the device writes \"Hello, World!\""),
    "gray": ("gray", "Gray", "convert colour images to grayscale (luma)"),
    "convolve": ("convolve", "Convolve",
                 "convolve images with a 2-D mask (scipy.ndimage.convolve's result)"),
    "blur": ("blur", "Blur", "Gaussian blur (scipy.ndimage.gaussian_filter's result)"),
    "mandelbrot": ("mandelbrot", "Mandelbrot",
                   "draw the Mandelbrot set (PNG), or write its iteration counts (.npy)"),
    "points": ("points", "Points",
               "turn depth images into 3-D point clouds (PLY) through a pinhole camera"),
    "check": ("check", "Check", "run a Python script with its kernels checked by Oclgrind "
                                "(memory errors, data races, uninitialised values); exit status "
                                "1 if Oclgrind reports any"),
    "bench": ("bench", "Bench",
              "time each kernel against serial Python, NumPy, OpenCV, torch and every device"),
    "warmup": ("warmup", "Warmup", "build the convolve and blur kernels that later calls will "
                                   "use, into the disk cache"),
    "trace": ("trace", "TraceScript", "run a Python script under a trace of every kernel and "
                                      "transfer clkit makes; print the summary, save the "
                                      "timeline (-o) or draw it (--plot)"),
}

DEVICE_HELP = ("device spec: P:D, gpu, cpu, gpu:1, a name such as pocl or nvidia; the image "
               "commands also take 'all' or specs separated by commas")


def create_command(name: str) -> Command:
    """The command ``name``, its module imported now."""
    module, cls, _ = COMMANDS[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)()


def add_command(sub, name: str, common=None) -> argparse.ArgumentParser:
    """Add command ``name`` to the subparsers ``sub``, with ``common(parser)``'s arguments
    first and then its own (its module is imported now)."""
    summary = COMMANDS[name][2]
    p = sub.add_parser(name, help=summary, description=summary)
    if common is not None:
        common(p)
    command = create_command(name)
    command.arguments(p)
    p.set_defaults(command_object=command, command_parser=p)
    return p


def _common(p) -> None:
    p.add_argument("--device", metavar="SPEC", help=DEVICE_HELP)
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help=argparse.SUPPRESS)


def _command_name(argv) -> str | None:
    """The subcommand named in ``argv``: its first word that is not an option."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(argv=()) -> argparse.ArgumentParser:
    """``clkit``'s parser; only the command that ``argv`` names gets its arguments."""
    from .. import __version__
    parser = Parser(prog="clkit", description="Run OpenCL kernels on any device.")
    parser.add_argument("--version", action="version", version=f"clkit {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an unexpected error (also CLKIT_DEBUG=1)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    chosen = _command_name(argv)
    for name, (_, _, summary) in COMMANDS.items():
        if name == chosen:
            add_command(sub, name, _common)
        else:
            sub.add_parser(name, help=summary, description=summary)
    return parser


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


class _Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``timeout``, ``docker stop``), stopping the command as Ctrl-C does."""


@contextlib.contextmanager
def _sigterm_stops_like_ctrl_c():
    """Within: SIGTERM raises :class:`_Terminated`, so that files being written are finished or
    removed, where the default would end the process at once and leave their temporary files."""
    if threading.current_thread() is not threading.main_thread():
        yield  # (only the main thread may set handlers)
        return

    def stop(signum, frame):
        raise _Terminated

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv=None) -> int:
    """Run ``clkit`` with ``argv`` (default: the process's); returns the exit status."""
    with _sigterm_stops_like_ctrl_c():
        return _main(sys.argv[1:] if argv is None else list(argv))


def _main(argv: list) -> int:
    debug = "--debug" in argv or bool(os.environ.get("CLKIT_DEBUG", "").strip())
    try:
        parser = build_parser(argv)
        args, extra = parser.parse_known_args(argv)
        if extra:  # told by the command's parser, whose --help lists what it takes
            getattr(args, "command_parser", parser).error(
                f"unrecognized arguments: {' '.join(extra)}")
        if args.command is None:
            parser.print_help()
            return 2
        return args.command_object.run(args) or 0
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (UsageError, ClkitError, OSError) as exc:
        print(f"clkit: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except MemoryError as exc:  # the host's memory: an input or --size too large for it
        print(f"clkit: error: not enough memory on the host ({_one_line(exc)}); use smaller "
              "inputs or sizes", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        terminated = isinstance(exc, _Terminated)
        print(f"clkit: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
        return 143 if terminated else 130
    except Exception as exc:  # a bug in clkit, not a mistake in the input
        if debug:
            traceback.print_exc()
        print(f"clkit: internal error: {type(exc).__name__}: {_one_line(exc)} (a bug in clkit; "
              + ("please report it with the traceback above)" if debug else
                 "run again with --debug for the traceback)"), file=sys.stderr)
        return 1
