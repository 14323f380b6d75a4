"""Every library kernel on the Oclgrind simulator, with its checks on: the cases and their runner.

``test_oclgrind.py`` runs ``python tests/helpers/_oclgrind_cases.py GROUP`` in a child
process whose environment turns Oclgrind's memory, race, uninitialised-value
and API checks on (Oclgrind reads them once, when its driver loads, so they
cannot be switched on inside the test process).  The child runs every case of
the group on the Oclgrind device, one after the other in one OpenCL context, as
a user's script makes its calls (each call's buffers land where earlier calls
freed theirs, which is where the uninitialised-value check once went wrong,
see clkit._memory.pools.scratch); each case checks its
result against an independent reference and waits for every queue, and the
child then reads what Oclgrind wrote on stderr during that case.  It prints
one JSON line per case: the case's name, seconds, the diagnostics, the other
stderr output and the error, if any.

The sizes are small and odd on purpose (Oclgrind runs kernels about a
thousand times slower than a CPU driver, more with its checks on), yet large
enough that every code path of each kernel runs: the vector body and the
scalar tail, interior runs and border runs, every border mode, masks larger
than the image, the separable two-pass path, tiles of a few rows with halos,
row bands split between PoCL and Oclgrind, and the GPU variants of the
kernels (work-groups of 256 with local memory and barriers: where data races
live), which run on Oclgrind when the device is made to report itself a GPU.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import sys
import time
import traceback
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the helpers
if importlib.util.find_spec("clkit") is None:  # run by hand in a checkout: the checkout's clkit
    sys.path.insert(0, str(HERE.parents[1]))

import numpy as np  # noqa: E402

MODES = ("reflect", "constant", "nearest", "mirror", "wrap")

#: name -> (group, function(device)); filled by @case below, in definition order.
CASES: dict = {}

#: The groups, each run in one child process, and the Oclgrind checks each runs with.
ALL_CHECKS = {"OCLGRIND_CHECK_API": "1", "OCLGRIND_DATA_RACES": "1",
              "OCLGRIND_UNINITIALIZED": "1"}
GROUPS = {
    "basic": ALL_CHECKS,
    "convolve": ALL_CHECKS,
    "gpu": ALL_CHECKS,
    "tiled": ALL_CHECKS,
    "multi": ALL_CHECKS,
    "tiled-separable": ALL_CHECKS,
    "multi-separable": ALL_CHECKS,
}


def case(group, *names):
    """Register ``fn(device, *params)`` once per name; a name ``"base[param]"`` passes param."""
    def register(fn):
        for name, params in names:
            CASES[name] = (group, fn, params)
        return fn
    return register


def one(name, *params):
    return (name, params)


# -- checks ----------------------------------------------------------------------------------

def close(got, expected, scale, ulps, what):
    from _reference import assert_close_scaled
    assert_close_scaled(got, expected, scale, ulps=ulps, what=what)


def check_convolve(result, image, mask, mode, cval=0.0, what="convolve"):
    from _reference import convolve_reference, filter_ulps, result_dtype
    expected, scale = convolve_reference(image, mask, mode, cval)
    assert result.dtype == result_dtype(image.dtype), result.dtype
    close(result, expected, scale, filter_ulps(mask.size), f"{what} {image.shape} {mode}")


def check_gaussian(result, image, sigma, mode, cval=0.0):
    from _reference import filter_ulps, gaussian_radius, gaussian_reference
    expected, scale = gaussian_reference(image, sigma, mode, cval)
    taps = 2 * max(gaussian_radius(s) for s in np.atleast_1d(sigma)) + 1
    close(result, expected, scale, filter_ulps(taps * taps), f"gaussian_blur {image.shape} {mode}")


def rng():
    return np.random.default_rng(2024)


def image(shape, dtype=np.float32):
    from _reference import random_image
    return random_image(rng(), shape, dtype)


# -- basic: hello, vector_add, grayscale, mandelbrot, depth_to_points, the launch API ---------

@case("basic", one("hello"))
def _hello(dev):
    from clkit.kernels import hello
    assert hello(device=dev) == "Hello, World!"


@case("basic", *[one(f"vector_add[{np.dtype(t).name}-{n}]", t, n) for t, n in
                 [(np.float32, 37), (np.int8, 131), (np.uint16, 1), (np.int64, 19),
                  (np.float64, 9)]])
def _vector_add(dev, dtype, n):
    from clkit.kernels import vector_add
    r = rng()
    if np.dtype(dtype).kind == "f":
        a, b = (r.standard_normal(n).astype(dtype) for _ in range(2))
    else:
        info = np.iinfo(dtype)
        a, b = (r.integers(info.min, info.max, n, dtype=dtype, endpoint=True) for _ in range(2))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(vector_add(a, b, device=dev), a + b)


@case("basic", one("vector_add[device-arrays-3x5x7]"))
def _vector_add_device(dev):
    import clkit
    from clkit.kernels import vector_add
    a = image((3, 5, 7))
    da, db = clkit.to_device(a, device=dev), clkit.to_device(a[::-1].copy(), device=dev)
    np.testing.assert_array_equal(vector_add(da, db).get(), a + a[::-1])


@case("basic", *[one(f"grayscale[{np.dtype(t).name}-{c}ch-{h}x{w}]", t, c, h, w)
                 for t in (np.uint8, np.float32) for c in (3, 4) for h, w in ((1, 1), (9, 11))])
def _grayscale(dev, dtype, channels, h, w):
    from _reference import gray_reference, gray_uint8_reference
    from clkit.kernels import grayscale
    r = rng()
    if dtype == np.uint8:
        rgb = r.integers(0, 256, (h, w, channels), dtype=np.uint8)
    else:
        rgb = (r.random((h, w, channels)) * 1.5 - 0.25).astype(np.float32)
    got = grayscale(rgb, device=dev)
    expected = gray_reference(rgb, "bt601")
    if dtype == np.uint8:
        np.testing.assert_array_equal(got, gray_uint8_reference(rgb))
    else:
        scale = np.abs(rgb[..., :3].astype(np.float64)) @ np.array([0.299, 0.587, 0.114])
        close(got, expected, scale, 6, "grayscale")


@case("basic", one("grayscale[strided-view]"))
def _grayscale_view(dev):
    import cv2
    from clkit.kernels import grayscale
    rgba = rng().integers(0, 256, (7, 21, 4), dtype=np.uint8)
    view = rgba[::-1, ::2, :3]
    expected = cv2.cvtColor(np.ascontiguousarray(view), cv2.COLOR_RGB2GRAY)
    np.testing.assert_array_equal(grayscale(view, device=dev), expected)


@case("basic", *[one(f"mandelbrot[{np.dtype(t).name}-{w}x{h}]", t, w, h)
                 for t, w, h in ((np.float32, 37, 5), (np.float64, 19, 3), (np.float32, 1, 1))])
def _mandelbrot(dev, dtype, w, h):
    from _reference import assert_counts_equal, mandelbrot_reference
    from clkit.kernels import mandelbrot
    window = dict(xmin=-1.9, xmax=0.6, ymin=-1.1, ymax=1.2, max_iter=40)
    got = mandelbrot(w, h, dtype=dtype, device=dev, **window)
    assert_counts_equal(got, mandelbrot_reference(w, h, dtype=dtype, **window))


@case("basic", *[one(f"depth_to_points[{np.dtype(t).name}-{'rgb' if c else 'xyz'}-"
                     f"{'drop' if d else 'keep'}]", t, c, d)
                 for t in (np.uint16, np.float32) for c in (False, True) for d in (True, False)])
def _depth(dev, dtype, colour, drop):
    from _reference import pinhole_reference
    from clkit.kernels import depth_to_points
    r = rng()
    shape = (13, 17)  # 221 pixels: a work-group of 16 pixels' blocks, a partial block, a tail
    if dtype == np.uint16:
        depth = r.integers(1, 5000, shape).astype(np.uint16)
        depth[r.random(shape) < 0.3] = 0
    else:
        depth = r.uniform(0.5, 4.0, shape).astype(np.float32)
        pick = r.random(shape)
        depth[pick < 0.3] = 0.0
        depth[pick < 0.2] = np.inf
        depth[pick < 0.1] = np.nan
    rgb = r.integers(0, 256, shape + (3,), dtype=np.uint8) if colour else None
    cam = dict(fx=20.5, fy=19.0, cx=8.2, cy=5.9)
    result = depth_to_points(depth, rgb=rgb, drop_invalid=drop, device=dev, **cam)
    points, colors = result if colour else (result, None)
    expected, scale, valid = pinhole_reference(depth, **cam)
    if drop:
        expected, scale = expected[valid], scale[valid]
    close(points, expected, scale, 8, "points")
    if colour:
        want = rgb.reshape(-1, 3)[valid] if drop else rgb.reshape(-1, 3)
        np.testing.assert_array_equal(colors, want)


@case("basic", one("depth_to_points[device-arrays]"))
def _depth_device(dev):
    import clkit
    from _reference import pinhole_reference
    from clkit.kernels import depth_to_points
    depth = rng().integers(0, 3000, (5, 41)).astype(np.uint16)
    cam = dict(fx=10.0, fy=11.0, cx=20.0, cy=2.0)
    points = depth_to_points(clkit.to_device(depth, device=dev), depth_scale=1000.0, **cam)
    expected, scale, valid = pinhole_reference(depth, depth_scale=1000.0, **cam)
    close(points.get(), expected[valid], scale[valid], 8, "points")


@case("basic", one("launch[user-kernel-local-memory-strided]"))
def _user_kernel(dev):
    import clkit
    from _reference import BLOCK_SUMS, SAXPY
    prg = clkit.Program.from_source(BLOCK_SUMS + SAXPY, name="<oclgrind-user>")
    x = image((64 * 3,))
    sums = np.zeros(3, np.float32)
    prg.block_sums(x, sums, clkit.LocalMemory(64 * 4), local_size=64, device=dev)
    np.testing.assert_allclose(sums, x.reshape(3, 64).sum(axis=1), rtol=1e-4, atol=1e-4)
    big = image((40,))
    y = big[::-2]  # a negative-stride output: staged, copied back in place
    expected = np.float32(2) * x[:20] + y
    prg.saxpy(2.0, x[:20], y, device=dev)
    np.testing.assert_allclose(big[::-2], expected, rtol=1e-6)


@case("basic", one("sequence[every-library-kernel-one-after-another]"))
def _sequence(dev):
    # Calls of different sizes one after the other in one context, as a user's script makes
    # them: each call's buffers and temporaries come where earlier calls freed theirs.
    from clkit.kernels import convolve, gaussian_blur, grayscale, vector_add
    r = rng()
    a = r.standard_normal(37).astype(np.float32)
    np.testing.assert_array_equal(vector_add(a, a, device=dev), a + a)
    rgb = image((7, 13, 3), np.uint8)
    assert grayscale(rgb, device=dev).shape == (7, 13)
    for mode in MODES:
        img, mask = image((9, 11)), r.random((4, 3))
        check_convolve(convolve(img, mask, mode=mode, device=dev), img, mask, mode)
    img, mask = image((3, 2)), r.random((7, 7))
    check_convolve(convolve(img, mask, mode="wrap", device=dev), img, mask, "wrap")
    img, mask = image((6, 5, 3)), np.outer([1, 2, 1], [1, 0, -1])
    check_convolve(convolve(img, mask, device=dev), img, mask, "reflect")
    for shape in ((10, 9), (4, 30), (10, 9)):
        img = image(shape)
        check_gaussian(gaussian_blur(img, 1.3, device=dev), img, 1.3, "reflect")


@case("basic", one("canary[out-of-bounds-read]"))
def _canary(dev):
    """A kernel that reads one element past its buffer: the runner must report it (the test
    expects diagnostics here, so that a runner that saw nothing cannot pass unnoticed)."""
    import clkit
    prg = clkit.Program.from_source(
        "__kernel void shift(__global const float* x, __global float* y)\n"
        "{ size_t i = get_global_id(0); y[i] = x[i + 1]; }\n", name="<canary>")
    prg.shift(np.ones(7, np.float32), np.zeros(7, np.float32), device=dev)


#: Cases that must report, and what: the canary (with its source line, which Oclgrind quotes
#: when it compiled the source itself).
EXPECT_DIAGNOSTICS = {"canary[out-of-bounds-read]": ("Invalid read of size 4", "Kernel: shift",
                                                     "y[i] = x[i + 1];")}


# -- convolve and gaussian_blur: every border mode, both paths, both variants -------------------

CONVOLVE = [one(f"convolve[{mode}-{kind}]", mode, kind) for mode in MODES
            for kind in ("general-5x4", "separable-3x3", "mask-larger-9x7", "1x1-image")]


def convolve_case(dev, mode, kind, shape=(7, 53)):
    """53 columns: runs of 16 (32 for the two-pass path) that touch a border and that do not."""
    from clkit.kernels import convolve
    r = rng()
    if kind == "general-5x4":
        img, mask = image(shape), r.standard_normal((5, 4))
    elif kind == "separable-3x3":
        img, mask = image(shape), np.outer([1.0, 2.0, 1.0], [1.0, 0.0, -1.0])
    elif kind == "mask-larger-9x7":
        img, mask = image((2, 3)), r.standard_normal((9, 7))
    else:
        img, mask = image((1, 1)), r.standard_normal((3, 2))
    check_convolve(convolve(img, mask, mode=mode, cval=1.5, device=dev), img, mask, mode, 1.5)


case("convolve", *CONVOLVE)(convolve_case)


@case("convolve", *[one(f"convolve[{np.dtype(t).name}-{c}ch]", t, c)
                    for t, c in ((np.uint8, 3), (np.int16, 1), (np.float64, 2), (np.uint32, 4),
                                 (np.int64, 1), (np.uint64, 3), (np.bool_, 1))])
def _convolve_dtypes(dev, dtype, channels):
    from clkit.kernels import convolve
    img = image((5, 23) + ((channels,) if channels > 1 else ()), dtype)
    mask = rng().standard_normal((3, 4))
    check_convolve(convolve(img, mask, mode="mirror", device=dev), img, mask, "mirror")


@case("convolve", one("convolve[device-arrays-strided]"))
def _convolve_device(dev):
    import clkit
    from clkit.kernels import convolve
    host = image((9, 31))
    mask = rng().standard_normal((3, 3))
    got = convolve(clkit.to_device(host, device=dev), mask, mode="wrap")
    check_convolve(got.get(), host, mask, "wrap")
    view = host[::-2, ::3]  # negative and step strides: copied to a contiguous image
    check_convolve(convolve(view, mask, device=dev), view, mask, "reflect")


#: Masks with taps of weight 0, which the kernels leave out (tables of used taps in the build).
ZERO_TAP_MASKS = {
    "sobel-x": lambda: np.outer([1.0, 2.0, 1.0], [1.0, 0.0, -1.0]),    # two passes (CPU)
    "separable-9x11": lambda: np.outer(np.where(np.arange(9) % 3 == 1, 0.0, 1.5),
                                       np.where(np.arange(11) % 3 == 0, 0.0, -0.5)),
    "laplace": lambda: np.array([[0.0, 1, 0], [1, -4, 1], [0, 1, 0]]),  # direct
    "zero-rows-13x3": lambda: np.where(np.isin(np.arange(13), [0, 5, 6, 12])[:, None], 0.0,
                                       rng().standard_normal((13, 3))),
}


def zero_tap_case(dev, kind, mode, cval, shape):
    """NaN and infinities in the image (and in cval) that taps of weight 0 must leave out."""
    from clkit.kernels import convolve
    from _reference import convolve_reference, filter_ulps
    img = image(shape)
    h, w = shape
    for k, (r, c) in enumerate([(0, 0), (h // 2, 1), (h // 2, w // 2), (h - 1, w - 2)]):
        img[r, c] = (np.nan, np.inf, -np.inf)[k % 3]
    mask = ZERO_TAP_MASKS[kind]()
    got = convolve(img, mask, mode=mode, cval=cval, device=dev)
    expected, scale = convolve_reference(img, mask, mode, cval)
    assert np.array_equal(np.isnan(got), np.isnan(expected)), "NaN where scipy has none or not"
    inf = np.isinf(expected)
    assert np.array_equal(got[inf], expected[inf]), "infinities differ from scipy's"
    finite = np.isfinite(expected)
    close(got[finite], expected[finite], scale[finite], filter_ulps(mask.size),
          f"zero taps {kind} {shape} {mode} cval {cval}")


case("convolve", *[one(f"convolve[zero-taps-{kind}-{mode}-{cval}]", kind, mode, cval, (7, 53))
                   for kind, mode, cval in (("sobel-x", "reflect", 0.0),
                                            ("sobel-x", "constant", np.inf),
                                            ("laplace", "constant", np.nan),
                                            ("laplace", "wrap", 0.0))])(zero_tap_case)


@case("convolve", *[one(f"gaussian_blur[{mode}]", mode) for mode in MODES])
def _gaussian(dev, mode):
    from clkit.kernels import gaussian_blur
    img = image((6, 37))
    check_gaussian(gaussian_blur(img, 0.9, mode=mode, cval=0.5, device=dev), img, 0.9, mode, 0.5)


@case("convolve", one("gaussian_blur[sigma-0-on-one-axis-uint16-3ch]"))
def _gaussian_zero(dev):
    import scipy.ndimage
    from _reference import filter_ulps
    from clkit.kernels import gaussian_blur
    img = image((5, 19, 3), np.uint16)
    got = gaussian_blur(img, (0.0, 1.1), device=dev)
    wide = img.astype(np.float64)
    expected = scipy.ndimage.gaussian_filter(wide, (0.0, 1.1, 0.0))
    close(got, expected, scipy.ndimage.gaussian_filter(np.abs(wide), (0.0, 1.1, 0.0)),
          filter_ulps(11), "gaussian_blur sigma (0, 1.1)")


@case("convolve", *[one(f"gaussian_blur[rolled-37-taps-{mode}]", mode)
                    for mode in ("reflect", "constant")])
def _gaussian_rolled(dev, mode):
    """Passes of more than MAX_UNROLL_1D (32) taps: the rolled loops with unaligned loads."""
    from clkit.kernels import gaussian_blur
    img = image((5, 45))
    check_gaussian(gaussian_blur(img, 4.5, mode=mode, cval=0.25, device=dev), img, 4.5, mode,
                   0.25)


# -- gpu: the GPU variants, with Oclgrind reporting itself a GPU ------------------------------

GPU_CONVOLVE = [one(f"gpu-convolve[{mode}-{kind}]", mode, kind) for mode in MODES
                for kind in ("general-5x4", "separable-3x3")] + \
    [one("gpu-convolve[reflect-mask-larger-9x7]", "reflect", "mask-larger-9x7"),
     one("gpu-convolve[wrap-general-5x4-two-row-groups]", "wrap", "general-5x4", (35, 66))]


@case("gpu", *GPU_CONVOLVE)
def _gpu_convolve(dev, mode, kind, shape=(13, 70)):
    """70 columns: two work-groups of 64 elements, one whose tile lies inside the row and one
    that folds; 35 rows: two work-groups of 32 rows."""
    from clkit._engine import conv_kernels as _conv_kernels
    assert _conv_kernels.geometry(dev, 5, 4, 1, 4, False).variant == "gpu"
    convolve_case(dev, mode, kind, shape=shape)


@case("gpu", one("gpu-convolve[tall-mask-in-chunks-constant]"))
def _gpu_chunks(dev):
    from clkit.kernels import convolve
    # The device reports 12 KiB of local memory here (see setup): a 13-row mask is applied
    # 11 rows at a time, the tile reloaded between chunks.
    img = image((9, 30, 2))
    mask = rng().standard_normal((13, 3))
    check_convolve(convolve(img, mask, mode="constant", cval=-2.0, device=dev), img, mask,
                   "constant", -2.0)


@case("gpu", *[one(f"gpu-convolve[zero-taps-{kind}-{mode}-{cval}]", kind, mode, cval)
               for kind, mode, cval in (("sobel-x", "mirror", 0.0),
                                        ("separable-9x11", "constant", np.nan),
                                        ("zero-rows-13x3", "constant", -np.inf),
                                        ("zero-rows-13x3", "reflect", 0.0))])
def _gpu_zero_taps(dev, kind, mode, cval):
    """sobel-x: the direct kernel (a small separable mask); separable-9x11: the two passes;
    zero-rows-13x3: chunks of 6 mask rows, whose used taps are known only at run time."""
    zero_tap_case(dev, kind, mode, cval, (13, 70))


@case("gpu", one("gpu-gaussian_blur[nearest-4ch]"))
def _gpu_gaussian(dev):
    from clkit.kernels import gaussian_blur
    img = image((7, 9, 4), np.uint8)
    check_gaussian(gaussian_blur(img, 1.2, mode="nearest", device=dev), img, 1.2, "nearest")


@case("gpu", one("gpu-vector_add[uint8-4099]"))
def _gpu_vector_add(dev):
    _vector_add(dev, np.uint8, 4099)


@case("gpu", *[one(f"gpu-grayscale[{np.dtype(t).name}-{c}ch]", t, c)
               for t in (np.uint8, np.float32) for c in (3, 4)])
def _gpu_grayscale(dev, dtype, channels):
    _grayscale(dev, dtype, channels, 5, 13)


@case("gpu", one("gpu-mandelbrot[float32-21x9]"))
def _gpu_mandelbrot(dev):
    _mandelbrot(dev, np.float32, 21, 9)


@case("gpu", *[one(f"gpu-depth_to_points[{'drop' if d else 'keep'}]", d) for d in (True, False)])
def _gpu_depth(dev, drop):
    _depth(dev, np.float32, True, drop)


# -- tiled: inputs "larger than the device", streamed in tiles of a few rows -----------------

@case("tiled", *[one(f"tiled-convolve[{mode}-general-5x4]", mode) for mode in MODES])
def _tiled_convolve(dev, mode):
    convolve_case(dev, mode, "general-5x4", shape=(23, 19))


@case("tiled-separable", *[one(f"tiled-convolve[{mode}-separable-3x3]", mode)
                           for mode in MODES])
def _tiled_separable(dev, mode):
    convolve_case(dev, mode, "separable-3x3", shape=(23, 19))


@case("tiled-separable", one("tiled-gaussian_blur[wrap-3ch]"))
def _tiled_gaussian(dev):
    from clkit.kernels import gaussian_blur
    img = image((21, 11, 3))
    check_gaussian(gaussian_blur(img, 1.3, mode="wrap", device=dev), img, 1.3, "wrap")


@case("tiled", *[one(f"tiled-{kind}", kind)
                 for kind in ("vector_add", "grayscale", "mandelbrot", "depth_to_points")])
def _tiled_rowwise(dev, kind):
    if kind == "vector_add":
        _vector_add(dev, np.int16, 3001)
    elif kind == "grayscale":
        _grayscale(dev, np.uint8, 3, 23, 41)
    elif kind == "mandelbrot":
        _mandelbrot(dev, np.float32, 13, 21)
    else:
        _depth(dev, np.uint16, True, True)


# -- multi: row bands on PoCL and Oclgrind at once ---------------------------------------------

@case("multi", *[one(f"multi-convolve[{mode}]", mode) for mode in ("reflect", "constant", "wrap")])
def _multi_convolve(dev, mode):
    from clkit.kernels import convolve
    img = image((17, 23))
    mask = rng().standard_normal((5, 4))
    devices = [_pocl(), dev]
    check_convolve(convolve(img, mask, mode=mode, cval=0.5, device=devices), img, mask, mode,
                   0.5)


@case("multi-separable", one("multi-separable-and-gaussian"))
def _multi_separable(dev):
    from clkit.kernels import convolve, gaussian_blur
    img = image((15, 21, 3), np.uint8)
    mask = np.outer([1.0, 2.0, 1.0], [1.0, 0.0, -1.0])
    check_convolve(convolve(img, mask, device=[_pocl(), dev]), img, mask, "reflect")
    check_gaussian(gaussian_blur(img, 1.1, device=[_pocl(), dev]), img, 1.1, "reflect")


@case("multi", one("multi-rowwise"))
def _multi_rowwise(dev):
    import cv2
    from _reference import assert_counts_equal, mandelbrot_reference
    from clkit.kernels import depth_to_points, grayscale, mandelbrot, vector_add
    devices = [_pocl(), dev]
    r = rng()
    a = r.integers(-1000, 1000, (9, 13)).astype(np.int32)
    np.testing.assert_array_equal(vector_add(a, a, device=devices), a + a)
    rgb = r.integers(0, 256, (11, 9, 3), dtype=np.uint8)
    np.testing.assert_array_equal(grayscale(rgb, device=devices),
                                  cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY))
    assert_counts_equal(mandelbrot(15, 8, max_iter=30, device=devices),
                        mandelbrot_reference(15, 8, max_iter=30))
    depth = r.integers(0, 4, (10, 7)).astype(np.uint16)
    one_device = depth_to_points(depth, 3.0, 3.0, 3.0, 5.0)
    np.testing.assert_array_equal(depth_to_points(depth, 3.0, 3.0, 3.0, 5.0, device=devices),
                                  one_device)


def _pocl():
    import clkit
    usable = [d for d in clkit.devices() if not d.simulator]
    if not usable:
        raise _Skip("no device besides the simulator to share the bands with")
    return usable[0]


class _Skip(Exception):
    """The case cannot run here (not a failure of the kernel)."""


# -- running a group -------------------------------------------------------------------------


@contextlib.contextmanager
def _setup(group, dev):
    """Make the device or the library take the paths a group is about, and check they did."""
    from clkit._engine import bands as _bands
    from _reference import reporting
    speed, run, tiles = _bands.speed, _bands.run, _bands.tiles
    seen = []  # (device, number of tiles) of every band run

    def counting_tiles(r0, r1, max_rows):
        cut = tiles(r0, r1, max_rows)
        seen.append(len(cut))
        return cut

    def recording_run(plan, band, max_rows):
        seen.append([(d, r1 - r0) for d, r0, r1 in plan])
        return run(plan, band, max_rows)

    borrowed = {}
    if group == "gpu":
        borrowed = dict(type="gpu", local_mem=12 * 1024)
    elif group.startswith(("tiled", "multi")):
        # Tiles of 1 KiB (4 KiB with the separable path's temporary and the wide halos
        # of a Gaussian): a few rows, so that every image is streamed in several tiles.
        tile = 4096 if group.endswith("separable") else 1024
        borrowed = dict(max_alloc=tile, global_mem=32 * tile)
    try:
        if group.startswith(("tiled", "multi")):
            _bands.tiles, _bands.run = counting_tiles, recording_run
        if group.startswith("multi"):
            # Oclgrind measures a thousand times slower than PoCL and would get no rows:
            # split evenly instead.
            _bands.speed = lambda key, device, probe: 1.0
        with reporting(dev, **borrowed):
            yield
        if group.startswith("tiled"):
            assert any(isinstance(n, int) and n > 1 for n in seen), \
                f"the input was not streamed in tiles: {seen}"
        if group.startswith("multi"):
            plans = [p for p in seen if isinstance(p, list)]
            assert plans and all(rows > 0 for p in plans for d, rows in p if d == dev), \
                f"the simulator got no rows: {plans}"
    finally:
        _bands.speed, _bands.run, _bands.tiles = speed, run, tiles


def _finish_all():
    """Wait for every queue clkit made, so that all of a case's reports are out."""
    from clkit._platform import runtime as _runtime
    from clkit._engine import bands as _bands
    for rt in list(_runtime._runtimes.values()):
        rt.queue.finish()
        for q in rt.held(_bands.queues, list):
            q.finish()


def run_group(group: str, names=None) -> int:
    """Run the cases of ``group`` on Oclgrind; print one JSON line per case on stdout."""
    # Oclgrind writes its reports on file descriptor 2; send that to a file read after each case.
    log_path = Path(os.environ.get("CLKIT_OCLGRIND_STDERR") or
                    f"/tmp/clkit-oclgrind-{os.getpid()}.log")
    log_fd = os.open(log_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    real_stderr = os.dup(2)
    os.dup2(log_fd, 2)
    warnings.simplefilter("ignore")  # only Oclgrind may write on stderr
    np.seterr(all="ignore")
    out = sys.stdout
    try:
        import clkit
        from clkit._launch import kernel as _launch
        from clkit._platform import oclgrind as _oclgrind
        launches = [0]
        call = _launch.Kernel.__call__

        def counting(self, *args, **kwargs):
            launch = call(self, *args, **kwargs)
            launches[0] += launch.device.simulator
            return launch

        _launch.Kernel.__call__ = counting
        sims = [d for d in clkit.devices() if d.simulator]
        if not sims:
            print(json.dumps({"error": "no Oclgrind device is visible"}), file=out, flush=True)
            return 3
        dev = sims[0]
        position = 0
        for name, (g, fn, params) in CASES.items():
            if g != group or (names and name not in names):
                continue
            record = {"name": name, "error": None, "skip": None}
            launches[0] = 0
            start = time.perf_counter()
            try:
                with _setup(group, dev):
                    fn(dev, *params)
                    _finish_all()
            except _Skip as exc:
                record["skip"] = str(exc)
            except BaseException as exc:  # a wrong result, or a clkit error: both fail the case
                record["error"] = "".join(traceback.format_exception(type(exc), exc,
                                                                     exc.__traceback__))[-6000:]
                with contextlib.suppress(Exception):
                    _finish_all()
            record["seconds"] = round(time.perf_counter() - start, 3)
            record["launches"] = launches[0]
            sys.stderr.flush()
            size = os.lseek(log_fd, 0, os.SEEK_END)
            text = os.pread(log_fd, size - position, position).decode("utf-8", "replace")
            position = size
            diagnostics, rest = _oclgrind.parse(text)
            record["diagnostics"] = [d.text for d in diagnostics]
            record["summary"] = _oclgrind.summary(diagnostics) if diagnostics else ""
            # the multi cases' bands on the CPU driver beside the simulator are said to go
            # unchecked: that is what those cases ask for
            rest = "".join(line for line in rest.splitlines(keepends=True)
                           if not line.startswith(_oclgrind.NOT_CHECKED))
            record["stderr"] = rest[-4000:]
            print(json.dumps(record), file=out, flush=True)
    finally:
        os.dup2(real_stderr, 2)
        os.close(log_fd)
        with contextlib.suppress(OSError):
            log_path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(run_group(sys.argv[1], set(sys.argv[2:]) or None))
