"""The kernel library: ready image and array kernels on any OpenCL device.

Each function takes ``device=`` and, where it makes sense, ``out=``.  Numpy
arrays in give numpy arrays out; device arrays in give device arrays out,
with no transfers, and the call returns once the kernels are enqueued (the
results are ready when the device's queue says so, as in pyopencl).  The
kernels are the ``.cl`` files of ``kernels_cl/``, one per function.

Every function describes its work to one dispatch layer (``_dispatch``),
which picks the devices, moves the data and keeps what a repeated call can
reuse; temporaries and results come from memory pools, together at most an
eighth of each device's memory unused (:func:`release_memory` empties them).
"""

from .._engine.stencil import gaussian_taps
from .._memory.pools import release_memory
from ._convolve import convolve, gaussian_blur
from ._depth import depth_to_points
from ._elementwise import vector_add
from ._grayscale import gray_weights, grayscale
from ._hello import hello
from ._mandelbrot import mandelbrot
from ._warmup import warmup

__all__ = ["convolve", "depth_to_points", "gaussian_blur", "gaussian_taps", "gray_weights",
           "grayscale", "hello", "mandelbrot", "release_memory", "vector_add", "warmup"]
