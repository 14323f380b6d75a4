"""``clkit blur IN OUT --sigma S``: scipy.ndimage.gaussian_filter's result on any device."""

from __future__ import annotations

from . import _types
from ._images import FilterCommand, add_border


class Blur(FilterCommand):
    out_help = "the blurred image (a folder when IN is one)"

    def options(self, p):
        p.add_argument("--sigma", required=True, type=_types.sigma, metavar="S",
                       help="standard deviation of the Gaussian, in pixels")
        p.add_argument("--truncate", type=_types.positive, default=4.0, metavar="T",
                       help="cut the Gaussian off at T sigmas (default: 4)")
        add_border(p)

    def compute(self, image, args, library, **where):
        return library.gaussian_blur(image, args.sigma, mode=args.mode, cval=args.cval,
                                     truncate=args.truncate, **where)
