"""The linear filters of scipy.ndimage on an OpenCL device.

Each function checks its arguments as scipy.ndimage does and describes its work as passes
of :mod:`clkit._engine.passes`: one 1-D pass per filtered axis for separable filters, each writing the
result's dtype as scipy's passes do, or one N-D correlation for other weights.
"""

from __future__ import annotations

import functools
import math
import numbers
import operator

import numpy as np

from .._engine import passes as _engine
from .._engine.dispatch import run as run_image_filter
from .._engine.filter import Filter
from .._engine.stencil import NAMES, gaussian_kernel1d
from ._job import Job
from ._support import (check_axes, check_axis, check_cval, check_float, check_origin,
                       expand_to, mode_of, per_axis, sequence)

DIFFERENCES = """
    Differences from scipy.ndimage: float32 and float16 data are filtered in float32
    (scipy sums in double), so results agree to float32 rounding; complex data is not
    supported (NotImplementedError); ``device=`` chooses the OpenCL device."""


def _weights(name: str, weights) -> np.ndarray:
    w = np.asarray(weights)
    if w.dtype.kind == "c":
        raise NotImplementedError(f"{name}: complex weights are not supported by "
                                  "clkit.ndimage; filter with the real and imaginary parts apart")
    return np.asarray(w, dtype=np.float64)


def documented(f):
    """``f`` with its docstring's ``{differences}`` filled in."""
    f.__doc__ = f.__doc__.replace("    {differences}", DIFFERENCES.rstrip())
    return f


class AxisPass:
    """A 1-D pass along ``axis`` as ``f(job, src, dst)``: ``weights`` correlated (float64), or
    with ``mean`` the mean of a window of ``weights.size``; ``border`` a clkit.h mode."""

    def __init__(self, axis, weights, origin, border, cval, mean=False):
        self.axis, self.weights, self.origin = axis, weights, origin
        self.border, self.cval, self.mean = border, cval, mean

    def __call__(self, job, src, dst):
        if self.mean:
            _engine.mean_axis(job, src, dst, self.axis, self.weights.size, self.origin,
                              self.border, self.cval)
        else:
            _engine.correlate_axis(job, src, dst, self.axis, self.weights, self.origin,
                                   self.border, self.cval)


def _image(job: Job) -> bool:
    """Whether clkit's image engine takes the job's array: a float32 or float64 image (HxW, or
    HxWxC with up to 4 channels last) whose result keeps its dtype."""
    return job.in_dtype in (np.float32, np.float64) and job.dtype == job.in_dtype and (
        len(job.shape) == 2 or (len(job.shape) == 3 and 1 <= job.shape[2] <= 4))


def image_filter(job: Job, passes) -> Filter | None:
    """The 2-D filter of clkit's image engine (the convolution tiers behind
    clkit.kernels.convolve) equal to ``passes``, where it serves: an image that
    :func:`_image` takes, one pass along each of its two image axes, with one mode
    (constant with a cval of 0). Its sums are in the image's type, as the passes' are; an
    origin moves the filter's anchor. A single pass stays a 1-D pass, so that a filter
    along one axis gives to the bit what the same axis's pass of an N-D filter gives
    (scipy's tests compare them exactly)."""
    if not _image(job) or len(passes) != 2 or not all(
            isinstance(p, AxisPass) and p.weights.size > 1 for p in passes):
        return None
    first, second = passes
    if {first.axis, second.axis} != {0, 1} or first.border != second.border or \
            (first.border == "BORDER_CONSTANT" and (first.cval != 0 or second.cval != 0)):
        return None  # (scipy's second pass reads cval beside the first's results, not the
        # first pass of a row of cval: the 2-D filter equals them for a cval of 0 only)
    by_axis = sorted(passes, key=lambda p: p.axis)
    col, row = ((p.weights if not p.mean else np.full(p.weights.size, 1.0 / p.weights.size))
                for p in by_axis)
    anchor = tuple(p.weights.size // 2 + p.origin for p in by_axis)
    key = ("clkit.ndimage", col.tobytes(), row.tobytes())
    return Filter(job.name, job.shape, job.in_dtype, np.outer(col, row), anchor, (col, row),
                  NAMES[first.border], first.cval, key)


def run(job: Job, passes) -> object:
    """Run ``passes`` (each ``f(job, src, dst)``) one after another on the device: the first
    reads the input, each writes an array of the result's dtype that the next one reads.
    Where clkit's 2-D image engine computes the same (:func:`image_filter`), it does."""
    if not passes:
        return job.copy()
    if not math.prod(job.shape):
        return job.finish(job.empty())
    image = image_filter(job, passes)
    if image is not None:
        return run_image_filter(image, [job.input], job.target, job.device)
    src = job.source()
    temps = [job.empty() for _ in range(min(2, len(passes) - 1))]
    for i, f in enumerate(passes):
        dst = job.result() if i == len(passes) - 1 else temps[i % 2]
        f(job, src, dst)
        src = dst
    return job.finish(src)


@documented
def correlate1d(input, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, *,
                device=None):
    """Correlate along one axis, as ``scipy.ndimage.correlate1d``.

    Parameters
    ----------
    input : array_like or device array
        Any number of dimensions; bool, integer or float (16, 32, 64 bits).
    weights : array_like
        1-D weights.
    axis : int
        The axis to filter along.
    output : dtype or array, optional
        The result's dtype (the input's by default) or an array to fill.
    mode : str
        How the input extends beyond its edges: "reflect", "constant", "nearest",
        "mirror", "wrap", "grid-constant", "grid-mirror" or "grid-wrap".
    cval : float
        The value outside the input in constant modes.
    origin : int
        Shifts the window: 0 centres it, a positive value moves it left.
    device : Device or str, optional
        The OpenCL device (keyword only); by default that of a device-array input, else
        the best one.

    Returns
    -------
    ndarray or device array
        Like the input (numpy in, numpy out; a device array in, a device array out).

    Notes
    -----
    See also scipy.ndimage.correlate1d.
    {differences}

    Examples
    --------
    >>> from clkit import ndimage
    >>> ndimage.correlate1d([2, 8, 0, 4, 1, 9, 9, 0], weights=[1, 3], device="cpu")
    array([ 8, 26,  8, 12,  7, 28, 36,  9])
    """
    name = "correlate1d"
    job = Job(name, input, output, device)
    w = _weights(name, weights)
    if w.ndim != 1 or w.size < 1:
        raise RuntimeError(f"{name}: weights must be a non-empty 1-D array; got shape {w.shape}")
    axis = check_axis(axis, len(job.shape))
    origin = check_origin(origin, w.size)
    border, cval = mode_of(mode), check_cval(name, cval)
    return run(job, [AxisPass(axis, w, origin, border, cval)])


@documented
def convolve1d(input, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, *,
               device=None):
    """Convolve along one axis, as ``scipy.ndimage.convolve1d``.

    Parameters are those of :func:`correlate1d`; the weights are applied mirrored.

    Notes
    -----
    See also scipy.ndimage.convolve1d.
    {differences}

    Examples
    --------
    >>> from clkit import ndimage
    >>> ndimage.convolve1d([2, 8, 0, 4, 1, 9, 9, 0], weights=[1, 3], device="cpu")
    array([14, 24,  4, 13, 12, 36, 27,  0])
    """
    w = _weights("convolve1d", weights)
    if w.ndim != 1 or w.size < 1:
        raise RuntimeError(f"convolve1d: weights must be a non-empty 1-D array; got shape "
                           f"{w.shape}")
    origin = -operator.index(origin) - (1 if w.size % 2 == 0 else 0)
    return correlate1d(input, w[::-1], axis, output, mode, cval, origin, device=device)


def _correlate_or_convolve(name, input, weights, output, mode, cval, origin, axes, device,
                           convolution):
    job = Job(name, input, output, device)
    ndim = len(job.shape)
    w = _weights(name, weights)
    axes = check_axes(axes, ndim)
    w = expand_to(ndim, axes, w, "weights")
    origins = [operator.index(o) for o in per_axis(origin, ndim, axes, 0, "origin")]
    if convolution:
        w = w[(slice(None, None, -1),) * w.ndim]
        origins = [-o - (1 if s % 2 == 0 else 0) for o, s in zip(origins, w.shape)]
    if 0 in w.shape:
        raise RuntimeError(f"{name}: weights must not be empty; got shape {w.shape}")
    for o, s in zip(origins, w.shape):
        if not -(s // 2) <= o <= (s - 1) // 2:
            raise ValueError(f"{name}: invalid origin {o} for weights of {s} along an axis: "
                             f"it must lie in [{-(s // 2)}, {(s - 1) // 2}]")
    if not isinstance(mode, str):
        raise RuntimeError(f"{name}: a sequence of modes is not supported; pass one mode")
    border, cval = mode_of(mode), check_cval(name, cval)
    w = np.ascontiguousarray(w)
    if not job.shape:  # a 0-d array: scipy's one tap, on its element as a 1-D array
        one = job.target.reshape(1) if job.target is not None else output
        got = _correlate_or_convolve(name, job.input.reshape(1), w.reshape(1), one, mode,
                                     cval, 0, None, job.device, False)
        return job.target if job.target is not None else got.reshape(())
    if math.prod(job.shape):
        image = image_mask(job, w[(slice(None, None, -1),) * w.ndim], border, cval,
                           [s // 2 + o for s, o in zip(w.shape, origins)])
        if image is not None:
            return run_image_filter(image, [job.input], job.target, job.device)
    return run(job, [lambda j, s, d: _engine.correlate_nd(j, s, d, w, origins, border, cval)])


def image_mask(job: Job, mask: np.ndarray, border: str, cval: float,
               anchor=None) -> Filter | None:
    """The 2-D filter of clkit's image engine that convolves with ``mask`` (one axis per
    axis of the array: an HxWxC image's mask spans one channel) for an image that
    :func:`_image` takes; None otherwise. ``anchor``: taps above and left of the output
    element in correlation form (``size // 2 + origin`` per axis; default the centre). Its
    sums are in the image's type and leave out the weights scipy leaves out."""
    if not _image(job) or mask.ndim != len(job.shape) or mask.shape[2:] not in ((), (1,)):
        return None
    mask = mask.reshape(mask.shape[:2])
    anchor = None if anchor is None else tuple(anchor[:2])
    return Filter.for_mask(job.name, job.input, mask, NAMES[border], cval, anchor)


@documented
def correlate(input, weights, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None,
              device=None):
    """Multidimensional correlation, as ``scipy.ndimage.correlate``.

    Parameters
    ----------
    input : array_like or device array
    weights : array_like
        As many dimensions as the input (or as ``axes``).
    output, mode, cval : see :func:`correlate1d`
    origin : int or sequence of int
        One per axis, or one for all.
    axes : int or tuple of int, optional
        The axes ``weights`` spans (all by default).
    device : Device or str, optional

    Returns
    -------
    ndarray or device array

    Notes
    -----
    See also scipy.ndimage.correlate.
    {differences}

    Examples
    --------
    >>> import numpy as np
    >>> from clkit import ndimage
    >>> a = np.arange(9.0).reshape(3, 3)
    >>> ndimage.correlate(a, [[0, 1, 0], [0, 0, 0], [0, 0, 0]], device="cpu")
    array([[0., 1., 2.],
           [0., 1., 2.],
           [3., 4., 5.]])
    """
    return _correlate_or_convolve("correlate", input, weights, output, mode, cval, origin,
                                  axes, device, False)


@documented
def convolve(input, weights, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None,
             device=None):
    """Multidimensional convolution, as ``scipy.ndimage.convolve``.

    Parameters are those of :func:`correlate`; the weights are applied mirrored.

    Notes
    -----
    See also scipy.ndimage.convolve.
    {differences}

    Examples
    --------
    >>> import numpy as np
    >>> from clkit import ndimage
    >>> a = np.arange(9.0).reshape(3, 3)
    >>> ndimage.convolve(a, [[0, 1, 0], [0, 0, 0], [0, 0, 0]], device="cpu")
    array([[3., 4., 5.],
           [6., 7., 8.],
           [6., 7., 8.]])
    """
    return _correlate_or_convolve("convolve", input, weights, output, mode, cval, origin,
                                  axes, device, True)


# -- Gaussians ------------------------------------------------------------------------------

def _gaussian_pass(name, sigma, order, truncate, radius, axis, border, cval):
    sd = check_float(name, "sigma", sigma)
    lw = int(float(truncate) * sd + 0.5)
    if radius is not None:
        lw = radius
    if not isinstance(lw, numbers.Integral) or lw < 0:
        raise ValueError("Radius must be a nonnegative integer.")
    return AxisPass(axis, _gaussian_weights(sd, operator.index(order), int(lw)), 0, border,
                    cval)


@functools.lru_cache(maxsize=64)
def _gaussian_weights(sigma: float, order: int, radius: int) -> np.ndarray:
    """The weights of a Gaussian pass in correlation order (read-only, made once)."""
    w = gaussian_kernel1d(sigma, order, radius)[::-1].copy()
    w.flags.writeable = False
    return w


@documented
def gaussian_filter1d(input, sigma, axis=-1, order=0, output=None, mode="reflect", cval=0.0,
                      truncate=4.0, *, radius=None, device=None):
    """1-D Gaussian filter, as ``scipy.ndimage.gaussian_filter1d``.

    Parameters
    ----------
    input : array_like or device array
    sigma : float
        The standard deviation, in elements.
    axis : int
    order : int
        0 smooths; 1, 2, 3... convolve with that derivative of the Gaussian.
    output, mode, cval : see :func:`correlate1d`
    truncate : float
        The radius in standard deviations: ``int(truncate * sigma + 0.5)``.
    radius : int, optional
        The radius itself (overrides ``truncate``).
    device : Device or str, optional

    Returns
    -------
    ndarray or device array

    Notes
    -----
    See also scipy.ndimage.gaussian_filter1d.
    {differences}

    Examples
    --------
    >>> from clkit import ndimage
    >>> ndimage.gaussian_filter1d([1.0, 2.0, 3.0, 4.0, 5.0], 1, device="cpu").round(6)
    array([1.427041, 2.067822, 3.      , 3.932178, 4.572959])
    """
    name = "gaussian_filter1d"
    job = Job(name, input, output, device)
    axis = check_axis(axis, len(job.shape))
    border, cval = mode_of(mode), check_cval(name, cval)
    return run(job, [_gaussian_pass(name, sigma, order, truncate, radius, axis, border,
                                     cval)])


def _gaussian_passes(name, ndim, sigma, order, mode, cval, truncate, radius, axes):
    axes = check_axes(axes, ndim)
    n = len(axes)
    orders = sequence(order, n, "order")
    sigmas = sequence(sigma, n, "sigma")
    modes = sequence(mode, n, "mode")
    radii = sequence(radius, n, "radius")
    cval = check_cval(name, cval)
    return [_gaussian_pass(name, s, o, truncate, r, a, mode_of(m), cval)
            for a, s, o, m, r in zip(axes, sigmas, orders, modes, radii)
            if check_float(name, "sigma", s) > 1e-15]


@documented
def gaussian_filter(input, sigma, order=0, output=None, mode="reflect", cval=0.0,
                    truncate=4.0, *, radius=None, axes=None, device=None):
    """Multidimensional Gaussian filter, as ``scipy.ndimage.gaussian_filter``.

    One :func:`gaussian_filter1d` pass per axis, each writing the result's dtype.

    Parameters
    ----------
    input : array_like or device array
    sigma : float or sequence of float
        One per axis of ``axes``, or one for all.
    order : int or sequence of int
        Derivative order per axis.
    output, cval : see :func:`correlate1d`
    mode : str or sequence of str
        One per axis, or one for all.
    truncate : float
    radius : int or sequence of int, optional
    axes : int or tuple of int, optional
    device : Device or str, optional

    Returns
    -------
    ndarray or device array

    Notes
    -----
    See also scipy.ndimage.gaussian_filter.
    {differences}

    Examples
    --------
    >>> import numpy as np
    >>> from clkit import ndimage
    >>> a = np.zeros((5, 5), np.float32); a[2, 2] = 1
    >>> ndimage.gaussian_filter(a, 1, device="cpu")[2].round(3)
    array([0.023, 0.097, 0.159, 0.097, 0.023], dtype=float32)
    """
    name = "gaussian_filter"
    job = Job(name, input, output, device)
    return run(job, _gaussian_passes(name, len(job.shape), sigma, order, mode, cval,
                                      truncate, radius, axes))


# -- uniform ---------------------------------------------------------------------------------

def _uniform_pass(size, axis, origin, border, cval):
    size = operator.index(size)
    if size < 1:
        raise RuntimeError(f"incorrect filter size {size}: it must be at least 1")
    origin = check_origin(origin, size)
    return AxisPass(axis, np.ones(size), origin, border, cval, mean=True)


@documented
def uniform_filter1d(input, size, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, *,
                     device=None):
    """1-D mean filter, as ``scipy.ndimage.uniform_filter1d``.

    Parameters
    ----------
    input : array_like or device array
    size : int
        The window's length.
    axis, output, mode, cval, origin : see :func:`correlate1d`
    device : Device or str, optional

    Returns
    -------
    ndarray or device array

    Notes
    -----
    See also scipy.ndimage.uniform_filter1d.
    {differences}
    Each window's mean is its sum divided by ``size``; scipy keeps a running sum, whose
    rounding can put an integer result 1 lower where the exact mean is a whole number.

    Examples
    --------
    >>> from clkit import ndimage
    >>> ndimage.uniform_filter1d([2, 8, 0, 4, 1, 9, 9, 0], size=3, device="cpu")
    array([4, 3, 4, 1, 4, 6, 6, 3])
    """
    name = "uniform_filter1d"
    job = Job(name, input, output, device)
    axis = check_axis(axis, len(job.shape))
    border, cval = mode_of(mode), check_cval(name, cval)
    return run(job, [_uniform_pass(size, axis, origin, border, cval)])


@documented
def uniform_filter(input, size=3, output=None, mode="reflect", cval=0.0, origin=0, *,
                   axes=None, device=None):
    """Multidimensional mean filter, as ``scipy.ndimage.uniform_filter``.

    Parameters
    ----------
    input : array_like or device array
    size : int or sequence of int
        One per axis of ``axes``, or one for all.
    output, cval : see :func:`correlate1d`
    mode : str or sequence of str
    origin : int or sequence of int
    axes : int or tuple of int, optional
    device : Device or str, optional

    Returns
    -------
    ndarray or device array

    Notes
    -----
    See also scipy.ndimage.uniform_filter.
    {differences}
    Means as in :func:`uniform_filter1d`.

    Examples
    --------
    >>> import numpy as np
    >>> from clkit import ndimage
    >>> ndimage.uniform_filter(np.eye(3), 3, device="cpu").round(3)
    array([[0.556, 0.333, 0.111],
           [0.333, 0.333, 0.333],
           [0.111, 0.333, 0.556]])
    """
    name = "uniform_filter"
    job = Job(name, input, output, device)
    axes = check_axes(axes, len(job.shape))
    n = len(axes)
    sizes, origins, modes = (sequence(size, n, "size"), sequence(origin, n, "origin"),
                             sequence(mode, n, "mode"))
    cval = check_cval(name, cval)
    passes = [_uniform_pass(s, a, o, mode_of(m), cval)
              for a, s, o, m in zip(axes, sizes, origins, modes) if operator.index(s) > 1]
    return run(job, passes)
