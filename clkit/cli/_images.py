"""What the image commands share: reading, filtering with one library call, writing.

Results keep the input's pixel depth: 8-bit images give 8-bit images
(clipped to 0..255 and rounded), 16-bit images 16-bit ones, 32-bit images
(float or integer TIFFs) float32 TIFFs; ``.npy`` outputs keep the exact
float32 values (and the signs of derivative filters).

An :class:`ImageCommand` says how it reads an image (:meth:`~ImageCommand.prepare`)
and which library function it calls (:meth:`~ImageCommand.compute`);
``clkit`` runs it on one device over a file or a folder, ``python -m
clkit.mpi`` across MPI ranks on one file.
"""

from __future__ import annotations

import numpy as np

from .. import kernels
from .._io import imageio as _imageio
from . import _types
from ._batch import devices_of, for_each_file
from ._command import Command

MODES = ("reflect", "constant", "nearest", "mirror", "wrap")


def describe(array: np.ndarray, bits: int) -> str:
    """`` (WxH, C channels, 8-bit)``: what was written (``bits`` 0: the array's dtype)."""
    h, w = array.shape[:2]
    channels = 1 if array.ndim == 2 else array.shape[2]
    kind = {0: f"{array.dtype}", 32: "32-bit float"}.get(bits, f"{bits}-bit")
    return f" ({w}x{h}, {channels} channel{'s' if channels != 1 else ''}, {kind})"


def bits_of(image: np.ndarray) -> int:
    """The pixel depth an output keeps: 16 for 16-bit inputs, 32 for floats and integers of
    32 bits and more (TIFF keeps them), else 8."""
    if image.dtype == np.uint16:
        return 16
    return 32 if image.dtype.kind == "f" or image.dtype.itemsize >= 4 else 8


def add_io(p, in_help, out_help, in_name="IN", out_name="OUT"):
    p.add_argument("input", metavar=in_name, help=in_help)
    p.add_argument("output", metavar=out_name, help=out_help)


def add_border(p):
    p.add_argument("--mode", choices=MODES, default="reflect",
                   help="how the image continues past its border, as in scipy.ndimage "
                        "(default: reflect)")
    p.add_argument("--cval", type=_types.finite, default=0.0, metavar="V",
                   help="the value outside the image for --mode constant (default: 0)")


class ImageCommand(Command):
    """IN -> one library function -> OUT, for a file or a folder of them."""

    color = False  # read every image as RGB(A)
    in_help = "an image (PNG, JPEG, TIFF, .npy, ...) or a folder of them"
    out_help = ""

    def arguments(self, p):
        add_io(p, self.in_help, self.out_help)
        self.options(p)

    def options(self, p) -> None:
        """Add the options of this command's library function."""

    def prepare(self, image: np.ndarray, fp64: bool) -> np.ndarray:
        """The image as the library function takes it (``fp64``: the device has doubles)."""
        return image

    def compute(self, image, args, library, **where):
        """Call this command's function of ``library`` (:mod:`clkit.kernels` or
        :mod:`clkit.mpi`) on ``image``; ``where`` is its ``device=`` or ``comm=``."""
        raise NotImplementedError

    def read(self, src, fp64: bool) -> tuple[np.ndarray, int]:
        """The image in file ``src`` as the library function takes it, and the pixel depth
        (8 or 16) its result keeps."""
        image = _imageio.read_image(src, color=self.color)
        return self.prepare(image, fp64), bits_of(image)

    def run(self, args):
        devices = devices_of(args.device)
        fp64 = all(d.fp64 for d in devices)

        def process(src, dst, device):
            image, bits = self.read(src, fp64)
            result = self.compute(image, args, kernels, device=device)
            return describe(result, _imageio.write_image(dst, result, bits=bits))

        for_each_file(args, process, devices)


class FilterCommand(ImageCommand):
    """convolve and blur: integers are filtered in float32, as the library does."""

    def options(self, p):
        add_border(p)

    def prepare(self, image, fp64):
        if image.dtype.itemsize == 8 and image.dtype.kind in "iu":
            return image.astype(np.float32)  # numpy's default integers, e.g. from np.arange
        if image.dtype == np.float16:
            return image.astype(np.float32)  # as gray takes it: the result is float32 anyway
        if image.dtype == np.float64 and not fp64:
            return image.astype(np.float32)  # this device has no double precision
        return image
