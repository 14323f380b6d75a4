"""The Mandelbrot set: escape-time counts, computed in row bands."""

from __future__ import annotations

import numpy as np
import pyopencl.array as cl_array

from .._errors import ArgumentValueError
from .._runtime import runtime
from . import _bands
from ._common import (CL_TYPES, aligned_empty, check_dtype, check_number, check_out, device_of,
                      device_output, devices_of, download, is_device_array, is_multi, numpy_result,
                      program, require_fp64, round_up)

LOCAL = (16, 8)


def _step(lo, hi, num, t):
    """numpy.linspace's step in precision ``t`` (0 for a single sample)."""
    return (t(hi) - t(lo)) / t(num - 1) if num > 1 else t(0)


def launch_band(rt, dst, width, height, row0, rows, window, max_iter, dtype, queue=None):
    """Enqueue rows ``row0 .. row0 + rows - 1`` of the image into ``dst`` (rows x width int32)."""
    xmin, xmax, ymin, ymax = window
    t = np.dtype(dtype).type
    ppw = 1 if rt.device.type == "gpu" else 64 // np.dtype(dtype).itemsize
    prg = program("mandelbrot", T=CL_TYPES[np.dtype(dtype)], PPW=ppw)
    gsize = (round_up(-(-width // ppw), LOCAL[0]), round_up(rows, LOCAL[1]))
    prg.mandelbrot(dst, width, height, row0, rows, t(xmin), t(xmax), _step(xmin, xmax, width, t),
                   t(ymin), t(ymax), _step(ymin, ymax, height, t), max_iter,
                   global_size=gsize, local_size=LOCAL, device=rt.device, wait=False,
                   queue=queue)


def mandelbrot_rows(width, height, r0, r1, *, xmin=-2.0, xmax=1.0, ymin=-1.5, ymax=1.5,
                    max_iter=256, dtype=np.float32, device=None):
    """Rows ``r0 .. r1 - 1`` of :func:`mandelbrot`'s image, on one device (for MPI ranks)."""
    width, height, window, max_iter, dtype = check_args(
        "mandelbrot", width, height, (xmin, xmax, ymin, ymax), max_iter, dtype)
    rt = runtime(device_of("mandelbrot", device, []))
    if dtype == np.float64:
        require_fp64("mandelbrot", rt.device, "dtype float64")
    part = aligned_empty((r1 - r0, width), np.int32)
    if part.size:
        dst = device_output(rt, part, part.shape, np.int32)
        launch_band(rt, dst, width, height, r0, r1 - r0, window, max_iter, dtype)
        download(dst, part)
    return part


def check_args(func, width, height, window, max_iter, dtype):
    width = check_number(func, "width", width, integer=True, positive=True)
    height = check_number(func, "height", height, integer=True, positive=True)
    max_iter = check_number(func, "max_iter", max_iter, integer=True)
    if not 1 <= max_iter < 2**31:
        raise ArgumentValueError(f"{func}: max_iter must be at least 1 (and below 2**31), got "
                                 f"{max_iter}")
    names = ("xmin", "xmax", "ymin", "ymax")
    window = tuple(check_number(func, n, v) for n, v in zip(names, window))
    dtype = check_dtype(func, "dtype", dtype, (np.float32, np.float64))
    return width, height, window, max_iter, dtype


def mandelbrot(width, height, *, xmin=-2.0, xmax=1.0, ymin=-1.5, ymax=1.5, max_iter=256,
               dtype=np.float32, out=None, device=None):
    """Escape-time counts of the Mandelbrot set.

    For each pixel, c = x + iy; the count is the number of iterations
    z <- z*z + c, from z = 0, after which |z| > 2 first holds (1 for |c| > 2),
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

    Examples
    --------
    >>> from clkit.kernels import mandelbrot
    >>> mandelbrot(5, 3, max_iter=50, device="cpu")
    array([[ 1,  2,  2,  2,  2],
           [50, 50, 50, 50,  3],
           [ 1,  2,  2,  2,  2]], dtype=int32)
    """
    func = "mandelbrot"
    width, height, window, max_iter, dtype = check_args(
        func, width, height, (xmin, xmax, ymin, ymax), max_iter, dtype)
    shape = (height, width)
    on_device = out is not None and is_device_array(out)
    out = check_out(func, out, shape, np.int32, on_device)
    devices = devices_of(device) if is_multi(device) else \
        [device_of(func, device, [out] if on_device else [])]
    if dtype == np.float64:
        for dev in devices:
            require_fp64(func, dev, "dtype float64")
    args = (width, height, window, max_iter, dtype)
    if on_device and len(devices) == 1:
        rt = runtime(devices[0])
        dst = out if out.offset == 0 and out.flags.c_contiguous else \
            cl_array.empty(rt.queue, shape, np.int32)
        launch_band(rt, dst, width, height, 0, height, window, max_iter, dtype)
        if dst is not out:
            out[...] = dst
        return out
    result = numpy_result(shape, np.int32, None, devices)

    def band(rt, queue, r0, r1):
        part = result[r0:r1]
        dst = device_output(rt, part, part.shape, np.int32, queue)
        launch_band(rt, dst, width, height, r0, r1 - r0, window, max_iter, dtype, queue)
        download(dst, part)

    def probe(dev):
        rows = max(1, min(height, (1 << 20) // width))
        band(runtime(dev), runtime(dev).queue, (height - rows) // 2, (height + rows) // 2 or 1)
        return rows

    plan = _bands.proportional(devices, height, (func,) + args, probe)
    _bands.run(plan, band, lambda dev: _bands.tile_rows(dev, 4 * width))
    if on_device:
        out.set(result)
        return out
    if out is not None:
        out[...] = result
        return out
    return result
