"""Gaussian taps, and convolution masks in the form the kernels take (flipped, separable or not)."""

from __future__ import annotations

import functools

import numpy as np

from .checks import check_number

#: The most weights of a 2-D mask that gaussian_blur builds (128 MiB of float64 on the host).
MAX_MASK_SIZE = 1 << 24


def gaussian_taps(sigma: float, truncate: float = 4.0) -> np.ndarray:
    """scipy.ndimage's 1-D Gaussian: radius ``int(truncate * sigma + 0.5)``, normalised.

    The weights :func:`clkit.kernels.gaussian_blur` filters each axis with.

    Parameters
    ----------
    sigma : float
        Standard deviation in pixels; 0 gives the single tap 1.
    truncate : float
        Radius in standard deviations.

    Returns
    -------
    ndarray
        float64, ``2 * radius + 1`` weights summing to 1.

    Raises
    ------
    ArgumentValueError
        A negative ``sigma``, a non-positive ``truncate``, or a mask larger than clkit
        handles.

    Examples
    --------
    >>> from clkit.kernels import gaussian_taps
    >>> gaussian_taps(1.0, truncate=1.0).round(3)
    array([0.274, 0.452, 0.274])
    """
    sigma = check_number("gaussian_taps", "sigma", sigma, non_negative=True)
    truncate = check_number("gaussian_taps", "truncate", truncate, positive=True)
    if sigma == 0:
        return np.ones(1)
    return gaussian_kernel1d(sigma, 0, int(truncate * sigma + 0.5))


def gaussian_kernel1d(sigma: float, order: int, radius: int) -> np.ndarray:
    """The weights of scipy.ndimage's 1-D Gaussian (or its ``order``-th derivative), in
    convolution order, ``2 * radius + 1`` of them: the weights of both APIs' Gaussians (those of
    order 0 equal scipy's to the bit, the derivatives' to a few ulps).

    The derivative of ``exp(-x**2 / (2 sigma**2))`` of order n is the Gaussian times
    ``(-1)**n He_n(x / sigma) / sigma**n`` (He: the probabilists' Hermite polynomials).
    """
    if order < 0:
        raise ValueError("order must be non-negative")
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    phi = np.exp(-0.5 / (sigma * sigma) * x ** 2)
    phi /= phi.sum()
    if order == 0:
        return phi
    t = x / sigma
    h_prev, h = np.ones_like(t), t
    for k in range(1, order):
        h_prev, h = h, t * h - k * h_prev
    return (-1) ** order * h / sigma ** order * phi


def separable_factors(corr: np.ndarray, acc) -> tuple | None:
    """(column, row) with ``corr == outer(column, row)`` to a few ulps of ``acc``, else None."""
    return _separable(corr.tobytes(), corr.shape, np.dtype(acc).char)


@functools.lru_cache(maxsize=64)
def _separable(data: bytes, shape: tuple, acc: str):
    corr = np.frombuffer(data, np.float64).reshape(shape)
    if corr.shape[0] < 2 or corr.shape[1] < 2 or not np.all(np.isfinite(corr)) or \
            not np.any(corr):
        return None
    # The column and the row through the largest weight: for a rank-1 mask their products give
    # every weight back to rounding, and a row or column of zeros stays exactly zero.
    i, j = np.unravel_index(np.argmax(np.abs(corr)), corr.shape)
    col, row = corr[:, j].copy(), corr[i, :] / corr[i, j]
    # Rank 1 weight by weight: each product col[i] * row[j] must equal its weight to a few ulps
    # of the accumulation type, and a weight of 0 must be 0.  A bound on the whole mask (such
    # as on its second singular value) would let a small weight go wrong, and with it the
    # pixels where that weight meets the image's brightest values.
    error = np.abs(np.outer(col, row) - corr)
    if np.any(error > 8 * np.finfo(acc).eps * np.abs(corr)):
        return None
    # The passes leave out a tap whose column or row weight is 0, scipy one whose own weight
    # is: the same taps, unless a product of two tiny factors underflowed to 0.
    if not np.array_equal(corr == 0, np.logical_or.outer(col == 0, row == 0)):
        return None
    return col, row


@functools.lru_cache(maxsize=64)
def correlation_mask(data: bytes, shape: tuple, dtype: str, acc: str):
    """(corr, anchor, factors) of a convolution mask given by its bytes.

    ``corr`` is the mask flipped into correlation form, without the weights
    scipy.ndimage leaves out; ``anchor`` = taps (above, left of) the centre;
    ``factors`` its separable factors, or None.  Cached by the mask's bytes,
    so that a mask passed again costs its hash.
    """
    m = np.frombuffer(data, np.dtype(dtype)).reshape(shape)
    corr = m.astype(np.float64)[::-1, ::-1]
    # scipy.ndimage.convolve leaves out the weights of magnitude up to DBL_EPSILON
    corr = np.where(np.abs(corr) > np.finfo(np.float64).eps, corr, 0.0)
    corr.flags.writeable = False
    anchor = ((shape[0] - 1) // 2, (shape[1] - 1) // 2)
    return corr, anchor, separable_factors(corr, acc)
