"""The colours of Mandelbrot pictures, shared by ``clkit mandelbrot`` and ``clkit.mpi``."""

from __future__ import annotations

import math

import numpy as np

# A gradient from deep blue through white to orange and back to black, the stops of a classic
# fractal palette. Counts are spread by a logarithm so that the thin bands near the set get
# most of the colours; points in the set are black.
_STOPS = np.array([0.0, 0.16, 0.42, 0.6425, 0.8575, 1.0])
_COLOURS = np.array([[0, 7, 100], [32, 107, 203], [237, 255, 255], [255, 170, 0], [0, 2, 0],
                     [0, 0, 0]], np.float64)


def colorize(counts: np.ndarray, max_iter: int) -> np.ndarray:
    """An HxWx3 uint8 picture of Mandelbrot iteration counts (``max_iter``: in the set, black).

    Examples
    --------
    >>> import numpy as np
    >>> from clkit._io.palette import colorize
    >>> colorize(np.array([[1, 256]]), 256)[0, 1].tolist()
    [0, 0, 0]
    """
    t = np.log(np.maximum(counts, 1)) / math.log(max(max_iter, 2))
    rgb = np.stack([np.interp(t, _STOPS, _COLOURS[:, c]) for c in range(3)], axis=-1)
    rgb[counts >= max_iter] = 0
    return np.rint(rgb).astype(np.uint8)


def full_view(width: int, height: int) -> tuple:
    """The window (xmin, xmax, ymin, ymax) showing the whole set at this picture's aspect ratio.

    Centred on -0.5, at least 3 units wide and high, widened along one axis
    so that a pixel is square and nothing is stretched.

    Examples
    --------
    >>> from clkit._io.palette import full_view
    >>> full_view(800, 600)
    (-2.5, 1.5, -1.5, 1.5)
    """
    half_h = 1.5
    half_w = max(1.5, half_h * width / height)
    half_h = half_w * height / width
    return -0.5 - half_w, -0.5 + half_w, -half_h, half_h
