"""Independent numpy references and comparison helpers for the kernel-library tests.

Nothing here imports clkit's kernels: the references follow the behaviour the
library documents (its docstrings and the README), with scipy/OpenCV where the
documentation names them, so that the tests are a real check of
``clkit.kernels``.  Also the user kernels that several test modules launch.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pyopencl as cl
import pytest
import scipy.ndimage

import clkit
from clkit._build import tiers as _tiers

EPS32 = float(np.finfo(np.float32).eps)

WEIGHTS = {"bt601": (0.299, 0.587, 0.114), "bt709": (0.2126, 0.7152, 0.0722)}

MODES = ("reflect", "constant", "nearest", "mirror", "wrap")


# -- user kernels ---------------------------------------------------------------------------------

SAXPY = """
__kernel void saxpy(const float alpha, __global const float* x, __global float* y)
{
    size_t i = get_global_id(0);
    y[i] = alpha * x[i] + y[i];
}
"""

#: One sum per work-group, through local memory and barriers.
BLOCK_SUMS = """
__kernel void block_sums(__global const float* x, __global float* sums, __local float* tmp)
{
    size_t lid = get_local_id(0), n = get_local_size(0);
    tmp[lid] = x[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t step = n / 2; step > 0; step /= 2) {
        if (lid < step) tmp[lid] += tmp[lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) sums[get_group_id(0)] = tmp[0];
}
"""


# -- device helpers ------------------------------------------------------------------------------

def skip_on_simulator(device, what="this size"):
    """Skip on Oclgrind, which runs kernels about 1000x slower than a CPU driver."""
    if device.simulator:
        pytest.skip(f"{what} is too slow on the {device.name}")


@contextlib.contextmanager
def reporting(device, **attributes):
    """The device, reporting other attributes (``fp64=False``, ``type="gpu"``, ...) inside the
    block, so that the paths for devices CI does not have run on the devices it has.

    Background builds wait for the block: one already queued finishes first, and none starts
    inside it (each call builds what it needs itself). A build in another thread would read
    the borrowed attributes, and its first launch would take the path they choose. They are
    turned off through clkit's own setting, which the block puts back as it found it, never
    through ``CLKIT_BACKGROUND_BUILDS``: a test's ``monkeypatch.setenv`` of that variable,
    undone after the block's end, would put back the value the block had set."""
    saved = {name: getattr(device, name) for name in attributes}
    builds = list(_tiers._enabled)
    _tiers.background_builds(False)
    _tiers.wait_idle()
    for name, value in attributes.items():
        object.__setattr__(device, name, value)
    fake_gpu = attributes.get("type") == "gpu" and not device.cl_device.type & cl.device_type.GPU
    try:
        with _unoptimised_gpu_layout() if fake_gpu else contextlib.nullcontext():
            yield device
    finally:
        for name, value in saved.items():
            object.__setattr__(device, name, value)
        _tiers._enabled[:] = builds


@contextlib.contextmanager
def _unoptimised_gpu_layout():
    """The convolution's GPU layout built with ``-cl-opt-disable`` on a CPU driver posing as a
    GPU. PoCL's optimiser spends 6 to 7 s on each such build (loops of local-memory tiles
    between barriers), 0.5 s without it; the kernels compute the same IEEE operations on the
    same values, and what they are tested for here is the layout's indexing and border logic
    (on GPUs their own compiler builds them)."""
    from clkit._engine import filter as _filter
    original = _filter.program

    def program(name, options=(), **defines):
        if name in ("convolution_gpu", "convolution_fused") and "-cl-opt-disable" not in options:
            options = tuple(options) + ("-cl-opt-disable",)
        return original(name, options=options, **defines)

    _filter.program = program
    try:
        yield
    finally:
        _filter.program = original


def need_fp64(device):
    if not device.fp64:
        pytest.skip(f"{device} has no cl_khr_fp64")


class Transfers:
    """Host<->device copies seen through ``pyopencl.enqueue_copy`` (and buffer maps).

    ``reads`` and ``writes`` hold the byte counts of device->host and host->device
    copies; device->device copies are not transfers and are only counted in
    ``device_copies``.
    """

    def __init__(self):
        self.reads: list[int] = []
        self.writes: list[int] = []
        self.maps: list[int] = []
        self.device_copies = 0

    @staticmethod
    def _is_device(obj):
        return isinstance(obj, (cl.MemoryObjectHolder, cl.SVM)) or hasattr(obj, "base_data")

    @staticmethod
    def _nbytes(obj):
        try:
            return memoryview(obj).nbytes
        except TypeError:
            return getattr(obj, "nbytes", -1)

    def record(self, dest, src):
        if self._is_device(dest) and self._is_device(src):
            self.device_copies += 1
        elif self._is_device(src):
            self.reads.append(self._nbytes(dest))
        else:
            self.writes.append(self._nbytes(src))

    @property
    def host_bytes(self):
        return sum(self.reads) + sum(self.writes) + sum(self.maps)

    def __repr__(self):
        return (f"Transfers(reads={self.reads}, writes={self.writes}, maps={self.maps}, "
                f"device_copies={self.device_copies})")


def record_transfers(monkeypatch) -> Transfers:
    """Patch ``pyopencl.enqueue_copy`` and ``enqueue_map_buffer`` to log host transfers."""
    log = Transfers()
    real_copy, real_map = cl.enqueue_copy, cl.enqueue_map_buffer

    def copy(queue, dest, src, *args, **kwargs):
        log.record(dest, src)
        return real_copy(queue, dest, src, *args, **kwargs)

    def map_buffer(queue, buf, flags, offset, shape, dtype, *args, **kwargs):
        log.maps.append(int(np.prod(shape)) * np.dtype(dtype).itemsize)
        return real_map(queue, buf, flags, offset, shape, dtype, *args, **kwargs)

    monkeypatch.setattr(cl, "enqueue_copy", copy)
    monkeypatch.setattr(cl, "enqueue_map_buffer", map_buffer)
    return log


def raises_argument_error(match):
    """TypeError or ValueError from clkit's own hierarchy, its message matching ``match``."""
    return pytest.raises((clkit.ArgumentTypeError, clkit.ArgumentValueError), match=match)


# -- comparing floating-point results ------------------------------------------------------------

def assert_close_scaled(got, expected, scale, *, dtype=np.float32, ulps=8.0, what="result"):
    """Assert ``|got - expected| <= ulps * eps(dtype) * scale`` element by element.

    ``scale`` is the size of the quantities whose rounding makes up the error
    (for a convolution the sum of |mask| * |image| over the window), so the
    bound is tight where values are large and where they cancel alike.
    NaN equals only NaN, an infinity only the same infinity, and a finite
    expected value only a finite one, whatever ``scale`` allows.
    """
    got = np.asarray(got)
    expected = np.asarray(expected, dtype=np.float64)
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, expected {expected.shape}"
    g = got.astype(np.float64)
    eps = float(np.finfo(dtype).eps)
    tol = ulps * eps * np.abs(np.asarray(scale, dtype=np.float64)) + float(np.finfo(dtype).tiny)
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(expected)
        ok = finite & np.isfinite(g) & (np.abs(g - expected) <= tol)
        ok |= np.isnan(g) & np.isnan(expected)
        ok |= np.isinf(expected) & (g == expected)
    if not ok.all():
        bad = np.argwhere(~ok)
        with np.errstate(invalid="ignore", divide="ignore"):
            err = np.where(ok, 0.0, np.abs(g - expected) / tol)
        # A non-finite mismatch (NaN for a number, -inf for inf) is the worst kind.
        err = np.where(~ok & ~(finite & np.isfinite(g)), np.inf, err)
        err = np.where(np.isnan(err), np.inf, err)
        first = tuple(int(i) for i in bad[0])
        worst = tuple(int(i) for i in np.unravel_index(np.argmax(err), err.shape))
        tol = np.broadcast_to(tol, g.shape)
        raise AssertionError(
            f"{what}: {len(bad)} of {ok.size} elements differ beyond {ulps:g} ulp x scale "
            f"({np.dtype(dtype).name}); first at {first}: got {float(g[first])!r}, "
            f"expected {float(expected[first])!r}; worst at {worst}: got {float(g[worst])!r}, "
            f"expected {float(expected[worst])!r}, tolerance {float(tol[worst])!r}")


def filter_ulps(n_terms):
    """Rounding allowance for a sum of ``n_terms`` products, plus the inputs' own rounding.

    A float32 sum of n terms errs by about sqrt(n) ulps of the sum of magnitudes
    in practice (n ulps at worst, never seen); a wrong border, offset or flip errs
    by a whole pixel value, thousands of times more.
    """
    return 4.0 + 2.0 * math.sqrt(n_terms)


def result_dtype(image_dtype):
    """The dtype convolve/gaussian_blur return: float64 stays, everything else is float32."""
    return np.dtype(np.float64) if np.dtype(image_dtype) == np.float64 else np.dtype(np.float32)


# -- convolve and gaussian_blur ------------------------------------------------------------------

def convolve_reference(image, mask, mode="reflect", cval=0.0):
    """scipy.ndimage.convolve in float64; an HxWxC image is convolved channel by channel.

    Returns ``(expected, scale)``, ``scale`` being the same convolution of |image|
    with |mask| (and |cval|): the size of what the sum rounds.
    """
    image = np.asarray(image).astype(np.float64)
    mask = np.asarray(mask, dtype=np.float64)
    if image.ndim == 3:
        mask = mask[:, :, None]
    expected = scipy.ndimage.convolve(image, mask, mode=mode, cval=cval)
    scale = scipy.ndimage.convolve(np.abs(image), np.abs(mask), mode=mode, cval=abs(cval))
    return expected, scale


def gaussian_radius(sigma, truncate=4.0):
    """The half-width scipy.ndimage.gaussian_filter uses."""
    return int(truncate * float(sigma) + 0.5)


def gaussian_reference(image, sigma, mode="reflect", cval=0.0, truncate=4.0):
    """scipy.ndimage.gaussian_filter in float64, and its |.| scale.

    ``sigma`` is one number or (sigma y, sigma x); an HxWxC image is blurred
    channel by channel (sigma 0 along the channels).
    """
    image = np.asarray(image).astype(np.float64)
    sy, sx = (sigma, sigma) if np.ndim(sigma) == 0 else sigma
    sigmas = (sy, sx, 0) if image.ndim == 3 else (sy, sx)
    kw = dict(mode=mode, cval=cval, truncate=truncate)
    expected = scipy.ndimage.gaussian_filter(image, sigmas, **kw)
    kw["cval"] = abs(cval)
    scale = scipy.ndimage.gaussian_filter(np.abs(image), sigmas, **kw)
    return expected, scale


def random_image(rng, shape, dtype):
    """Random pixels over the useful range of ``dtype`` (floats: signed, around unit size)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "ui":
        info = np.iinfo(dtype)
        low, high = max(info.min, -30000), min(info.max, 60000)
        return rng.integers(low, high, size=shape, endpoint=True).astype(dtype)
    return (rng.standard_normal(shape) * 2.0 + 0.5).astype(dtype)


# -- grayscale -----------------------------------------------------------------------------------

def gray_reference(image, weights):
    """``image[..., :3] @ weights`` in float64."""
    w = np.asarray(WEIGHTS.get(weights, weights) if isinstance(weights, str) else weights,
                   dtype=np.float64)
    return np.asarray(image)[..., :3].astype(np.float64) @ w


def gray_uint8_reference(image, weights="bt601"):
    """uint8 luma, exactly as OpenCV's 8-bit RGB2GRAY computes it.

    bt601 is ``cv2.cvtColor`` itself.  Other weights follow the same 15-bit
    fixed-point scheme, written out in numpy: the float32 weights times 2^15,
    rounded half to even, for R and G; B takes the rest of the rounded sum of
    the three, so that they add up as the weights do; then
    ``(R*cr + G*cg + B*cb + 2^14) >> 15``, saturated to 0..255.
    """
    image = np.asarray(image)
    if isinstance(weights, str) and weights == "bt601":
        import cv2
        return cv2.cvtColor(np.ascontiguousarray(image[..., :3]), cv2.COLOR_RGB2GRAY)
    w = np.asarray(WEIGHTS.get(weights, weights) if isinstance(weights, str) else weights,
                   dtype=np.float32)
    one = np.float32(2 ** 15)
    cr, cg = (int(np.rint(x * one)) for x in w[:2])
    cb = int(np.rint(((w[0] + w[1]) + w[2]) * one)) - cr - cg
    rgb = image[..., :3].astype(np.int64)
    luma = (rgb[..., 0] * cr + rgb[..., 1] * cg + rgb[..., 2] * cb + 2 ** 14) >> 15
    return np.clip(luma, 0, 255).astype(np.uint8)


# -- mandelbrot ----------------------------------------------------------------------------------

def mandelbrot_reference(width, height, *, xmin=-2.0, xmax=1.0, ymin=-1.5, ymax=1.5,
                         max_iter=256, dtype=np.float32):
    """Escape-time counts as :func:`clkit.kernels.mandelbrot` documents them, in ``dtype``.

    ``c = x + iy`` with x = numpy.linspace(xmin, xmax, width) for the columns and
    y = numpy.linspace(ymin, ymax, height) for the rows (row 0 has ymin).  The
    count is the n of the first iterate z_n (z_0 = 0, z_{k+1} = z_k^2 + c) with
    |z_n| > 2, or ``max_iter`` when z_1 .. z_max_iter all stay within |z| <= 2.
    """
    dtype = np.dtype(dtype)
    t = dtype.type
    re = np.linspace(t(xmin), t(xmax), width, dtype=dtype)
    im = np.linspace(t(ymin), t(ymax), height, dtype=dtype)
    cr, ci = (a.ravel() for a in np.meshgrid(re, im))  # (height, width): rows are y
    counts = np.full(cr.size, max_iter, dtype=np.int32)
    idx = np.arange(cr.size)
    zr = np.zeros(cr.size, dtype)
    zi = np.zeros(cr.size, dtype)
    two, four = t(2), t(4)
    with np.errstate(over="ignore", invalid="ignore"):
        for n in range(1, max_iter + 1):
            zr2, zi2 = zr * zr, zi * zi
            zi = two * zr * zi + ci
            zr = (zr2 - zi2) + cr
            escaped = zr * zr + zi * zi > four
            if escaped.any():
                counts[idx[escaped]] = n
                keep = ~escaped
                idx, zr, zi, cr, ci = idx[keep], zr[keep], zi[keep], cr[keep], ci[keep]
                if idx.size == 0:
                    break
    return counts.reshape(height, width)


def assert_counts_equal(got, expected, what="counts"):
    """Every count equal to the reference's.

    The kernel does each operation of the reference in the same order, as one
    correctly rounded IEEE operation, with contraction into fma switched off:
    CPU drivers and the simulator agree on every pixel (0 of 1,081,556 differ
    over tests/kernels/test_mandelbrot.py's cases, PoCL 3.1 and Oclgrind 21.10),
    so no pixel, not even on the chaotic boundary, is allowed to differ.
    """
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, expected {expected.shape}"
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype}, expected {expected.dtype}"
    same = got == expected
    if not same.all():
        bad = np.argwhere(~same)
        sample = ", ".join(f"{tuple(int(i) for i in b)}: got {got[tuple(b)]} expected "
                           f"{expected[tuple(b)]}" for b in bad[:5])
        raise AssertionError(f"{what}: {len(bad)} of {same.size} differ; e.g. {sample}")


# -- depth_to_points -----------------------------------------------------------------------------

def pinhole_reference(depth, fx, fy, cx, cy, depth_scale=1.0):
    """The pinhole back-projection of every pixel, row-major, in float64.

    Returns ``(points, scale, valid)``: points (H*W, 3) with z = depth / depth_scale,
    x = (u - cx) z / fx, y = (v - cy) z / fy for column u and row v; ``scale``
    (H*W, 3) the magnitudes whose float32 rounding the result may carry; and
    ``valid`` (H*W,), the pixels whose float32 z is finite and not 0.
    """
    depth = np.asarray(depth)
    h, w = depth.shape
    v, u = np.mgrid[0:h, 0:w].astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        z = depth.astype(np.float64) / depth_scale
        x = (u - cx) * z / fx
        y = (v - cy) * z / fy
        points = np.stack([x, y, z], axis=-1).reshape(-1, 3)
        az = np.abs(z)
        scale = np.stack([(np.abs(u) + abs(cx)) * az / abs(fx),
                          (np.abs(v) + abs(cy)) * az / abs(fy), az], axis=-1).reshape(-1, 3)
        z32 = depth.astype(np.float32) / np.float32(depth_scale)
    valid = (np.isfinite(z32) & (z32 != 0)).ravel()
    return points, scale, valid
