"""The Mandelbrot set: escape-time counts, computed in row bands."""

from __future__ import annotations

import numpy as np

from .._engine.checks import check_dtype, check_number, is_device_array, require_fp64
from .._engine.dispatch import home_device, is_multi, run, run_rows
from .._engine.operation import CL_TYPES, Operation, program, round_up
from .._errors import ArgumentValueError
from .._platform.devices import select_many

LOCAL = (16, 8)


def _step(lo, hi, num, t):
    """numpy.linspace's step in precision ``t`` (0 for a single sample)."""
    return (t(hi) - t(lo)) / t(num - 1) if num > 1 else t(0)


class _Mandelbrot(Operation):
    name = "mandelbrot"
    dtype = np.dtype(np.int32)

    def __init__(self, width, height, window, max_iter, precision):
        self.shape = (height, width)
        self.window = window
        self.max_iter = max_iter
        self.precision = precision
        self.key = ("mandelbrot", width, height, window, max_iter, precision)

    def probe_band(self, rows):
        # the middle rows: the top and bottom ones escape at once
        height = self.shape[0]
        return (height - rows) // 2, (height - rows) // 2 + rows

    def plan(self, rt, r0, r1):
        height, width = self.shape
        t = self.precision.type
        if self.precision == np.float64:
            require_fp64(self.name, rt.device, "dtype float64")
        ppw = 1 if rt.device.type == "gpu" else 64 // self.precision.itemsize
        kernel = program("mandelbrot", T=CL_TYPES[self.precision], PPW=ppw).mandelbrot
        size = (round_up(-(-width // ppw), LOCAL[0]), round_up(r1 - r0, LOCAL[1]))
        xmin, xmax, ymin, ymax = self.window
        # Python numbers, rounded to the kernel's precision once, as the launch takes them
        args = (width, height, r0, r1 - r0) + tuple(float(v) for v in (
            t(xmin), t(xmax), _step(xmin, xmax, width, t), t(ymin), t(ymax),
            _step(ymin, ymax, height, t))) + (self.max_iter,)
        dev = rt.device

        def launch(queue, srcs, dst):
            kernel(dst, *args, global_size=size, local_size=LOCAL, device=dev, wait=False,
                   queue=queue)
        return launch


def mandelbrot_rows(width, height, r0, r1, *, xmin=-2.0, xmax=1.0, ymin=-1.5, ymax=1.5,
                    max_iter=256, dtype=np.float32, device=None):
    """Rows ``r0 .. r1 - 1`` of :func:`mandelbrot`'s image, on one device (for MPI ranks)."""
    args = check_args("mandelbrot", width, height, (xmin, xmax, ymin, ymax), max_iter, dtype)
    return run_rows(_Mandelbrot(*args), [], r0, r1, home_device("mandelbrot", device, []))


def check_args(name, width, height, window, max_iter, dtype):
    """The checked (width, height, window, max_iter, dtype) of a mandelbrot call."""
    width = check_number(name, "width", width, integer=True, positive=True)
    height = check_number(name, "height", height, integer=True, positive=True)
    max_iter = check_number(name, "max_iter", max_iter, integer=True)
    if not 1 <= max_iter < 2**31:
        raise ArgumentValueError(f"{name}: max_iter must be at least 1 (and below 2**31), got "
                                 f"{max_iter}")
    names = ("xmin", "xmax", "ymin", "ymax")
    window = tuple(check_number(name, n, v) for n, v in zip(names, window))
    dtype = check_dtype(name, "dtype", dtype, (np.float32, np.float64))
    return width, height, window, max_iter, dtype


def mandelbrot(width, height, *, xmin=-2.0, xmax=1.0, ymin=-1.5, ymax=1.5, max_iter=256,
               dtype=np.float32, out=None, device=None):
    """Escape-time counts of the Mandelbrot set.

    For each pixel, c = x + iy; the count is the number of iterations
    z <- z*z + c, from z = 0, after which ``|z| > 2`` first holds (1 for ``|c| > 2``),
    or ``max_iter`` if that does not happen within ``max_iter`` iterations.

    Parameters
    ----------
    width, height : int
        Image size in pixels.
    xmin, xmax, ymin, ymax : float
        The window: pixel centres are spaced as ``numpy.linspace`` spaces them,
        both ends included; row 0 has imaginary part ``ymin``.
    max_iter : int
        At least 1.
    dtype : {numpy.float32, numpy.float64}
        Precision of the arithmetic (float64 where the device has fp64).
    out : ndarray or device array, optional
        int32 (height, width); a device array gives a device array.
    device : Device or str, optional
        Where to run: a spec, ``"all"`` or a list of specs.

    Returns
    -------
    ndarray or device array
        int32, shape (height, width).

    Raises
    ------
    ArgumentValueError
        A width or height below 1, a window bound that is not finite, or ``max_iter``
        outside 1 to 2**31 - 1.
    DeviceNotFoundError
        ``device`` names no visible device.

    Examples
    --------
    >>> from clkit.kernels import mandelbrot
    >>> mandelbrot(5, 3, max_iter=50, device="cpu")
    array([[ 1,  2,  2,  2,  2],
           [50, 50, 50, 50,  3],
           [ 1,  2,  2,  2,  2]], dtype=int32)
    """
    name = "mandelbrot"
    op = _Mandelbrot(*check_args(name, width, height, (xmin, xmax, ymin, ymax), max_iter,
                                 dtype))
    if op.precision == np.float64 and is_multi(device):
        for dev in select_many(device):  # before any of them starts
            require_fp64(name, dev, "dtype float64")
    return run(op, [], out, device, on_device=is_device_array(out))
