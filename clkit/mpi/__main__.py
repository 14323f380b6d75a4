"""``mpiexec -n N python -m clkit.mpi COMMAND ...``: clkit's image commands across MPI ranks.

``gray``, ``convolve``, ``blur`` and ``mandelbrot`` are the ``clkit``
commands of the same names (:mod:`clkit.cli`: the same arguments, results and
files), on one input file, with no ``--device``: each rank runs on its own
local device (:func:`clkit.mpi.local_device`).  Every rank parses the same
command line; the root reads the input, the ranks compute their bands, and
the root writes the output (whole or not at all).  A mistake prints one line
``clkit.mpi: error: ...`` (from the rank that found it) and every rank exits
with status 2.
"""

from __future__ import annotations

import sys

from .. import mpi as library
from .._errors import ClkitError
from .._io import imageio as _imageio
from ..cli import Parser, UsageError, add_command
from ..cli.mandelbrot import Mandelbrot
from . import RankError, _comm, _together

ROOT = 0
NAMES = ("gray", "convolve", "blur", "mandelbrot")


def build_parser() -> Parser:
    parser = Parser(prog="python -m clkit.mpi", description="clkit's image commands across "
                    "MPI ranks (run with mpiexec -n N python -m clkit.mpi ...)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser,
                                required=True)
    for name in NAMES:
        add_command(sub, name)
    return parser


def run(args, comm) -> None:
    root = comm.Get_rank() == ROOT
    command = args.command_object
    if isinstance(command, Mandelbrot):
        out, fmt = _together(comm, lambda: command.output(args) if root else (None, None))
        width, height = args.size
        counts = library.mandelbrot(width, height, comm=comm, root=ROOT,
                                    **command.parameters(args))
        picture = command.picture(counts, fmt, args.max_iter) if root else None
        bits = 8
    else:
        image, bits = _together(comm, (lambda: command.read(args.input, fp64=True)) if root
                                else (lambda: (None, 8)))
        out = args.output
        picture = command.compute(image, args, library, comm=comm, root=ROOT)
    _together(comm, lambda: _imageio.write_image(out, picture, bits=bits) if root else None)
    if root:
        print(f"wrote {out} ({comm.Get_size()} ranks)")


def _error(exc) -> int:
    print(f"clkit.mpi: error: {' '.join(str(exc).split()) or type(exc).__name__}",
          file=sys.stderr)
    return 2


def main(argv=None) -> int:
    comm = _comm(None)
    try:
        args = build_parser().parse_args(argv)
    except UsageError as exc:  # the same mistake on every rank: the root says it once
        return _error(exc) if comm.Get_rank() == ROOT else 2
    try:
        run(args, comm)
    except RankError:
        return 2  # the rank that failed has said why
    except (UsageError, ClkitError, OSError) as exc:
        return _error(exc)
    return 0


sys.exit(main())
