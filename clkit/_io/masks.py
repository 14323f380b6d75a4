"""Convolution masks by name: the ``--mask`` language of ``clkit convolve`` and ``clkit.mpi``.

A spec is ``gaussian:SIGMA``, ``box:N``, ``sobel-x``, ``sobel-y``,
``sharpen`` or the path of a 2-D ``.npy`` array.  The masks are meant for
:func:`clkit.kernels.convolve`, which (like ``scipy.ndimage.convolve``)
flips the mask over the image.
"""

from __future__ import annotations

import math
import re

import numpy as np

from .._engine.stencil import gaussian_taps
from .._errors import ArgumentValueError

#: What a spec may be, for error messages and help texts.
SPECS = "gaussian:SIGMA, box:N, sobel-x, sobel-y, sharpen or a FILE.npy"

# sobel-x is the derivative along x (columns), positive where the image gets brighter to the
# right, equal to scipy.ndimage.sobel(axis=1); sobel-y along y (rows, downwards), sobel(axis=0).
NAMED = {
    "sobel-x": np.array([[1, 0, -1], [2, 0, -2], [1, 0, -1]], np.float64),
    "sobel-y": np.array([[1, 2, 1], [0, 0, 0], [-1, -2, -1]], np.float64),
    "sharpen": np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.float64),
}


def gaussian_mask(sigma: float) -> np.ndarray:
    """The normalised 2-D Gaussian of ``gaussian:SIGMA``.

    Radius ``int(4 * sigma + 0.5)`` (scipy's default truncation), so that
    ``convolve(image, gaussian_mask(s))`` equals ``gaussian_filter(image, s)``.

    Examples
    --------
    >>> from clkit._io.masks import gaussian_mask
    >>> gaussian_mask(1.0).shape
    (9, 9)
    """
    g = gaussian_taps(sigma)
    return np.outer(g, g)


def mask_from_spec(spec: str) -> np.ndarray:
    """The mask a spec names, as a 2-D float64 array.

    Parameters
    ----------
    spec : str
        ``gaussian:SIGMA`` (SIGMA > 0; see :func:`gaussian_mask`), ``box:N``
        (the NxN mean), ``sobel-x``, ``sobel-y``, ``sharpen``, or the path of
        a 2-D ``.npy`` array of finite numbers.

    Raises
    ------
    ArgumentValueError
        The spec names no mask, or its file is not a usable mask; the message
        lists the accepted forms.

    Examples
    --------
    >>> from clkit._io.masks import mask_from_spec
    >>> float(mask_from_spec("box:3").sum())
    1.0
    """
    name, _, arg = spec.strip().partition(":")
    key = name.lower()
    if key == "gaussian":
        sigma = _number(arg)
        if sigma is None or sigma <= 0:
            raise ArgumentValueError(f"mask {spec!r}: gaussian:SIGMA needs a sigma greater "
                                     "than 0, e.g. gaussian:1.5")
        return gaussian_mask(sigma)
    if key == "box":
        if not re.fullmatch(r"\s*\d+\s*", arg) or int(arg) < 1:
            raise ArgumentValueError(f"mask {spec!r}: box:N needs a whole number N >= 1, "
                                     "e.g. box:5")
        n = int(arg)
        return np.full((n, n), 1.0 / (n * n))
    if key in NAMED and not arg:
        return NAMED[key].copy()
    if spec.lower().endswith(".npy"):
        return _mask_file(spec)
    raise ArgumentValueError(f"unknown mask {spec!r}: use {SPECS}")


def _number(text: str) -> float | None:
    """A finite number, or None for no text."""
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ArgumentValueError(f"gaussian:SIGMA's sigma must be a number, not {text!r}") \
            from None
    if not math.isfinite(value):
        raise ArgumentValueError(f"gaussian:SIGMA's sigma must be a finite number, not {text!r}")
    return value


def _mask_file(path: str) -> np.ndarray:
    from .imageio import read_image  # numbers only, 2-D or 3-D, with clear errors
    mask = read_image(path)
    if mask.ndim != 2:
        raise ArgumentValueError(f"{path}: a mask is a 2-D array, not shape {mask.shape}")
    mask = mask.astype(np.float64)
    if not np.isfinite(mask).all():
        raise ArgumentValueError(f"{path}: the mask holds NaN or infinity")
    return mask
