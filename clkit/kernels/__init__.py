"""The kernel library: ready image and array kernels on any OpenCL device.

Each function takes ``device=`` and, where it makes sense, ``out=``.  Numpy
arrays in give numpy arrays out; device arrays in give device arrays out,
with no transfers.  The kernels are the ``.cl`` files of ``kernels_cl/``,
one per function.
"""

from ._basic import grayscale, hello, vector_add
from ._convolve import convolve, gaussian_blur
from ._depth import depth_to_points
from ._mandelbrot import mandelbrot
from ._warmup import warmup

__all__ = ["convolve", "depth_to_points", "gaussian_blur", "grayscale", "hello", "mandelbrot",
           "vector_add", "warmup"]
