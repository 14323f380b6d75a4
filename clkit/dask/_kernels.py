"""clkit.kernels' functions on dask arrays."""

from __future__ import annotations

import numbers

import numpy as np

from .. import kernels
from .. import ArgumentTypeError, ArgumentValueError
from ._filters import KERNEL_MODES, apply, dask_array, device_spec
from ._graph import Filter, chained, filtered

# What clkit.kernels.convolve and gaussian_blur take: every dtype scipy.ndimage takes.
_FILTER_DTYPES = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                  np.uint32, np.uint64, np.float32, np.float64)


def _image(image, name):
    image = dask_array(image, name)
    if image.ndim not in (2, 3) or image.ndim == 3 and not 1 <= image.shape[2] <= 4:
        raise ArgumentValueError(f"{name}: image must be HxW or HxWxC with 1 to 4 channels; got "
                                 f"shape {image.shape}")
    if image.dtype not in _FILTER_DTYPES:
        raise ArgumentTypeError(f"{name}: image has dtype {image.dtype}; use a bool, integer, "
                                "float32 or float64 array")
    return image


def _result_dtype(dtype):
    """clkit.kernels' filters: float64 images give float64, every other float32."""
    return np.dtype(np.float64 if dtype == np.float64 else np.float32)


def _mode(name, mode):
    if mode not in KERNEL_MODES:
        raise ArgumentValueError(f"{name}: mode must be one of {', '.join(KERNEL_MODES)}, not "
                                 f"{mode!r}")
    return mode


def _number(name, arg, value, *, non_negative=False, positive=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
            not np.isfinite(value):
        raise ArgumentTypeError(f"{name}: {arg} must be a finite number, not {value!r}")
    if non_negative and value < 0 or positive and value <= 0:
        raise ArgumentValueError(f"{name}: {arg} must be {'positive' if positive else 'at least 0'}"
                                 f", got {value!r}")
    return value


def convolve(image, mask, mode="reflect", cval=0.0, *, device=None):
    """:func:`clkit.kernels.convolve` on a dask array, block by block on the workers' devices.

    Equal to the unchunked call (and so to ``scipy.ndimage.convolve``) at every seam and
    edge, in every mode, for masks of odd or even size larger than the chunks or the image.

    Parameters
    ----------
    image : dask.array.Array
        HxW or HxWxC (1 to 4 channels, each filtered separately; the channel axis may be
        chunked); every dtype :func:`clkit.kernels.convolve` takes.
    mask : array_like
        2-D, odd or even size.
    mode : {"reflect", "constant", "nearest", "mirror", "wrap"}
    cval : float
    device : str, optional
        One device spec for every task; by default each worker's (:func:`worker_device`).

    Returns
    -------
    dask.array.Array
        float32 (float64 for float64 images), the image's shape and chunks.

    Examples
    --------
    >>> import numpy as np, dask.array as da, clkit.dask
    >>> image = da.from_array(np.arange(16, dtype=np.float32).reshape(4, 4), chunks=2)
    >>> clkit.dask.convolve(image, np.ones((1, 3)) / 3, mode="nearest").compute().round(2)
    array([[ 0.33,  1.  ,  2.  ,  2.67],
           [ 4.33,  5.  ,  6.  ,  6.67],
           [ 8.33,  9.  , 10.  , 10.67],
           [12.33, 13.  , 14.  , 14.67]], dtype=float32)
    """
    name = "convolve"
    image = _image(image, name)
    mask = np.asarray(mask)
    if mask.ndim != 2 or mask.size == 0 or mask.dtype.kind not in "biuf":
        raise ArgumentValueError(f"{name}: mask must be a non-empty 2-D array of numbers; got "
                                 f"shape {mask.shape} and dtype {mask.dtype}")
    halo = [((m - 1) // 2, m // 2) for m in mask.shape]  # scipy's centre of an even mask
    return apply(kernels.convolve, image, mask, halo=halo, mode=_mode(name, mode),
                 cval=_number(name, "cval", cval), dtype=_result_dtype(image.dtype),
                 device=device)


def gaussian_blur(image, sigma, mode="reflect", cval=0.0, truncate=4.0, *, device=None):
    """:func:`clkit.kernels.gaussian_blur` on a dask array, exact at every seam and edge.

    Parameters
    ----------
    image : dask.array.Array
        HxW or HxWxC (1 to 4 channels); every dtype :func:`clkit.kernels.gaussian_blur`
        takes.
    sigma : float or (float, float)
        Standard deviation in pixels, one for both axes or (rows, columns).
    mode : {"reflect", "constant", "nearest", "mirror", "wrap"}
    cval : float
    truncate : float
        The mask's radius is ``int(truncate * sigma + 0.5)``: the halo.
    device : str, optional
        One device spec for every task; by default each worker's (:func:`worker_device`).

    Returns
    -------
    dask.array.Array
        float32 (float64 for float64 images), the image's shape and chunks.

    Examples
    --------
    >>> import numpy as np, dask.array as da, clkit.dask
    >>> impulse = np.zeros((6, 6), np.float32); impulse[2, 2] = 1
    >>> blurred = clkit.dask.gaussian_blur(da.from_array(impulse, chunks=3), 1.0)
    >>> blurred[2].compute().round(3)
    array([0.023, 0.097, 0.159, 0.097, 0.022, 0.002], dtype=float32)
    """
    name = "gaussian_blur"
    image = _image(image, name)
    sigmas = (sigma, sigma) if isinstance(sigma, numbers.Real) else tuple(sigma)
    if len(sigmas) != 2:
        raise ArgumentValueError(f"{name}: sigma must be one number or (rows, columns), not "
                                 f"{sigma!r}")
    for s in sigmas:
        _number(name, "sigma", s, non_negative=True)
    _number(name, "truncate", truncate, positive=True)
    halo = [int(truncate * s + 0.5) if s else 0 for s in sigmas]
    return apply(kernels.gaussian_blur, image, sigma, halo=halo, mode=_mode(name, mode),
                 cval=_number(name, "cval", cval), truncate=truncate,
                 dtype=_result_dtype(image.dtype), device=device)


def grayscale(image, weights="bt601", *, device=None):
    """:func:`clkit.kernels.grayscale` on a dask array (the channel axis is read whole).

    Parameters
    ----------
    image : dask.array.Array
        HxWx3 (RGB) or HxWx4 (RGBA), uint8 or float32.
    weights : {"bt601", "bt709"} or sequence of 3 floats
    device : str, optional
        One device spec for every task; by default each worker's (:func:`worker_device`).

    Returns
    -------
    dask.array.Array
        HxW, the image's dtype, the image's row and column chunks.

    Examples
    --------
    >>> import numpy as np, dask.array as da, clkit.dask
    >>> rgb = da.from_array(np.array([[[255, 0, 0], [255, 255, 255]]], np.uint8), chunks=1)
    >>> clkit.dask.grayscale(rgb).compute()
    array([[ 76, 255]], dtype=uint8)
    """
    name = "grayscale"
    image = dask_array(image, name)
    if image.ndim != 3 or image.shape[2] not in (3, 4):
        raise ArgumentValueError(f"{name}: image must be HxWx3 (RGB) or HxWx4 (RGBA); got shape "
                                 f"{image.shape}")
    if image.dtype not in (np.uint8, np.float32):
        raise ArgumentTypeError(f"{name}: image has dtype {image.dtype}; use uint8 or float32")
    weights = kernels.gray_weights(weights)
    return apply(kernels.grayscale, image, weights, mode=None, drop_last=True, device=device)


def vector_add(a, b, *, device=None):
    """:func:`clkit.kernels.vector_add` on dask arrays; it joins a chain of clkit.dask
    filters.

    Applied to a result of :mod:`clkit.dask` (``a``, or ``b``: the sum is the same), the
    addition is one more step of that result's pass: each task adds the matching window of
    the other array on the device, and filters applied to the sum join the same pass.
    Otherwise it starts a pass of its own, block by block in ``a``'s chunks.

    Parameters
    ----------
    a, b : dask.array.Array
        Equal shapes and dtypes (any chunks).
    device : str, optional
        One device spec for every task; by default each worker's (:func:`worker_device`).

    Returns
    -------
    dask.array.Array
        ``a``'s dtype and chunks (``b``'s when only ``b`` is a clkit.dask result).

    Examples
    --------
    >>> import numpy as np, dask.array as da, clkit.dask
    >>> a = da.arange(6, dtype=np.float32, chunks=4)
    >>> clkit.dask.vector_add(a, a).compute()
    array([ 0.,  2.,  4.,  6.,  8., 10.], dtype=float32)
    >>> x = da.from_array(np.eye(4, dtype=np.float32), chunks=2)
    >>> y = clkit.dask.vector_add(clkit.dask.gaussian_blur(x, 1.0), x)   # one pass
    >>> len(y.dask.layers)
    2
    """
    name = "vector_add"
    a, b = dask_array(a, name, "a"), dask_array(b, name, "b")
    if a.dtype != b.dtype:
        raise ArgumentTypeError(f"{name}: a has dtype {a.dtype} and b {b.dtype}; convert one "
                                "(e.g. b.astype(a.dtype)) so that both match")
    if a.shape != b.shape:
        raise ArgumentValueError(f"{name}: a has shape {a.shape} and b {b.shape}; they must be "
                                 "equal")
    spec = device_spec(device, name)
    if chained(b, spec) and not chained(a, spec):
        a, b = b, a
    step = Filter(kernels.vector_add, (), {}, ((0, 0),) * a.ndim, ("nearest",) * a.ndim,
                  a.dtype, name=name, operands=1)
    return filtered(a, step, spec, (b,))
