"""``clkit gray IN OUT``: colour images to grayscale (luma)."""

from __future__ import annotations

import numpy as np

from . import _types
from ._images import ImageCommand


class Gray(ImageCommand):
    color = True
    out_help = "the gray image (a folder when IN is one)"

    def options(self, p):
        p.add_argument("--weights", type=_types.weights, default="bt601", metavar="W",
                       help="bt601 (default, as OpenCV), bt709, or three numbers R,G,B")

    def prepare(self, image, fp64):
        if image.dtype != np.uint8 and image.dtype != np.float32:
            return image.astype(np.float32)  # 16-bit and other types: computed in float
        return image

    def compute(self, image, args, library, **where):
        return library.grayscale(image, weights=args.weights, **where)
