"""A filter's stencil: what it reads past the edges and with which weights.

Border modes: the convolution kernels read image rows through a *row map*: for
each padded row a band reads, its row in the band's source rows, already folded
by the border mode (or -1 for a row of cval), so that one kernel serves every
band of every mode; columns are folded in the kernel itself (``clkit.h``).

Weights: Gaussian taps (both APIs' Gaussians and their derivatives, as scipy.ndimage
computes them) and convolution masks in the form the kernels take (flipped,
separable or not).
"""

from __future__ import annotations

import functools

import numpy as np

from .checks import check_number

# -- border modes ---------------------------------------------------------------------------

#: The border modes, as scipy.ndimage names them, and their names in the kernels.
MODES = {"reflect": "BORDER_REFLECT", "mirror": "BORDER_MIRROR", "nearest": "BORDER_NEAREST",
         "wrap": "BORDER_WRAP", "constant": "BORDER_CONSTANT"}
#: The same with scipy.ndimage's ``grid-*`` spellings, which its filters take as aliases.
SCIPY_MODES = {**MODES, "grid-mirror": "BORDER_REFLECT", "grid-wrap": "BORDER_WRAP",
               "grid-constant": "BORDER_CONSTANT"}
#: A mode's name from its name in the kernels.
NAMES = {border: mode for mode, border in MODES.items()}
#: clkit.h's numbers of the modes, which the generic builds take as a kernel argument.
NUMBERS = {border: i for i, border in enumerate(MODES.values())}


def fold(i, n: int, mode: str) -> np.ndarray:
    """Image coordinates ``i`` mapped into ``[0, n)`` as scipy.ndimage extends; -1 is cval."""
    i = np.asarray(i, dtype=np.int64)
    if mode == "reflect":
        m = np.mod(i, 2 * n)
        return np.where(m < n, m, 2 * n - 1 - m)
    if mode == "mirror":
        if n == 1:
            return np.zeros_like(i)
        m = np.mod(i, 2 * n - 2)
        return np.where(m < n, m, 2 * n - 2 - m)
    if mode == "nearest":
        return np.clip(i, 0, n - 1)
    if mode == "wrap":
        return np.mod(i, n)
    return np.where((i >= 0) & (i < n), i, -1)


@functools.lru_cache(maxsize=64)
def band_rows(height: int, r0: int, r1: int, kh: int, anchor_y: int, mode: str):
    """The image rows that output rows ``[r0, r1)`` read, and the band's row map.

    ``rows`` is a contiguous range when that is exactly what is needed, else
    the distinct rows, sorted (wrap mode at the edges, masks taller than the
    image); ``rowmap[p]`` is the index in ``rows`` of padded row ``p``, or -1.
    Cached: callers must not modify the arrays.
    """
    folded = fold(np.arange(r0 - anchor_y, r1 + kh - 1 - anchor_y), height, mode)
    inside = folded >= 0
    used = np.zeros(height, bool)
    used[folded[inside]] = True
    needed = np.flatnonzero(used)
    if needed.size == 0:  # every tap reads cval; the kernel never reads the source
        rows, rowmap = np.zeros(1, np.int64), folded.astype(np.int32)
    elif needed[-1] - needed[0] + 1 == needed.size:
        rows = np.arange(needed[0], needed[-1] + 1)
        rowmap = np.where(inside, folded - needed[0], -1).astype(np.int32)
    else:
        rows = needed
        rowmap = np.where(inside, np.searchsorted(needed, folded), -1).astype(np.int32)
    rows.flags.writeable = rowmap.flags.writeable = False
    return rows, rowmap


# -- weights --------------------------------------------------------------------------------

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
    convolution order, ``2 * radius + 1`` of them: the weights of both APIs' Gaussians, equal
    to scipy's to the bit.

    The derivative of order n of the Gaussian ``exp(p(x))``, ``p(x) = -x**2 / (2 sigma**2)``,
    is a polynomial ``q_n(x)`` times it, where ``q_0 = 1`` and ``q_(n+1) = q_n' + q_n p'``.
    As in scipy, that step is a matrix acting on the polynomial's coefficients (the
    derivative lowers each power, times its exponent; ``p' = -x / sigma**2`` raises it, times
    ``-1 / sigma**2``), applied n times, and ``q_n`` is evaluated from the powers of x: the
    same operations in the same order, so the same roundings.
    """
    if order < 0:
        raise ValueError("order must be non-negative")
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    phi = np.exp(-0.5 / (sigma * sigma) * x ** 2)
    phi /= phi.sum()
    if order == 0:
        return phi
    powers = np.arange(order + 1)
    step = np.diag(powers[1:].astype(np.float64), 1) + \
        np.diag(np.full(order, 1.0 / -(sigma * sigma)), -1)
    q = np.zeros(order + 1)
    q[0] = 1.0
    for _ in range(order):
        q = step.dot(q)
    return (x[:, None] ** powers).dot(q) * phi


def weights_as(weights: np.ndarray, dtype) -> np.ndarray:
    """float64 ``weights`` as the kernels take them, in ``dtype``.

    In float32, weights none of which is negative (those that smooth) are rounded so that
    their sum stays near their float64 sum: each to one of its two float32 neighbours, equal
    weights to the same one. From the nearest, the roundings whose change moves the sum most
    flip to the other neighbour, in turn, wherever that brings the sum nearer. Rounded to the
    nearest alone, the 17 taps of a Gaussian of sigma 2 sum to 1 + 1.4e-8, which raised its
    float32 results by a third of an ulp on average; chosen so, to 1 + 5e-10. No weight moves
    further than one ulp from its value: a small tap moved further would wrong the small
    results beside large ones. Weights of both signs (derivatives) round to the nearest, so
    that those of opposite sign stay opposite.
    """
    weights = np.asarray(weights, dtype=np.float64)
    if np.dtype(dtype) != np.float32 or weights.size < 2:
        return weights.astype(dtype)
    return _rounded_together(weights.tobytes(), weights.shape)


@functools.lru_cache(maxsize=256)
def _rounded_together(data: bytes, shape: tuple) -> np.ndarray:
    """weights_as's float32 weights, cached by the float64 weights' bytes (read-only)."""
    weights = np.frombuffer(data, np.float64).reshape(shape)
    if np.any(weights < 0) or not np.all(np.isfinite(weights)):
        return _read_only(weights.astype(np.float32))
    values, inverse, counts = np.unique(weights, return_inverse=True, return_counts=True)
    chosen = values.astype(np.float32)
    toward = np.where(chosen > values, np.float32(0), np.float32(np.inf))
    other = np.where(chosen == values, chosen, np.nextafter(chosen, toward))
    error = float(np.sum(counts * (chosen.astype(np.float64) - values)))
    steps = counts * (other.astype(np.float64) - chosen)
    for g in np.argsort(-np.abs(steps), kind="stable"):
        if abs(error + steps[g]) < abs(error):
            error += steps[g]
            chosen[g] = other[g]
    return _read_only(chosen[inverse.ravel()].reshape(shape))


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


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
