"""The rank filters of scipy.ndimage: minimum, maximum, median, rank and percentile.

A rectangular minimum or maximum is one 1-D pass per axis (``rank_filter_axis.cl``), as
scipy computes it; any other footprint, and every median, rank and percentile, gathers the
footprint's values per element and selects (``rank_filter.cl``).
"""

from __future__ import annotations

import operator

import numpy as np

from .._engine import passes as _engine
from ._job import Job
from ._filters import documented, run
from ._support import (check_axes, check_axis, check_cval, check_origin, footprint_of,
                       mode_of, per_axis, sequence)

RANK_DIFFERENCES = """
    Differences from scipy.ndimage: complex data raises TypeError, as in scipy; float16
    data is accepted (scipy refuses it for most shapes); with NaNs in a window the
    selected value may differ from scipy's, and so may the sign of a zero where 0.0 and
    -0.0 tie; 1-D rank, median and percentile filters work as scipy's do for arrays of more
    dimensions (scipy 1.17's separate 1-D routine takes a footprint as a window of its
    length and, for integer data, compares in int64 with cval converted to int64);
    ``device=`` chooses the OpenCL device."""


def ranked(f):
    f.__doc__ = f.__doc__.replace("    {differences}", RANK_DIFFERENCES.rstrip())
    return f


def _job(name, input, output, device):
    if (input.dtype.kind == "c") if hasattr(input, "dtype") else np.iscomplexobj(input):
        raise TypeError("Complex type not supported")
    return Job(name, input, output, device)


def _min_or_max_1d(name, input, size, axis, output, mode, cval, origin, device, maximum):
    job = _job(name, input, output, device)
    axis = check_axis(axis, len(job.shape))
    size = operator.index(size)
    if size < 1:
        raise RuntimeError(f"incorrect filter size {size}: it must be at least 1")
    origin = check_origin(origin, size)
    border, cval = mode_of(mode), check_cval(name, cval)
    return run(job, [lambda j, s, d: _engine.min_or_max_axis(j, s, d, axis, size, origin,
                                                              border, cval, maximum)])


@ranked
def minimum_filter1d(input, size, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, *,
                     device=None):
    """1-D minimum filter, as ``scipy.ndimage.minimum_filter1d``.

    Parameters
    ----------
    input : array_like or device array
    size : int
        The window's length.
    axis : int
    output : dtype or array, optional
    mode : str
        Any of scipy's border modes.
    cval : float
    origin : int
    device : Device or str, optional

    Returns
    -------
    ndarray or device array

    Notes
    -----
    See also scipy.ndimage.minimum_filter1d.
    {differences}

    Examples
    --------
    >>> from clkit import ndimage
    >>> ndimage.minimum_filter1d([2, 8, 0, 4, 1, 9, 9, 0], size=3, device="cpu")
    array([2, 0, 0, 0, 1, 1, 0, 0])
    """
    return _min_or_max_1d("minimum_filter1d", input, size, axis, output, mode, cval, origin,
                          device, False)


@ranked
def maximum_filter1d(input, size, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, *,
                     device=None):
    """1-D maximum filter, as ``scipy.ndimage.maximum_filter1d``.

    Parameters are those of :func:`minimum_filter1d`.

    Notes
    -----
    See also scipy.ndimage.maximum_filter1d.
    {differences}

    Examples
    --------
    >>> from clkit import ndimage
    >>> ndimage.maximum_filter1d([2, 8, 0, 4, 1, 9, 9, 0], size=3, device="cpu")
    array([8, 8, 8, 4, 9, 9, 9, 9])
    """
    return _min_or_max_1d("maximum_filter1d", input, size, axis, output, mode, cval, origin,
                          device, True)


def _origins(job, origin, axes, footprint):
    origins = [operator.index(o) for o in per_axis(origin, len(job.shape), axes, 0, "origin")]
    for o, s in zip(origins, footprint.shape):
        if not -(s // 2) <= o <= (s - 1) // 2:
            raise ValueError(f"invalid origin {o} for a footprint of {s} along an axis: it "
                             f"must lie in [{-(s // 2)}, {(s - 1) // 2}]")
    return origins


def _single_mode(name, mode):
    if not isinstance(mode, str):
        raise RuntimeError(f"{name}: a sequence of modes is not supported for footprints "
                           "other than rectangles; pass one mode")
    return mode_of(mode)


def _min_or_max(name, input, size, footprint, output, mode, cval, origin, axes, device,
                maximum):
    job = _job(name, input, output, device)
    ndim = len(job.shape)
    axes = check_axes(axes, ndim)
    cval = check_cval(name, cval)
    if footprint is not None:
        fp = np.asarray(footprint, dtype=bool)
        if not fp.any():
            raise ValueError("All-zero footprint is not supported.")
        if fp.all():
            size, footprint = fp.shape, None
    if footprint is None:
        if size is None:
            raise RuntimeError(f"{name}: pass size or footprint")
        n = len(axes)
        sizes = [operator.index(s) for s in sequence(size, n, "size")]
        origins, modes = sequence(origin, n, "origin"), sequence(mode, n, "mode")

        def along(a, s, o, m):
            o, border = check_origin(o, s), mode_of(m)
            return lambda j, src, dst: _engine.min_or_max_axis(j, src, dst, a, s, o, border,
                                                               cval, maximum)
        return run(job, [along(a, s, o, m) for a, s, o, m in zip(axes, sizes, origins, modes)
                         if s > 1])
    fp = footprint_of(name, None, footprint, ndim, axes)
    origins = _origins(job, origin, axes, fp)
    border = _single_mode(name, mode)
    rank = int(fp.sum()) - 1 if maximum else 0
    return run(job, [lambda j, s, d: _engine.rank_nd(j, s, d, fp, origins, border, cval,
                                                      rank)])


@ranked
def minimum_filter(input, size=None, footprint=None, output=None, mode="reflect", cval=0.0,
                   origin=0, *, axes=None, device=None):
    """Multidimensional minimum filter, as ``scipy.ndimage.minimum_filter``.

    Parameters
    ----------
    input : array_like or device array
    size : int or sequence of int, optional
        A rectangular window (one 1-D pass per axis).
    footprint : array_like of bool, optional
        Any window: the elements where it is True (overrides ``size``).
    output : dtype or array, optional
    mode : str or sequence of str
        A sequence (one per axis) only with a rectangular window.
    cval : float
    origin : int or sequence of int
    axes : int or tuple of int, optional
    device : Device or str, optional

    Returns
    -------
    ndarray or device array

    Notes
    -----
    See also scipy.ndimage.minimum_filter.
    {differences}

    Examples
    --------
    >>> import numpy as np
    >>> from clkit import ndimage
    >>> ndimage.minimum_filter(np.arange(9).reshape(3, 3), size=2, device="cpu")
    array([[0, 0, 1],
           [0, 0, 1],
           [3, 3, 4]])
    """
    return _min_or_max("minimum_filter", input, size, footprint, output, mode, cval, origin,
                       axes, device, False)


@ranked
def maximum_filter(input, size=None, footprint=None, output=None, mode="reflect", cval=0.0,
                   origin=0, *, axes=None, device=None):
    """Multidimensional maximum filter, as ``scipy.ndimage.maximum_filter``.

    Parameters are those of :func:`minimum_filter`.

    Notes
    -----
    See also scipy.ndimage.maximum_filter.
    {differences}

    Examples
    --------
    >>> import numpy as np
    >>> from clkit import ndimage
    >>> ndimage.maximum_filter(np.arange(9).reshape(3, 3), size=2, device="cpu")
    array([[0, 1, 2],
           [3, 4, 5],
           [6, 7, 8]])
    """
    return _min_or_max("maximum_filter", input, size, footprint, output, mode, cval, origin,
                       axes, device, True)


def _rank(name, input, rank, size, footprint, output, mode, cval, origin, axes, device,
          operation):
    job = _job(name, input, output, device)
    ndim = len(job.shape)
    axes = check_axes(axes, ndim)
    cval = check_cval(name, cval)
    fp = footprint_of(name, size, footprint, ndim, axes)
    origins = _origins(job, origin, axes, fp)
    n = int(fp.sum())
    if operation == "median":
        rank = n // 2
    elif operation == "percentile":
        percentile = float(rank)
        if percentile < 0.0:
            percentile += 100.0
        if not 0 <= percentile <= 100:
            raise RuntimeError(f"invalid percentile {rank}: use -100 to 100")
        rank = n - 1 if percentile == 100.0 else int(float(n) * percentile / 100.0)
    rank = operator.index(rank)
    if rank < 0:
        rank += n
    if not 0 <= rank < n:
        raise RuntimeError(f"rank {rank} not within the footprint's {n} elements")
    if rank in (0, n - 1):
        return _min_or_max(name, input, None, fp, output, mode, cval, origins, None, device,
                           rank == n - 1)
    border = _single_mode(name, mode)
    return run(job, [lambda j, s, d: _engine.rank_nd(j, s, d, fp, origins, border, cval,
                                                      rank)])


@ranked
def rank_filter(input, rank, size=None, footprint=None, output=None, mode="reflect", cval=0.0,
                origin=0, *, axes=None, device=None):
    """Multidimensional rank filter, as ``scipy.ndimage.rank_filter``.

    Parameters
    ----------
    input : array_like or device array
    rank : int
        Which value of each window, sorted: 0 the smallest, -1 the largest.
    size, footprint, output, cval, origin, axes : see :func:`minimum_filter`
    mode : str
    device : Device or str, optional

    Returns
    -------
    ndarray or device array

    Notes
    -----
    See also scipy.ndimage.rank_filter.
    {differences}

    Examples
    --------
    >>> from clkit import ndimage
    >>> ndimage.rank_filter([2, 8, 0, 4, 1, 9, 9, 0], 1, size=3, device="cpu")
    array([2, 2, 4, 1, 4, 9, 9, 0])
    """
    return _rank("rank_filter", input, rank, size, footprint, output, mode, cval, origin, axes,
                 device, "rank")


@ranked
def median_filter(input, size=None, footprint=None, output=None, mode="reflect", cval=0.0,
                  origin=0, *, axes=None, device=None):
    """Multidimensional median filter, as ``scipy.ndimage.median_filter``.

    Parameters are those of :func:`rank_filter`, without ``rank``.

    Notes
    -----
    See also scipy.ndimage.median_filter.
    {differences}

    Examples
    --------
    >>> from clkit import ndimage
    >>> ndimage.median_filter([2, 8, 0, 4, 1, 9, 9, 0], size=3, device="cpu")
    array([2, 2, 4, 1, 4, 9, 9, 0])
    """
    return _rank("median_filter", input, 0, size, footprint, output, mode, cval, origin, axes,
                 device, "median")


@ranked
def percentile_filter(input, percentile, size=None, footprint=None, output=None,
                      mode="reflect", cval=0.0, origin=0, *, axes=None, device=None):
    """Multidimensional percentile filter, as ``scipy.ndimage.percentile_filter``.

    Parameters
    ----------
    input : array_like or device array
    percentile : float
        0 to 100 (or -100 to 0, counted from the top).
    size, footprint, output, mode, cval, origin, axes : see :func:`rank_filter`
    device : Device or str, optional

    Returns
    -------
    ndarray or device array

    Notes
    -----
    See also scipy.ndimage.percentile_filter.
    {differences}

    Examples
    --------
    >>> from clkit import ndimage
    >>> ndimage.percentile_filter([2, 8, 0, 4, 1, 9, 9, 0], 20, size=3, device="cpu")
    array([2, 0, 0, 0, 1, 1, 0, 0])
    """
    return _rank("percentile_filter", input, percentile, size, footprint, output, mode, cval,
                 origin, axes, device, "percentile")
