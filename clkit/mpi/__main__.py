"""``mpiexec -n N python -m clkit.mpi SUBCOMMAND ...``: the image commands across MPI ranks.

Every rank parses the same command line; the root reads the input, the
ranks filter their bands on their own devices, and the root writes the
output (whole or not at all).  A mistake prints one line
``clkit.mpi: error: ...`` (from the rank that found it) and every rank exits
with status 2.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from .. import _imageio
from .._cli_images import (MODES, _bits_of, _finite, _positive, _positive_int, _sigma, _size,
                           _weights, colorize, parse_mask)
from .._errors import ClkitError
from . import RankError, _comm, _together, convolve, gaussian_blur, grayscale, mandelbrot

ROOT = 0


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise ClkitError(f"{message} (see `python -m clkit.mpi {self.prog.split()[-1]} --help`)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="clkit.mpi", description="clkit's image commands across MPI ranks "
                     "(run with mpiexec -n N python -m clkit.mpi ...)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser,
                                required=True)
    for name, help_text in (("gray", "RGB to gray"), ("convolve", "2-D convolution"),
                            ("blur", "Gaussian blur")):
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("input", metavar="IN", help="an image file (PNG, JPEG, TIFF, .npy, ...)")
        p.add_argument("output", metavar="OUT", help="the result's file")
        if name == "gray":
            p.add_argument("--weights", type=_weights, default="bt601")
            continue
        if name == "convolve":
            p.add_argument("--mask", required=True, type=parse_mask,
                           help="gaussian:SIGMA, box:N, sobel-x, sobel-y, sharpen or FILE.npy")
        else:
            p.add_argument("--sigma", required=True, type=_sigma)
            p.add_argument("--truncate", type=_positive, default=4.0)
        p.add_argument("--mode", choices=MODES, default="reflect")
        p.add_argument("--cval", type=_finite, default=0.0)
    p = sub.add_parser("mandelbrot", help="the Mandelbrot set",
                       description="the Mandelbrot set (PNG, or raw counts as .npy)")
    p.add_argument("output", metavar="OUT")
    p.add_argument("--size", type=_size, default=(1920, 1080), metavar="WxH")
    p.add_argument("--max-iter", type=_positive_int, default=256, metavar="N")
    return parser


def _read(args):
    image = _imageio.read_image(args.input, color=args.command == "gray")
    if args.command == "gray":
        return image if image.dtype in (np.uint8, np.float32) else image.astype(np.float32)
    if image.dtype.itemsize == 8 and image.dtype.kind in "iu":
        image = image.astype(np.float32)
    return image


def run(args, comm) -> None:
    rank = comm.Get_rank()
    if args.command == "mandelbrot":
        width, height = args.size
        result = mandelbrot(width, height, comm=comm, root=ROOT, max_iter=args.max_iter)
        picture = result if rank != ROOT or args.output.endswith(".npy") else \
            colorize(result[::-1], args.max_iter)
        bits = 8
    else:
        image = _together(comm, _read if rank == ROOT else (lambda a: None), args)
        if args.command == "gray":
            result = grayscale(image, args.weights, comm=comm, root=ROOT)
        elif args.command == "convolve":
            result = convolve(image, args.mask, args.mode, args.cval, comm=comm, root=ROOT)
        else:
            result = gaussian_blur(image, args.sigma, args.mode, args.cval, args.truncate,
                                   comm=comm, root=ROOT)
        picture = result
        bits = _bits_of(image) if rank == ROOT else 8
    _together(comm, lambda: _imageio.write_image(args.output, picture, bits=bits)
              if rank == ROOT else None)
    if rank == ROOT:
        print(f"wrote {args.output} ({comm.Get_size()} ranks)")


def _error(exc) -> int:
    print(f"clkit.mpi: error: {' '.join(str(exc).split()) or type(exc).__name__}",
          file=sys.stderr)
    return 2


def main(argv=None) -> int:
    comm = _comm(None)
    try:
        args = build_parser().parse_args(argv)
    except ClkitError as exc:  # the same mistake on every rank: the root says it once
        return _error(exc) if comm.Get_rank() == ROOT else 2
    try:
        run(args, comm)
    except RankError:
        return 2  # the rank that failed has said why
    except (ClkitError, ValueError, TypeError, OSError) as exc:
        return _error(exc)
    return 0


sys.exit(main())
