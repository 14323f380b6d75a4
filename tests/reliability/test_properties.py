"""Property-based tests: every library function against its reference, on every device.

Hypothesis draws shapes (1 pixel to a few dozen, odd on purpose), dtypes, masks, border modes,
memory layouts (reversed, strided, Fortran-ordered and unaligned views) and values, including
NaN, infinities and -0.0 wherever the function takes floats; each result must equal numpy,
scipy.ndimage or OpenCV, NaN where the reference has NaN and the same infinities.

Budgets: each test runs a bounded number of examples per device (more on CPU drivers, a few
tiny ones on the Oclgrind simulator), the same examples every run (``derandomize``) so that CI
is repeatable.  ``CLKIT_FUZZ_EXAMPLES=10`` runs ten times as many, ``CLKIT_FUZZ_RANDOM=1`` new
ones each run; a failure prints the falsifying example.

Build options (dtype, channels, mask size, border mode) are drawn from fixed lists of
combinations, each compiled once, rather than freely: every new combination is a new program
to compile, and the combinations themselves are covered one by one in ``tests/kernels/``.
Everything else (sizes, values, mask weights, cval, sigma within a mask size, windows,
intrinsics) is drawn freely.
"""

import os

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import scipy.ndimage
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import clkit.kernels as ck
from _reference import (WEIGHTS, assert_close_scaled, assert_counts_equal, convolve_reference,
                        filter_ulps, gaussian_reference, gray_uint8_reference,
                        mandelbrot_reference, pinhole_reference, result_dtype)

SCALE = float(os.environ.get("CLKIT_FUZZ_EXAMPLES", "1"))
RANDOM = os.environ.get("CLKIT_FUZZ_RANDOM", "") == "1"
MODES = ("reflect", "constant", "nearest", "mirror", "wrap")
SPECIALS = (np.nan, np.inf, -np.inf, -0.0, 0.0)
#: A filter's cval: any moderate number, or one of the specials.
CVALS = st.one_of(st.floats(-1e3, 1e3), st.sampled_from(SPECIALS))

#: Examples run per function, over the module (printed at its end with ``pytest -s``).
COUNTS: dict = {}


def fuzz(device, real: int, simulated: int):
    """Hypothesis settings for ``device``: ``real`` examples on drivers, ``simulated`` on Oclgrind."""
    n = simulated if device.simulator else real
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None, derandomize=not RANDOM,
                    database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def counted(name):
    COUNTS[name] = COUNTS.get(name, 0) + 1


def side(device, real, simulated):
    """The largest image side to draw: small on real devices, tiny on the simulator."""
    return simulated if device.simulator else real


# -- strategies ------------------------------------------------------------------------------

@st.composite
def float_arrays(draw, shape, dtype=np.float32, limit=1e3, specials=True):
    """Finite values of moderate size (no float32 overflow in sums), a few of them replaced by
    NaN, +-inf or -0.0."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape))
    values = draw(hnp.arrays(dtype, size, elements=st.floats(
        -limit, limit, width=dtype.itemsize * 8, allow_subnormal=False)))
    if specials and size:
        for index, value in draw(st.lists(st.tuples(st.integers(0, size - 1),
                                                    st.sampled_from(SPECIALS)), max_size=3)):
            values[index] = value
    return values.reshape(shape)


def int_arrays(shape, dtype):
    return hnp.arrays(np.dtype(dtype), shape)


@st.composite
def laid_out(draw, array):
    """The same values in another memory layout: a view the library must handle (copying)."""
    kind = draw(st.sampled_from(["c", "reversed", "strided", "fortran", "unaligned"]))
    if kind == "c" or array.size == 0:
        return np.ascontiguousarray(array)
    if kind == "reversed":
        axes = tuple(range(array.ndim))
        return np.flip(np.flip(array, axes).copy(), axes)
    if kind == "strided":
        buf = np.zeros((2 * array.shape[0],) + array.shape[1:], array.dtype)
        buf[::2] = array
        return buf[::2]
    if kind == "fortran":
        return np.asfortranarray(array)
    raw = np.zeros(array.nbytes + array.itemsize, np.uint8)
    view = raw[array.itemsize:].view(array.dtype).reshape(array.shape)  # not 16-byte aligned
    view[...] = array
    return view


def need_fp64_or_skip(device, dtype):
    if np.dtype(dtype) == np.float64 and not device.fp64:
        pytest.skip(f"{device} has no cl_khr_fp64")


# -- vector_add ------------------------------------------------------------------------------

VECTOR_DTYPES = [np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32,
                 np.uint32, np.int64, np.uint64]


def test_vector_add_equals_numpy(device):
    dtypes = [d for d in VECTOR_DTYPES if d != np.float64 or device.fp64]
    n = side(device, 300, 9)

    @fuzz(device, 200, 6)
    @given(data=st.data())
    def check(data):
        dtype = np.dtype(data.draw(st.sampled_from(dtypes), "dtype"))
        shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=n)
                          .filter(lambda s: np.prod(s) <= n), "shape")
        if dtype.kind == "f":
            a, b = (data.draw(float_arrays(shape, dtype)) for _ in "ab")
        else:
            a, b = (data.draw(int_arrays(shape, dtype)) for _ in "ab")
        a, b = data.draw(laid_out(a), "a"), data.draw(laid_out(b), "b")
        with np.errstate(all="ignore"):
            expected = a + b
        result = ck.vector_add(a, b, device=device)
        counted("vector_add")
        assert result.dtype == dtype and result.shape == shape
        np.testing.assert_array_equal(result, expected)  # NaN where numpy has NaN

    check()


# -- grayscale -------------------------------------------------------------------------------

def test_grayscale_equals_opencv_and_weighted_sum(device):
    n = side(device, 40, 5)

    @fuzz(device, 150, 6)
    @given(data=st.data())
    def check(data):
        dtype = data.draw(st.sampled_from([np.uint8, np.float32]), "dtype")
        channels = data.draw(st.sampled_from([3, 4]), "channels")
        shape = (data.draw(st.integers(1, n), "h"), data.draw(st.integers(1, n), "w"), channels)
        weights = data.draw(st.one_of(
            st.sampled_from(["bt601", "bt709"]),
            st.tuples(*[st.floats(-2, 2, allow_subnormal=False)] * 3)), "weights")
        if dtype == np.uint8:
            image = data.draw(int_arrays(shape, np.uint8))
        else:
            image = data.draw(float_arrays(shape))
        image = data.draw(laid_out(image), "image")
        result = ck.grayscale(image, weights=weights, device=device)
        counted("grayscale")
        assert result.dtype == dtype and result.shape == shape[:2]
        w = np.array(WEIGHTS.get(weights, weights) if isinstance(weights, str) else weights)
        w = w.astype(np.float32).astype(np.float64)  # the kernel takes them as float
        with np.errstate(all="ignore"):
            exact = image[..., :3].astype(np.float64) @ w
        if dtype == np.uint8:
            np.testing.assert_array_equal(result, gray_uint8_reference(image, weights))
            diff = np.abs(result.astype(np.float64) - np.clip(exact, 0, 255))
            assert diff.max() <= 1, f"off by {diff.max()} at {np.unravel_index(diff.argmax(), diff.shape)}"
        else:
            with np.errstate(all="ignore"):
                scale = np.abs(image[..., :3].astype(np.float64)) @ np.abs(w)
            assert_close_scaled(result, exact, scale, ulps=8, what="grayscale")

    check()


# -- convolve --------------------------------------------------------------------------------

#: (mode, dtype, channels, mask shape, rank 1?): each border mode three times, every image dtype,
#: 1 to 4 channels, odd, even, flat and square masks, both the two-pass and the direct path.
CONVOLVE_BUILDS = [
    ("reflect", np.float32, 1, (3, 3), False), ("reflect", np.uint8, 3, (5, 4), False),
    ("reflect", np.int16, 1, (3, 3), True),
    ("constant", np.float32, 1, (5, 4), False), ("constant", np.float32, 2, (3, 3), True),
    ("constant", np.uint16, 1, (1, 4), False),
    ("nearest", np.float32, 4, (3, 3), False), ("nearest", np.int32, 1, (2, 2), False),
    ("nearest", np.uint8, 1, (4, 3), True),
    ("mirror", np.float32, 1, (3, 1), False), ("mirror", np.int8, 2, (3, 3), False),
    ("mirror", np.float64, 1, (3, 3), True),
    ("wrap", np.float32, 3, (3, 3), True), ("wrap", np.uint32, 1, (5, 4), False),
    ("wrap", np.float64, 1, (1, 1), False),
]
#: On the simulator: one build per mode, small masks.
CONVOLVE_BUILDS_SIM = [CONVOLVE_BUILDS[i] for i in (0, 4, 6, 9, 12)]


def image_of(data, shape, dtype, limit=1e3):
    if np.dtype(dtype).kind == "f":
        return data.draw(float_arrays(shape, dtype, limit), "image")
    return data.draw(int_arrays(shape, dtype), "image")


def runnable(builds, device):
    """The (mode, dtype, ...) builds a device can run: float64 ones need cl_khr_fp64."""
    return [b for b in builds if b[1] != np.float64 or device.fp64]


def filter_image(data, n, channels, dtype):
    """An image of 1..n x 1..n pixels, with a channel axis when channels > 1, in any layout."""
    shape = (data.draw(st.integers(1, n), "h"), data.draw(st.integers(1, n), "w"))
    shape += (channels,) if channels > 1 else ()
    return data.draw(laid_out(image_of(data, shape, dtype)), "layout")


def test_convolve_equals_scipy(device):
    builds = runnable(CONVOLVE_BUILDS_SIM if device.simulator else CONVOLVE_BUILDS, device)
    n = side(device, 24, 5)

    @fuzz(device, 150, 6)
    @given(data=st.data())
    def check(data):
        mode, dtype, channels, (kh, kw), rank1 = data.draw(st.sampled_from(builds), "build")
        image = filter_image(data, n, channels, dtype)
        weights = st.floats(-4, 4, allow_subnormal=False)
        if rank1:
            col = np.array(data.draw(st.lists(weights, min_size=kh, max_size=kh)))
            row = np.array(data.draw(st.lists(weights, min_size=kw, max_size=kw)))
            mask = np.outer(col, row)
        else:
            mask = data.draw(hnp.arrays(np.float64, (kh, kw), elements=weights), "mask")
        cval = data.draw(CVALS, "cval")
        result = ck.convolve(image, mask, mode=mode, cval=cval, device=device)
        counted("convolve")
        with np.errstate(all="ignore"):
            expected, scale = convolve_reference(image, mask, mode, cval)
        assert result.dtype == result_dtype(dtype) and result.shape == image.shape
        assert_close_scaled(result, expected, scale, dtype=result.dtype,
                            ulps=filter_ulps(mask.size), what=f"convolve {mode}")

    check()


@pytest.mark.parametrize("mask", ["sobel-x", "shift"])
def test_zero_weights_leave_non_finite_pixels_out_as_scipy_does(device, mask):
    """scipy.ndimage.convolve uses only the weights with |w| > DBL_EPSILON: a NaN or an
    infinity under a zero weight does not reach the result, nor clkit's (the two-pass path
    for both masks here; tests/kernels/test_convolve.py covers the others)."""
    image = np.zeros((5, 6), np.float32)
    image[2, 2] = np.nan
    image[1, 4] = np.inf
    m = {"sobel-x": np.outer([1.0, 2.0, 1.0], [1.0, 0.0, -1.0]),
         "shift": np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])}[mask]
    expected = scipy.ndimage.convolve(image.astype(np.float64), m)
    result = ck.convolve(image, m, device=device)
    np.testing.assert_array_equal(np.isnan(result), np.isnan(expected))
    np.testing.assert_array_equal(result[np.isinf(expected)], expected[np.isinf(expected)])


# -- gaussian_blur ---------------------------------------------------------------------------

#: (mode, dtype, channels, (radius y, radius x), truncate): sigma is drawn within the range that
#: gives these radii (int(truncate * sigma + 0.5)); radius 0 is sigma 0 (no blur on that axis).
GAUSSIAN_BUILDS = [
    ("reflect", np.float32, 1, (2, 2), 4.0), ("reflect", np.uint16, 4, (3, 3), 4.0),
    ("constant", np.float32, 3, (2, 3), 4.0), ("constant", np.uint8, 1, (4, 4), 2.5),
    ("nearest", np.float32, 1, (0, 3), 4.0), ("nearest", np.int16, 2, (1, 1), 4.0),
    ("mirror", np.float64, 1, (3, 3), 4.0), ("mirror", np.float32, 1, (2, 0), 3.0),
    ("wrap", np.float32, 1, (5, 5), 4.0), ("wrap", np.uint8, 3, (0, 0), 4.0),
]
GAUSSIAN_BUILDS_SIM = [GAUSSIAN_BUILDS[i] for i in (0, 2, 4, 7, 9)]


def sigma_for(data, radius, truncate):
    if radius == 0:
        return 0.0
    lo, hi = (radius - 0.5) / truncate, (radius + 0.5) / truncate
    return data.draw(st.floats(lo, hi, exclude_min=True, exclude_max=True).filter(
        lambda sigma: int(truncate * sigma + 0.5) == radius), "sigma")


def test_gaussian_blur_equals_scipy(device):
    builds = runnable(GAUSSIAN_BUILDS_SIM if device.simulator else GAUSSIAN_BUILDS, device)
    n = side(device, 24, 5)

    @fuzz(device, 120, 5)
    @given(data=st.data())
    def check(data):
        mode, dtype, channels, (ry, rx), truncate = data.draw(st.sampled_from(builds), "build")
        image = filter_image(data, n, channels, dtype)
        sy, sx = sigma_for(data, ry, truncate), sigma_for(data, rx, truncate)
        sigma = sy if sy == sx and data.draw(st.booleans(), "one sigma") else (sy, sx)
        cval = data.draw(CVALS, "cval")
        result = ck.gaussian_blur(image, sigma, mode=mode, cval=cval, truncate=truncate,
                                  device=device)
        counted("gaussian_blur")
        with np.errstate(all="ignore"):
            expected, scale = gaussian_reference(image, (sy, sx), mode, cval, truncate)
        assert result.dtype == result_dtype(dtype) and result.shape == image.shape
        taps = (2 * ry + 1) * (2 * rx + 1)
        assert_close_scaled(result, expected, scale, dtype=result.dtype, ulps=filter_ulps(taps),
                            what=f"gaussian_blur {mode} sigma {sigma}")

    check()


# -- mandelbrot ------------------------------------------------------------------------------

def test_mandelbrot_equals_numpy(device):
    precisions = [np.float32] + ([np.float64] if device.fp64 else [])
    n = side(device, 40, 6)

    @fuzz(device, 120, 5)
    @given(data=st.data())
    def check(data):
        dtype = data.draw(st.sampled_from(precisions), "dtype")
        width, height = data.draw(st.integers(1, n), "w"), data.draw(st.integers(1, n), "h")
        bound = st.floats(-2.5, 2.5, allow_subnormal=False)
        xmin, xmax, ymin, ymax = (data.draw(bound, name) for name in ("xmin", "xmax", "ymin",
                                                                       "ymax"))
        max_iter = data.draw(st.integers(1, 120), "max_iter")
        window = dict(xmin=xmin, xmax=xmax, ymin=ymin, ymax=ymax, max_iter=max_iter)
        result = ck.mandelbrot(width, height, dtype=dtype, device=device, **window)
        counted("mandelbrot")
        assert result.dtype == np.int32 and result.shape == (height, width)
        assert result.min() >= 1 and result.max() <= max_iter
        expected = mandelbrot_reference(width, height, dtype=dtype, **window)
        assert_counts_equal(result, expected, what=f"mandelbrot {window}")

    check()


# -- depth_to_points -------------------------------------------------------------------------

@st.composite
def depth_maps(draw, shape, dtype):
    if dtype == np.uint16:
        depth = draw(int_arrays(shape, np.uint16))
        holes = draw(hnp.arrays(np.bool_, shape))
        depth[holes] = 0
        return depth
    size = int(np.prod(shape))
    # Far from float32's limits: z, x and y stay normal numbers (drivers may flush subnormal
    # results to zero, as OpenCL allows) and finite.
    magnitude = st.floats(1e-6, 1e6)
    values = draw(st.lists(st.one_of(magnitude, magnitude.map(lambda x: -x),
                                     st.sampled_from(SPECIALS)), min_size=size, max_size=size))
    return np.array(values, np.float32).reshape(shape)


def test_depth_to_points_equals_the_pinhole_formula(device):
    n = side(device, 30, 5)

    @fuzz(device, 150, 6)
    @given(data=st.data())
    def check(data):
        dtype = data.draw(st.sampled_from([np.uint16, np.float32]), "dtype")
        shape = (data.draw(st.integers(1, n), "h"), data.draw(st.integers(1, n), "w"))
        depth = data.draw(laid_out(data.draw(depth_maps(shape, dtype), "depth")), "layout")
        focal = st.floats(1e-2, 1e3).flatmap(lambda f: st.sampled_from([f, -f]))
        centre = st.floats(-1e3, 1e3, allow_subnormal=False)
        cam = dict(fx=data.draw(focal, "fx"), fy=data.draw(focal, "fy"),
                   cx=data.draw(centre, "cx"), cy=data.draw(centre, "cy"))
        # The kernel takes them as float: compare with the float32 values (a cx of 1e-200
        # is 0 there, and 0 * inf is NaN where the float64 formula would give -inf).
        cam = {k: float(np.float32(v)) for k, v in cam.items()}
        depth_scale = data.draw(st.floats(1e-2, 1e3).flatmap(lambda f: st.sampled_from([f, -f])),
                                "depth_scale")
        drop = data.draw(st.booleans(), "drop_invalid")
        rgb = data.draw(st.one_of(st.none(), int_arrays(shape + (3,), np.uint8)), "rgb")
        result = ck.depth_to_points(depth, depth_scale=depth_scale, rgb=rgb, drop_invalid=drop,
                                    device=device, **cam)
        counted("depth_to_points")
        points, colors = result if rgb is not None else (result, None)
        expected, scale, valid = pinhole_reference(depth, depth_scale=depth_scale, **cam)
        if drop:
            expected, scale = expected[valid], scale[valid]
        assert points.dtype == np.float32 and points.shape == expected.shape
        assert_close_scaled(points, expected, scale, ulps=8, what="points")
        if rgb is not None:
            want = rgb.reshape(-1, 3)[valid] if drop else rgb.reshape(-1, 3)
            np.testing.assert_array_equal(colors, want)

    check()


@pytest.fixture(scope="module", autouse=True)
def report_examples():
    """How many examples ran, for docs/reliability.md (shown with ``pytest -s``)."""
    yield
    line = ", ".join(f"{k} {v}" for k, v in sorted(COUNTS.items()))
    print(f"\nhypothesis examples run: {sum(COUNTS.values())} ({line})")
