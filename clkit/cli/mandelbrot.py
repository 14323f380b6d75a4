"""``clkit mandelbrot OUT``: a picture of the Mandelbrot set, or its iteration counts."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from .. import kernels
from .._errors import ClkitError
from .._io import imageio as _imageio
from .._io.palette import colorize, full_view
from .._platform.devices import select
from . import _types
from ._command import Command, UsageError


class Mandelbrot(Command):
    def arguments(self, p):
        p.add_argument("output", metavar="OUT",
                       help="a picture (.png, .jpg, ...) or .npy for the raw int32 counts "
                            "(row 0 = YMIN)")
        p.add_argument("--size", type=_types.pixels, default=(800, 600), metavar="WxH",
                       help="width x height in pixels (default: 800x600)")
        p.add_argument("--max-iter", type=_types.positive_int, default=256, metavar="N",
                       help="iterations before a point counts as inside the set (default: 256)")
        p.add_argument("--window", type=_types.window, default=None,
                       metavar="XMIN,XMAX,YMIN,YMAX",
                       help="the part of the complex plane to draw (default: the whole set, "
                            "centred on -0.5 and fitted to the size's aspect ratio)")
        # "-2,1,-1.5,1.5" starts with "-": argparse before Python 3.13 takes it for an option
        # unless it is a plain negative number. 3.13 accepts anything that starts like one.
        if hasattr(p, "_negative_number_matcher"):
            p._negative_number_matcher = re.compile(r"-\.?\d")
        p.add_argument("--double", action="store_true",
                       help="compute in double precision, for deep zooms (needs a device with "
                            "fp64)")

    @staticmethod
    def output(args) -> tuple[Path, str]:
        """The file to write and its format; a folder gets ``mandelbrot.png``."""
        out = Path(args.output)
        if out.is_dir():
            out = out / "mandelbrot.png"
        fmt = _imageio.check_output(out)
        if fmt == "PLY":
            raise UsageError(f"{out}: a PLY file holds points; name the output .png or .npy")
        return out, fmt

    @staticmethod
    def parameters(args) -> dict:
        """The keyword arguments of :func:`clkit.kernels.mandelbrot` (less ``device``)."""
        width, height = args.size
        xmin, xmax, ymin, ymax = args.window or full_view(width, height)
        return {"xmin": xmin, "xmax": xmax, "ymin": ymin, "ymax": ymax,
                "max_iter": args.max_iter, "dtype": np.float64 if args.double else np.float32}

    @staticmethod
    def picture(counts: np.ndarray, fmt: str, max_iter: int) -> np.ndarray:
        """What the file holds: the counts for ``.npy``, else their colours, top row first."""
        # Row 0 is ymin; an image's first row is its top, where the imaginary part is largest.
        return counts if fmt == "NPY" else colorize(counts[::-1], max_iter)

    def run(self, args):
        device = select(args.device)
        out, fmt = self.output(args)
        width, height = args.size
        params = self.parameters(args)
        try:
            counts = kernels.mandelbrot(width, height, device=device, **params)
        except MemoryError:
            raise ClkitError(f"not enough memory for a {width}x{height} picture") from None
        _imageio.write_image(out, self.picture(counts, fmt, args.max_iter))
        print(f"wrote {out} ({width}x{height}, max_iter {args.max_iter}, window "
              f"{params['xmin']:g},{params['xmax']:g},{params['ymin']:g},{params['ymax']:g})")
