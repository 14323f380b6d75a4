"""``clkit convolve IN OUT --mask SPEC``: scipy.ndimage.convolve's result on any device."""

from __future__ import annotations

from . import _types
from ._images import FilterCommand, add_border


class Convolve(FilterCommand):
    in_help = ("an image (PNG, JPEG, TIFF, .npy, ...) or a folder of them; "
               "each channel is filtered on its own")
    out_help = ("the result (a folder when IN is one); image files are clipped to 0..255 "
                "(0..65535 for 16-bit inputs), .npy keeps the float32 values and signs")

    def options(self, p):
        p.add_argument("--mask", required=True, type=_types.mask, metavar="MASK",
                       help="gaussian:SIGMA (normalised, radius int(4*SIGMA+0.5)), box:N (NxN "
                            "mean), sobel-x, sobel-y (derivatives, as scipy.ndimage.sobel), "
                            "sharpen ([[0,-1,0],[-1,5,-1],[0,-1,0]]), or FILE.npy (any 2-D "
                            "array)")
        add_border(p)

    def compute(self, image, args, library, **where):
        return library.convolve(image, args.mask, mode=args.mode, cval=args.cval, **where)
