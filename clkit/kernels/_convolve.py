"""convolve and gaussian_blur: 2-D filters as scipy.ndimage computes them."""

from __future__ import annotations

import numpy as np

from .._engine.checks import array
from .._engine.dispatch import run
from .._engine.filter import Filter, loadable, remembered


def convolve(image, mask, mode="reflect", cval=0.0, out=None, device=None):
    """Convolve an image with a 2-D mask, as ``scipy.ndimage.convolve``.

    Parameters
    ----------
    image : ndarray or device array
        HxW, or HxWxC with 1 to 4 channels (each filtered separately);
        bool, int8 to int64, uint8 to uint64, float32 or float64: every
        dtype scipy.ndimage takes, numpy's default integer included.
        Integer images give scipy's result on ``image.astype(np.float64)``,
        rounded to float32.  Those of 32 and 64 bits are summed in double
        where the device has fp64; on a device without fp64 they are summed
        in float32, so values beyond 2**24 (16,777,216) are rounded to float32
        before they are weighted.
    mask : array_like
        Any 2-D size, odd or even.  A rank-1 (separable) mask takes a two-pass
        path automatically, with the same results.
    mode : {"reflect", "constant", "nearest", "mirror", "wrap"}
        How the image extends beyond its edges, as in scipy.ndimage.
    cval : float
        The value outside the image in ``"constant"`` mode.
    out : ndarray or device array, optional
        Same shape as the image, float32 (float64 for float64 images).
    device : Device or str, optional
        Where to run: a spec, ``"all"`` or a list of specs.

    Returns
    -------
    ndarray or device array
        float32 (bool, integer and float32 images) or float64 (float64
        images, on devices with fp64), the image's shape.

    Raises
    ------
    ArgumentTypeError
        An image dtype scipy.ndimage does not take (complex, objects), or float64 on a
        device without fp64.
    ArgumentValueError
        An unknown ``mode``, a mask that is not a non-empty 2-D array, an image that is not
        HxW or HxWxC with 1 to 4 channels, or an ``out`` of another shape or dtype.
    DeviceNotFoundError
        ``device`` names no visible device.
    OutOfDeviceMemoryError
        A part of the image the kernels need at once (a row band with its halo) does not fit
        in the device's memory; larger images are streamed in tiles.

    Examples
    --------
    >>> import numpy as np
    >>> from clkit.kernels import convolve
    >>> image = np.arange(12, dtype=np.float32).reshape(3, 4)
    >>> convolve(image, np.ones((1, 3)) / 3, mode="nearest", device="cpu").round(3)
    array([[ 0.333,  1.   ,  2.   ,  2.667],
           [ 4.333,  5.   ,  6.   ,  6.667],
           [ 8.333,  9.   , 10.   , 10.667]], dtype=float32)
    """
    image = array(image, "convolve", "image")

    def make():
        return Filter.for_mask("convolve", image, mask, mode, cval)
    if not isinstance(mask, np.ndarray):
        return run(make(), [loadable(image)], out, device)
    key = ("convolve", tuple(image.shape), image.dtype, mask.tobytes(), mask.shape, mask.dtype,
           mode, cval, type(cval))
    return run(remembered(key, make), [loadable(image)], out, device)


def gaussian_blur(image, sigma, mode="reflect", cval=0.0, truncate=4.0, out=None, device=None):
    """Gaussian blur, as ``scipy.ndimage.gaussian_filter``.

    Parameters
    ----------
    image : ndarray or device array
        HxW, or HxWxC with 1 to 4 channels (each blurred separately, as scipy
        with ``sigma=(s, s, 0)``); dtypes as :func:`convolve`.
    sigma : float or (float, float)
        Standard deviation in pixels, one for both axes or (rows, columns);
        not negative (0 leaves that axis as it is, as in scipy).
    mode : {"reflect", "constant", "nearest", "mirror", "wrap"}
        How the image extends beyond its edges, as in scipy.ndimage.
    cval : float
        The value outside the image in ``"constant"`` mode.
    truncate : float
        The mask's radius is ``int(truncate * sigma + 0.5)``.
    out : ndarray or device array, optional
        Same shape as the image, float32 (float64 for float64 images).
    device : Device or str, optional
        Where to run: a spec, ``"all"`` or a list of specs.

    Returns
    -------
    ndarray or device array
        float32 (float64 for float64 images), the image's shape.

    Raises
    ------
    ArgumentTypeError
        An image dtype scipy.ndimage does not take, or float64 on a device without fp64.
    ArgumentValueError
        A negative ``sigma`` or a non-positive ``truncate``, a mask larger than clkit
        handles, an unknown ``mode``, an image that is not HxW or HxWxC with 1 to 4
        channels, or an ``out`` of another shape or dtype.
    DeviceNotFoundError
        ``device`` names no visible device.
    OutOfDeviceMemoryError
        A part of the image the kernels need at once does not fit in the device's memory.

    Examples
    --------
    >>> import numpy as np
    >>> from clkit.kernels import gaussian_blur
    >>> impulse = np.zeros((5, 5), np.float32); impulse[2, 2] = 1
    >>> gaussian_blur(impulse, 1.0, device="cpu")[2].round(3)
    array([0.023, 0.097, 0.159, 0.097, 0.023], dtype=float32)
    """
    image = array(image, "gaussian_blur", "image")

    def make():
        return Filter.for_gaussian("gaussian_blur", image, sigma, mode, cval, truncate)
    key = ("gaussian_blur", tuple(image.shape), image.dtype, sigma, type(sigma), mode, cval,
           type(cval), truncate, type(truncate))
    return run(remembered(key, make), [loadable(image)], out, device)
