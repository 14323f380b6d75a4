"""scipy.ndimage's filters on any OpenCL device.

The functions have scipy.ndimage's names, signatures, defaults, result dtypes and values, for
arrays of any number of dimensions, and take an extra keyword-only ``device=``. Numpy arrays
in give numpy arrays out; device arrays (:func:`clkit.to_device`, pyopencl arrays of a clkit
context) give device arrays on the same device, with no copy through the host. Switching an
import is enough::

    from clkit import ndimage          # was: from scipy import ndimage
    smooth = ndimage.gaussian_filter(volume, sigma=2)

Every function runs on the device; an argument clkit does not support raises
NotImplementedError naming it (complex data, for one), never a fallback to scipy.
"""

from ._derivatives import (gaussian_gradient_magnitude, gaussian_laplace, laplace, prewitt,
                           sobel)
from ._filters import (convolve, convolve1d, correlate, correlate1d, gaussian_filter,
                       gaussian_filter1d, uniform_filter, uniform_filter1d)
from ._rank import (maximum_filter, maximum_filter1d, median_filter, minimum_filter,
                    minimum_filter1d, percentile_filter, rank_filter)

__all__ = [
    "convolve", "convolve1d", "correlate", "correlate1d", "gaussian_filter",
    "gaussian_filter1d", "gaussian_gradient_magnitude", "gaussian_laplace", "laplace",
    "maximum_filter", "maximum_filter1d", "median_filter", "minimum_filter",
    "minimum_filter1d", "percentile_filter", "prewitt", "rank_filter", "sobel",
    "uniform_filter", "uniform_filter1d",
]
