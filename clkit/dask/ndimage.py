""":mod:`clkit.ndimage`'s filters on dask arrays, with scipy.ndimage's signatures.

Each function takes a dask array and scipy.ndimage's arguments (plus a keyword-only
``device=``) and returns a dask array equal to ``clkit.ndimage``'s result on the whole
array, at every seam and edge, in every mode.  Filters applied one after another run in one
pass over the chunks, as in :mod:`clkit.dask`.  ``output`` may be a dtype (an array cannot
be written into).  Each function below is one line: the filter's name and how far it reads
(its halo), worked out from its arguments as scipy.ndimage centres its masks.

>>> import numpy as np, dask.array as da
>>> from clkit.dask import ndimage
>>> image = da.from_array(np.arange(16, dtype=np.float32).reshape(4, 4), chunks=2)
>>> ndimage.uniform_filter(image, 3, mode="wrap").compute()[0].round(3)
array([6.667, 6.333, 7.333, 7.   ], dtype=float32)
"""

from __future__ import annotations

import functools
import inspect
import numbers

import numpy as np

from .. import ArgumentTypeError, ArgumentValueError
from ._filters import dask_array, filter_array
from ._graph import check_mode


def _axes(args, ndim, name="axes"):
    axes = args.get(name)
    if axes is None:
        return tuple(range(ndim))
    axes = (axes,) if isinstance(axes, numbers.Integral) else tuple(axes)
    return tuple(int(a) % ndim for a in axes)


def _each(value, n):
    """A number for every axis or a sequence of n."""
    if isinstance(value, (numbers.Number, np.generic)) or np.ndim(value) == 0:
        return [value] * n
    return list(value)


def _centred(m, origin, flip):
    """(before, after) of a mask of m weights: correlate's centre, or convolve's (flipped)."""
    m, origin = int(m), int(origin)
    lo, hi = ((m - 1) // 2 - origin, m // 2 + origin) if flip else \
        (m // 2 + origin, m - 1 - m // 2 - origin)
    return max(0, lo), max(0, hi)


def _on_axes(ndim, axes, pairs):
    halo = [(0, 0)] * ndim
    for a, pair in zip(axes, pairs):
        halo[a] = pair
    return halo


def _gauss_radius(sigma, truncate, radius):
    if radius is not None:
        return int(radius)
    return int(float(truncate) * float(sigma) + 0.5)


# How far each filter reads, from its bound arguments (scipy's names) and the array's ndim.

def _weights(flip):
    def halo(a, ndim):
        axes = _axes(a, ndim)
        w = np.asarray(a["weights"])
        origins = _each(a["origin"], len(axes))
        return _on_axes(ndim, axes, [_centred(m, o, flip) for m, o in zip(w.shape, origins)])
    return halo


def _weights1d(flip):
    def halo(a, ndim):
        return _on_axes(ndim, [int(a["axis"]) % ndim],
                        [_centred(np.asarray(a["weights"]).size, a["origin"], flip)])
    return halo


def _sized1d(a, ndim):
    return _on_axes(ndim, [int(a["axis"]) % ndim], [_centred(a["size"], a["origin"], False)])


def _sized(a, ndim):
    axes = _axes(a, ndim)
    if a.get("footprint") is not None:
        sizes = np.asarray(a["footprint"]).shape
    else:
        sizes = _each(a["size"], len(axes))
    origins = _each(a["origin"], len(axes))
    return _on_axes(ndim, axes, [_centred(m, o, False) for m, o in zip(sizes, origins)])


def _gaussian(a, ndim):
    axes = _axes(a, ndim)
    truncate = a.get("truncate", a.get("kwargs", {}).get("truncate", 4.0))
    radius = a.get("radius", a.get("kwargs", {}).get("radius"))
    sigmas = _each(a["sigma"], len(axes))
    radii = _each(radius, len(axes))
    return _on_axes(ndim, axes, [(r, r) for r in (_gauss_radius(s, truncate, rad)
                                                  for s, rad in zip(sigmas, radii))])


def _gaussian1d(a, ndim):
    r = _gauss_radius(a["sigma"], a["truncate"], a.get("radius"))
    return _on_axes(ndim, [int(a["axis"]) % ndim], [(r, r)])


def _all_axes(a, ndim):  # sobel, prewitt: the derivative along one axis, smoothing along the rest
    return [(1, 1)] * ndim


def _laplace(a, ndim):
    return _on_axes(ndim, _axes(a, ndim), [(1, 1)] * ndim)


def _wrap(name, halo, example=""):
    """The dask version of clkit.ndimage's ``name``, reading ``halo(arguments, ndim)``."""
    from .. import ndimage
    function = getattr(ndimage, name)
    signature = inspect.signature(function)

    @functools.wraps(function)
    def on_dask(input, *args, **kwargs):
        device = kwargs.pop("device", None)
        image = dask_array(input, name, "input")
        bound = signature.bind(image, *args, **kwargs)
        bound.apply_defaults()
        a = dict(bound.arguments)
        a.update(a.pop("kwargs", None) or {})
        output = a.pop("output", None)
        if output is not None and not isinstance(output, (type, np.dtype, str)):
            raise ArgumentTypeError(f"{name}: output must be a dtype on dask arrays (each block "
                                    "is a new array), not an array")
        dtype = image.dtype if output is None else np.dtype(output)
        ndim = image.ndim
        axes = _axes(a, ndim) if "axes" in a else tuple(range(ndim))
        mode = a.get("mode", "reflect")
        per_axis = check_mode(name, mode, len(axes))
        modes = ["constant"] * ndim  # (the filter reads nothing along the other axes)
        for axis, m in zip(axes, per_axis):
            modes[axis] = m
        try:
            pairs = halo(a, ndim)
        except (TypeError, ValueError, KeyError) as exc:
            raise ArgumentValueError(f"{name}: cannot tell how far the filter reads from these "
                                     f"arguments ({exc}); check them against "
                                     f"scipy.ndimage.{name}") from exc
        passed = {k: v for k, v in a.items() if k not in ("input", "device")}
        if output is not None:
            passed["output"] = output
        return filter_array(function, image, (), passed, pairs, modes, dtype, device,
                            name=name)

    on_dask.__doc__ = (
        f"``clkit.ndimage.{name}`` on a dask array: see there and scipy.ndimage.{name}.\n\n"
        f"    Returns\n    -------\n    dask.array.Array\n        The input's shape and chunks, "
        f"the dtype clkit.ndimage.{name} gives.\n\n"
        f"    Examples\n    --------\n"
        f"    >>> import numpy as np, scipy.ndimage, dask.array as da\n"
        f"    >>> from clkit.dask import ndimage\n"
        f"    >>> x = np.random.default_rng(0).random((7, 6), dtype=np.float32)\n"
        f"    >>> y = ndimage.{name}(da.from_array(x, chunks=2){example})\n"
        f"    >>> bool(np.allclose(y.compute(), scipy.ndimage.{name}(x{example}), atol=1e-5))\n"
        f"    True\n")
    on_dask.__module__, on_dask.__qualname__ = __name__, name
    return on_dask


correlate = _wrap("correlate", _weights(flip=False), ", np.ones((3, 2)) / 6")
convolve = _wrap("convolve", _weights(flip=True), ", np.ones((3, 2)) / 6")
correlate1d = _wrap("correlate1d", _weights1d(flip=False), ", [1, 2, 1]")
convolve1d = _wrap("convolve1d", _weights1d(flip=True), ", [1, 2, 1]")
gaussian_filter = _wrap("gaussian_filter", _gaussian, ", 1.0")
gaussian_filter1d = _wrap("gaussian_filter1d", _gaussian1d, ", 1.0")
uniform_filter = _wrap("uniform_filter", _sized, ", 3")
uniform_filter1d = _wrap("uniform_filter1d", _sized1d, ", 3")
sobel = _wrap("sobel", _all_axes)
prewitt = _wrap("prewitt", _all_axes)
laplace = _wrap("laplace", _laplace)
gaussian_laplace = _wrap("gaussian_laplace", _gaussian, ", 1.0")
gaussian_gradient_magnitude = _wrap("gaussian_gradient_magnitude", _gaussian, ", 1.0")
minimum_filter = _wrap("minimum_filter", _sized, ", 3")
maximum_filter = _wrap("maximum_filter", _sized, ", 3")
minimum_filter1d = _wrap("minimum_filter1d", _sized1d, ", 3")
maximum_filter1d = _wrap("maximum_filter1d", _sized1d, ", 3")
median_filter = _wrap("median_filter", _sized, ", 3")
rank_filter = _wrap("rank_filter", _sized, ", 1, 3")
percentile_filter = _wrap("percentile_filter", _sized, ", 50, 3")

__all__ = [
    "convolve", "convolve1d", "correlate", "correlate1d", "gaussian_filter",
    "gaussian_filter1d", "gaussian_gradient_magnitude", "gaussian_laplace", "laplace",
    "maximum_filter", "maximum_filter1d", "median_filter", "minimum_filter",
    "minimum_filter1d", "percentile_filter", "prewitt", "rank_filter", "sobel",
    "uniform_filter", "uniform_filter1d",
]
