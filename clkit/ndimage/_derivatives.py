"""Derivative filters of scipy.ndimage: sobel, prewitt, laplace and the Gaussian ones.

Each is the composition scipy.ndimage makes of 1-D passes (see :mod:`._filters`), with the
steps that combine them (sums, squares, the square root) in the result's dtype on the device,
as numpy performs them there.
"""

from __future__ import annotations

import math

import numpy as np

from .._engine import passes as _engine
from ._job import Job
from .._engine.dispatch import run as run_image_filter
from ._filters import AxisPass, _gaussian_passes, documented, image_filter, image_mask, run
from ._support import check_axes, check_axis, check_cval, mode_of, sequence


def _smoothed_derivative(name, input, derivative, smooth, axis, output, mode, cval, device):
    job = Job(name, input, output, device)
    ndim = len(job.shape)
    axis = check_axis(axis, ndim)
    modes = sequence(mode, ndim, "mode")
    cval = check_cval(name, cval)
    d, s = np.array(derivative, float), np.array(smooth, float)

    def along(a, w):
        border = mode_of(modes[a])
        return AxisPass(a, w, 0, border, cval)
    passes = [along(axis, d)] + [along(a, s) for a in range(ndim) if a != axis]
    return run(job, passes)


@documented
def prewitt(input, axis=-1, output=None, mode="reflect", cval=0.0, *, device=None):
    """Prewitt filter, as ``scipy.ndimage.prewitt``.

    The difference [-1, 0, 1] along ``axis``, then [1, 1, 1] along every other axis.

    Parameters
    ----------
    input : array_like or device array
    axis : int
    output, cval : see :func:`correlate1d`
    mode : str or sequence of str
        One per axis, or one for all.
    device : Device or str, optional

    Returns
    -------
    ndarray or device array

    Notes
    -----
    See also scipy.ndimage.prewitt.
    {differences}

    Examples
    --------
    >>> import numpy as np
    >>> from clkit import ndimage
    >>> ndimage.prewitt(np.array([[0, 0, 9], [0, 0, 9], [0, 0, 9]]), device="cpu")
    array([[ 0, 27, 27],
           [ 0, 27, 27],
           [ 0, 27, 27]])
    """
    return _smoothed_derivative("prewitt", input, [-1, 0, 1], [1, 1, 1], axis, output, mode,
                                cval, device)


@documented
def sobel(input, axis=-1, output=None, mode="reflect", cval=0.0, *, device=None):
    """Sobel filter, as ``scipy.ndimage.sobel``.

    The difference [-1, 0, 1] along ``axis``, then [1, 2, 1] along every other axis.

    Parameters are those of :func:`prewitt`.

    Notes
    -----
    See also scipy.ndimage.sobel.
    {differences}

    Examples
    --------
    >>> import numpy as np
    >>> from clkit import ndimage
    >>> ndimage.sobel(np.array([[0, 0, 9], [0, 0, 9], [0, 0, 9]]), device="cpu")
    array([[ 0, 36, 36],
           [ 0, 36, 36],
           [ 0, 36, 36]])
    """
    return _smoothed_derivative("sobel", input, [-1, 0, 1], [1, 2, 1], axis, output, mode,
                                cval, device)


def _sum_of(job: Job, derivatives, squared=False):
    """The sum over axes of ``derivatives`` (each ``f(job, src, dst)``), squared first and
    square-rooted at the end when ``squared``; every step in the result's dtype."""
    if not derivatives:
        return job.copy()
    if not math.prod(job.shape):
        return job.finish(job.empty())
    src = job.source()
    total = job.result()
    derivatives[0](job, src, total)
    if len(derivatives) > 1:
        part, spare = job.empty(), job.empty()
        for i, d in enumerate(derivatives[1:], 2):
            d(job, src, part, spare)
            if squared:  # (the first derivative squared with the second, the root after the
                # last)
                _engine.add_square(job, total, part, root=i == len(derivatives), first=i == 2)
            else:
                _engine.add_into(job, total, part)
    elif squared:
        _engine.square(job, total)
        _engine.sqrt_into(job, total)
    return job.finish(total)


def _chain(passes):
    """One derivative as ``f(job, src, dst, spare=None)``: ``passes`` one after another,
    alternating between ``dst`` and ``spare`` so that the last writes ``dst``."""
    def derivative(job, src, dst, spare=None):
        image = image_filter(job, passes)
        if image is not None:
            run_image_filter(image, [src], dst, job.device)
            return
        if spare is None and len(passes) > 1:
            spare = job.empty()
        targets = [dst if (len(passes) - 1 - i) % 2 == 0 else spare for i in range(len(passes))]
        for f, t in zip(passes, targets):
            f(job, src, t)
            src = t
    return derivative


@documented
def laplace(input, output=None, mode="reflect", cval=0.0, *, axes=None, device=None):
    """Laplace filter, as ``scipy.ndimage.laplace``: the sum over axes of [1, -2, 1].

    Parameters
    ----------
    input : array_like or device array
    output, cval : see :func:`correlate1d`
    mode : str or sequence of str
    axes : int or tuple of int, optional
    device : Device or str, optional

    Returns
    -------
    ndarray or device array

    Notes
    -----
    See also scipy.ndimage.laplace.
    {differences}

    Examples
    --------
    >>> import numpy as np
    >>> from clkit import ndimage
    >>> ndimage.laplace(np.array([0.0, 0, 1, 0, 0]), device="cpu")
    array([ 0.,  1., -2.,  1.,  0.])
    """
    name = "laplace"
    job = Job(name, input, output, device)
    axes = check_axes(axes, len(job.shape))
    modes = sequence(mode, len(axes), "mode")
    cval = check_cval(name, cval)
    w = np.array([1.0, -2.0, 1.0])
    if sorted(axes) == [0, 1] and modes[0] == modes[1] and math.prod(job.shape):
        # an image's two axes: the sum of the two second differences is one 5-tap mask
        mask = np.array([[0.0, 1, 0], [1, -4, 1], [0, 1, 0]])
        image = image_mask(job, mask.reshape(mask.shape + (1,) * (len(job.shape) - 2)),
                           mode_of(modes[0]), cval)
        if image is not None:
            return run_image_filter(image, [job.input], job.target, job.device)

    def second(a, m):
        border = mode_of(m)
        return _chain([AxisPass(a, w, 0, border, cval)])
    return _sum_of(job, [second(a, m) for a, m in zip(axes, modes)])


def _gaussian_derivatives(name, job, sigma, order, mode, cval, truncate, radius, axes):
    ndim = len(job.shape)
    axes = check_axes(axes, ndim)
    n = len(axes)
    sigmas = sequence(sigma, n, "sigma")
    modes = sequence(mode, n, "mode")
    derivatives = []
    for i in range(n):
        orders = [0] * n
        orders[i] = order
        derivatives.append(_chain(_gaussian_passes(name, ndim, sigmas, orders, modes[i], cval,
                                                   truncate, radius, axes)))
    return derivatives


@documented
def gaussian_laplace(input, sigma, output=None, mode="reflect", cval=0.0, *, axes=None,
                     device=None, **kwargs):
    """Laplace filter of Gaussian second derivatives, as ``scipy.ndimage.gaussian_laplace``.

    Parameters
    ----------
    input : array_like or device array
    sigma : float or sequence of float
    output, cval : see :func:`correlate1d`
    mode : str or sequence of str
    axes : int or tuple of int, optional
    device : Device or str, optional
    **kwargs
        ``truncate`` and ``radius``, as :func:`gaussian_filter` takes them.

    Returns
    -------
    ndarray or device array

    Notes
    -----
    See also scipy.ndimage.gaussian_laplace.
    {differences}

    Examples
    --------
    >>> import numpy as np
    >>> from clkit import ndimage
    >>> a = np.zeros(7); a[3] = 1
    >>> ndimage.gaussian_laplace(a, 1, device="cpu").round(3)
    array([ 0.037,  0.162,  0.   , -0.399,  0.   ,  0.162,  0.037])
    """
    name = "gaussian_laplace"
    job = Job(name, input, output, device)
    truncate, radius = _gaussian_kwargs(name, kwargs)
    return _sum_of(job, _gaussian_derivatives(name, job, sigma, 2, mode, cval, truncate,
                                              radius, axes))


@documented
def gaussian_gradient_magnitude(input, sigma, output=None, mode="reflect", cval=0.0, *,
                                axes=None, device=None, **kwargs):
    """Gradient magnitude with Gaussian derivatives, as
    ``scipy.ndimage.gaussian_gradient_magnitude``.

    Parameters are those of :func:`gaussian_laplace`.

    Returns
    -------
    ndarray or device array

    Notes
    -----
    See also scipy.ndimage.gaussian_gradient_magnitude.
    {differences}

    Examples
    --------
    >>> import numpy as np
    >>> from clkit import ndimage
    >>> a = np.zeros(7); a[3] = 1
    >>> ndimage.gaussian_gradient_magnitude(a, 1, device="cpu").round(3)
    array([0.013, 0.108, 0.242, 0.   , 0.242, 0.108, 0.013])
    """
    name = "gaussian_gradient_magnitude"
    job = Job(name, input, output, device)
    truncate, radius = _gaussian_kwargs(name, kwargs)
    return _sum_of(job, _gaussian_derivatives(name, job, sigma, 1, mode, cval, truncate,
                                              radius, axes), squared=True)


def _gaussian_kwargs(name, kwargs):
    extra = set(kwargs) - {"truncate", "radius"}
    if extra:
        raise TypeError(f"{name}() got unexpected keyword arguments {sorted(extra)}; it "
                        "passes on truncate and radius")
    return kwargs.get("truncate", 4.0), kwargs.get("radius", None)
