"""clkit.kernels.convolve and gaussian_blur against scipy.ndimage, on every device.

The reference is scipy in float64; a result passes when it is within float32
(float64 for float64 images) rounding of the sum of |mask| * |image| over the
window, which catches any wrong border, flip, offset or channel mix-up while
allowing any summation order.
"""

import numpy as np
import pyopencl.array as cl_array
import pytest
import scipy.ndimage

import clkit
import clkit.kernels as ck
from clkit._platform.runtime import drop_held
from _reference import (MODES, assert_close_scaled, convolve_reference, filter_ulps,
                        gaussian_radius, gaussian_reference, need_fp64, raises_argument_error,
                        random_image, record_transfers, reporting, result_dtype,
                        skip_on_simulator)


def sized(device, small, large):
    """``small`` on the simulator, ``large`` on real devices."""
    return small if device.simulator else large


def check_convolve(result, image, mask, mode="reflect", cval=0.0):
    expected, scale = convolve_reference(image, mask, mode, cval)
    dtype = result_dtype(image.dtype)
    assert type(result) is np.ndarray
    assert result.dtype == dtype, f"dtype {result.dtype}, expected {dtype}"
    assert_close_scaled(result, expected, scale, dtype=dtype, ulps=filter_ulps(mask.size),
                        what=f"convolve {image.shape} {image.dtype} with {mask.shape}, {mode}")


def check_gaussian(result, image, sigma, mode="reflect", cval=0.0, truncate=4.0):
    expected, scale = gaussian_reference(image, sigma, mode, cval, truncate)
    dtype = result_dtype(image.dtype)
    assert type(result) is np.ndarray
    assert result.dtype == dtype, f"dtype {result.dtype}, expected {dtype}"
    taps = 2 * gaussian_radius(sigma, truncate) + 1
    assert_close_scaled(result, expected, scale, dtype=dtype, ulps=filter_ulps(taps * taps),
                        what=f"gaussian_blur {image.shape} {image.dtype} sigma {sigma}, {mode}")


def sobel_x():
    return np.outer([1, 2, 1], [1, 0, -1])  # integer dtype, rank 1, rows summing to 0


def gaussian_1d(radius, sigma):
    x = np.arange(-radius, radius + 1)
    g = np.exp(-0.5 * (x / sigma) ** 2)
    return g / g.sum()


# -- convolve: border modes, image and mask shapes ------------------------------------------------

@pytest.mark.parametrize("image_shape", ["1x1", "3x2", "odd"])
@pytest.mark.parametrize("mode", MODES)
def test_convolve_modes(device, rng, mode, image_shape):
    shape = {"1x1": (1, 1), "3x2": (3, 2), "odd": sized(device, (11, 19), (131, 257))}
    image = random_image(rng, shape[image_shape], np.float32)
    mask = rng.standard_normal((5, 4))  # even width, non-square, larger than the 3x2 image
    check_convolve(ck.convolve(image, mask, mode=mode, cval=1.5, device=device),
                   image, mask, mode, 1.5)


@pytest.mark.parametrize("mode", MODES)
def test_convolve_mask_far_larger_than_the_image(device, rng, mode):
    # Borders fold several times over: 9x7 mask, 2x3 image.
    image = random_image(rng, (2, 3), np.float32)
    mask = rng.standard_normal((9, 7))
    check_convolve(ck.convolve(image, mask, mode=mode, cval=-0.5, device=device),
                   image, mask, mode, -0.5)


@pytest.mark.parametrize("mask_shape", [(1, 1), (1, 7), (7, 1), (2, 2), (3, 3), (4, 6), (6, 3),
                                        (7, 7), (15, 15), (21, 8), (63, 63)],
                         ids=lambda s: f"{s[0]}x{s[1]}")
def test_convolve_mask_shapes(device, rng, mask_shape):
    if max(mask_shape) > 7:
        skip_on_simulator(device, f"a {mask_shape} mask")
    image = random_image(rng, sized(device, (13, 17), (97, 101)), np.float32)
    mask = rng.standard_normal(mask_shape)
    check_convolve(ck.convolve(image, mask, device=device), image, mask)


def test_convolve_63x63_mask_larger_than_the_image(device, rng):
    skip_on_simulator(device, "a 63x63 mask")
    image = random_image(rng, (40, 29), np.float32)
    mask = rng.standard_normal((63, 63))
    for mode in ("reflect", "wrap"):
        check_convolve(ck.convolve(image, mask, mode=mode, device=device), image, mask, mode)


def test_convolve_identity_and_shift(device, rng):
    image = random_image(rng, (9, 12), np.float32)
    delta = np.zeros((3, 3))
    delta[1, 1] = 1.0
    same = ck.convolve(image, delta, device=device)
    assert_close_scaled(same, image, np.abs(image), ulps=2, what="delta")
    shift = np.zeros((3, 3))
    shift[1, 0] = 1.0  # convolution flips the mask: out[i, j] = image[i, j + 1]
    result = ck.convolve(image, shift, mode="constant", cval=7.0, device=device)
    assert_close_scaled(result[:, :-1], image[:, 1:], np.abs(image[:, 1:]), ulps=2, what="shift")
    assert_close_scaled(result[:, -1], np.full(9, 7.0), np.full(9, 7.0), ulps=2, what="cval")


# -- convolve: rank-1 masks take the separable path, with the same results -------------------------

SEPARABLE = {
    "sobel-x": sobel_x,
    "outer-4x7": lambda rng: np.outer(rng.standard_normal(4), rng.standard_normal(7)),
    "gauss-5x5": lambda rng: np.outer(gaussian_1d(2, 1.0), gaussian_1d(2, 1.0)),
    "row-1x5": lambda rng: rng.standard_normal((1, 5)),
}


@pytest.mark.parametrize("mask_name", ["sobel-x", "outer-4x7"])
@pytest.mark.parametrize("mode", MODES)
def test_convolve_separable_masks_every_mode(device, rng, mode, mask_name):
    # constant mode with cval != 0 and rows not summing to 1 is where a naive
    # two-pass filter goes wrong: its second pass must not pad with cval.
    mask = SEPARABLE[mask_name]() if mask_name == "sobel-x" else SEPARABLE[mask_name](rng)
    image = random_image(rng, sized(device, (12, 19), (131, 257)), np.float32)
    check_convolve(ck.convolve(image, mask, mode=mode, cval=2.0, device=device),
                   image, mask, mode, 2.0)


@pytest.mark.parametrize("mask_name", ["gauss-5x5", "row-1x5"])
def test_convolve_separable_masks(device, rng, mask_name):
    mask = SEPARABLE[mask_name](rng)
    image = random_image(rng, (3, 2), np.float32)  # smaller than the mask
    check_convolve(ck.convolve(image, mask, device=device), image, mask)
    image = random_image(rng, sized(device, (16, 11), (257, 509)), np.float32)
    check_convolve(ck.convolve(image, mask, device=device), image, mask)


def test_convolve_separable_63x63(device, rng):
    skip_on_simulator(device, "a 63x63 mask")
    g = gaussian_1d(31, 9.0)
    mask = np.outer(g, rng.standard_normal(63))
    image = random_image(rng, (70, 90), np.float32)
    for mode in ("reflect", "constant"):
        check_convolve(ck.convolve(image, mask, mode=mode, cval=3.0, device=device),
                       image, mask, mode, 3.0)


def test_convolve_nearly_separable_masks_are_not_approximated(device, rng):
    # A rank-1 mask plus a small rank-2 part: a two-pass shortcut that dropped the
    # part would be off by about 1e-4 of the result, far beyond float32 rounding.
    mask = np.outer(rng.standard_normal(5), rng.standard_normal(5))
    nudged = mask + 1e-4 * np.abs(mask).max() * rng.standard_normal((5, 5))
    image = random_image(rng, sized(device, (10, 13), (61, 67)), np.float32)
    check_convolve(ck.convolve(image, mask, device=device), image, mask)
    check_convolve(ck.convolve(image, nudged, device=device), image, nudged)


# -- convolve: taps of weight 0 are left out, as scipy leaves them out -----------------------------
#
# scipy.ndimage.convolve sums only the taps whose weight is not 0, so a NaN or an infinity under
# a zero weight (image pixels or a non-finite cval) does not reach its result; 0 * NaN would.

def zero_rows_and_columns(rng, shape, rows=(), columns=()):
    """A random (rank > 1) mask with these rows and columns set to 0."""
    mask = rng.standard_normal(shape)
    mask[list(rows), :] = 0.0
    mask[:, list(columns)] = 0.0
    return mask


def separable_with_zeros(rng, kh, kw):
    """outer(column, row) with every third weight of each factor 0: whole rows and columns."""
    col, row = rng.standard_normal(kh), rng.standard_normal(kw)
    col[1::3] = 0.0
    row[::3] = 0.0
    return np.outer(col, row)


#: name -> (mask(rng), taking the two-pass path on CPU drivers?, too large for the simulator?)
ZERO_TAP_MASKS = {
    "sobel-x": (lambda rng: np.outer([1.0, 2.0, 1.0], [1.0, 0.0, -1.0]), True, False),
    "shift": (lambda rng: np.array([[0.0, 0, 0], [1, 0, 0], [0, 0, 0]]), True, False),
    "separable-5x7": (lambda rng: separable_with_zeros(rng, 5, 7), True, False),
    # 99 taps: the two-pass path on GPUs too
    "separable-9x11": (lambda rng: separable_with_zeros(rng, 9, 11), True, False),
    "laplace": (lambda rng: np.array([[0.0, 1, 0], [1, -4, 1], [0, 1, 0]]), False, False),
    "zero-row-and-column-4x5": (lambda rng: zero_rows_and_columns(rng, (4, 5), [0], [2]),
                                False, False),
    "row-1x5": (lambda rng: np.array([[2.0, 0, 0, 0, -1]]), False, False),
    "zero-1x1": (lambda rng: np.zeros((1, 1)), False, False),
    "zero-3x3": (lambda rng: np.zeros((3, 3)), False, False),
    # rolled tap loops (over 256 taps): a table of used taps, then (over 1024) the weights
    "rolled-17x17": (lambda rng: zero_rows_and_columns(rng, (17, 17), [3, 16], [0, 8]),
                     False, True),
    "rolled-33x33": (lambda rng: zero_rows_and_columns(rng, (33, 33), [5], [7, 20]),
                     False, True),
    "rolled-separable-3x261": (lambda rng: separable_with_zeros(rng, 3, 261), True, True),
}

#: every mode; constant mode also with non-finite cvals, which zero weights must leave out too
ZERO_TAP_MODES = [(mode, 1.5) for mode in MODES] + \
    [("constant", np.nan), ("constant", np.inf), ("constant", -np.inf)]


def non_finite_image(rng, shape, dtype=np.float32):
    """Random pixels with NaN, inf and -inf at the corners, beside the borders and inside:
    taps reach them through the folded border runs and the direct runs of the CPU variant."""
    image = random_image(rng, shape, dtype)
    h, w = shape[:2]
    spots = [(0, 0), (0, w - 1), (h - 1, 0), (h - 1, w - 1), (h // 2, 1), (1, w // 2),
             (h // 2, w // 2), (h // 2 + 1, w // 2 + 3), (h - 2, w - 2), (h // 3, 40)]
    for k, (r, c) in enumerate(spots):
        image[r, c] = (np.nan, np.inf, -np.inf)[k % 3]
    return image


def check_non_finite(result, image, mask, mode, cval):
    """scipy's result exactly where it is NaN or infinite, within rounding elsewhere."""
    expected, scale = convolve_reference(image, mask, mode, cval)
    assert result.dtype == result_dtype(image.dtype)
    what = f"convolve {image.shape} with {mask.shape}, {mode}, cval {cval}"
    np.testing.assert_array_equal(np.isnan(result), np.isnan(expected),
                                  err_msg=f"{what}: NaN where scipy has none, or not where it has")
    inf = np.isinf(expected)
    np.testing.assert_array_equal(np.isinf(result), inf, err_msg=f"{what}: infinities")
    np.testing.assert_array_equal(result[inf], expected[inf], err_msg=f"{what}: infinities")
    finite = np.isfinite(expected)
    assert_close_scaled(result[finite], expected[finite], scale[finite],
                        dtype=result_dtype(image.dtype), ulps=filter_ulps(mask.size), what=what)


def reporting_as(device, kind):
    """The device, reporting itself as `kind` while the test runs: a "gpu" picks the CONV_GPU
    kernels, a "cpu" the CONV_CPU ones (which run on GPUs too)."""
    with reporting(device, type=kind):
        yield device


@pytest.fixture
def as_cpu(device):
    yield from reporting_as(device, "cpu")


@pytest.fixture
def as_gpu(device):
    yield from reporting_as(device, "gpu")


def zero_tap_case(device, rng, name, mode, cval, shape):
    from clkit._engine.filter import Filter
    make, separable, large = ZERO_TAP_MASKS[name]
    if large:
        skip_on_simulator(device, f"the {name} mask")
        shape = (shape[0], 601)  # runs inside the row, beyond the halo of 130 columns
    mask = make(rng)
    image = non_finite_image(rng, shape)
    filt = Filter.for_mask("convolve", image, mask, mode, cval)
    assert (filt.factors is not None) == separable
    # separable masks of one channel run as one fused kernel on GPUs, in two passes elsewhere
    fused = device.type == "gpu" and separable
    assert filt._program(device)[1].variant == ("fused" if fused else device.type)
    check_non_finite(ck.convolve(image, mask, mode=mode, cval=cval, device=device),
                     image, mask, mode, cval)


@pytest.mark.parametrize("mode,cval", ZERO_TAP_MODES, ids=lambda v: str(v))
@pytest.mark.parametrize("name", list(ZERO_TAP_MASKS))
def test_convolve_zero_weights_leave_non_finite_values_out(as_cpu, rng, name, mode, cval):
    # 101 columns: runs inside the row as well as border runs, in both paths
    zero_tap_case(as_cpu, rng, name, mode, cval, (sized(as_cpu, 7, 23), 101))


@pytest.mark.parametrize("name", ["sobel-x", "zero-row-and-column-4x5"])
def test_convolve_zero_weights_channels_and_float64(device, rng, name):
    make, _, _ = ZERO_TAP_MASKS[name]
    mask = make(rng)
    image = non_finite_image(rng, (sized(device, 6, 19), 53, 3))
    for mode, cval in (("wrap", 0.0), ("constant", np.inf)):
        check_non_finite(ck.convolve(image, mask, mode=mode, cval=cval, device=device),
                         image, mask, mode, cval)
    if device.fp64:
        image = non_finite_image(rng, (sized(device, 6, 19), 53), np.float64)
        check_non_finite(ck.convolve(image, mask, mode="reflect", device=device),
                         image, mask, "reflect", 0.0)


def test_convolve_zero_weights_with_integer_images_and_non_finite_cval(device, rng):
    image = random_image(rng, (9, 40), np.uint8)
    shift = ZERO_TAP_MASKS["shift"][0](rng)
    for mask in (shift, ZERO_TAP_MASKS["laplace"][0](rng)):
        for cval in (np.nan, -np.inf):
            check_non_finite(ck.convolve(image, mask, mode="constant", cval=cval, device=device),
                             image, mask, "constant", cval)


def test_gaussian_blur_multiplies_zero_weights_as_scipy_does(device, rng):
    # gaussian_filter's 1-D passes, unlike convolve, multiply every tap: with truncate 40 the
    # weights 39 and 40 pixels out underflow to 0, and a NaN still reaches them.  (NaN only:
    # there, infinities times 0 give NaN in an order that depends on which pass comes first.)
    skip_on_simulator(device, "an 81-tap Gaussian")
    assert np.any(gaussian_1d(40, 1.0) == 0)
    image = non_finite_image(rng, (90, 101))
    image[~np.isfinite(image)] = np.nan
    got = ck.gaussian_blur(image, 1.0, truncate=40.0, device=device)
    expected, _ = gaussian_reference(image, 1.0, "reflect", 0.0, 40.0)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))


# -- convolve: dtypes and channels ----------------------------------------------------------------

#: Every image dtype scipy.ndimage filters (numpy's default integer, int64 on Linux, included).
IMAGE_DTYPES = [np.bool_, np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.uint64,
                np.int64, np.float32, np.float64]
#: Integer dtypes whose values float32 cannot all hold.
WIDE_INTEGERS = [np.uint32, np.int32, np.uint64, np.int64]


def summed_in_float(device, dtype) -> bool:
    """Whether an image of ``dtype`` is summed in float on ``device`` (else in double)."""
    return not (dtype == np.float64 or (dtype in WIDE_INTEGERS and device.fp64))


@pytest.mark.parametrize("dtype", IMAGE_DTYPES, ids=lambda d: np.dtype(d).name)
def test_convolve_dtypes(device, rng, dtype):
    if dtype is np.float64:
        need_fp64(device)
    image = random_image(rng, sized(device, (13, 17), (131, 257)), dtype)
    mask = rng.standard_normal((3, 4))
    check_convolve(ck.convolve(image, mask, mode="nearest", device=device), image, mask,
                   "nearest")


@pytest.mark.parametrize("dtype", IMAGE_DTYPES, ids=lambda d: np.dtype(d).name)
def test_convolve_small_exact_cases_of_every_dtype(device, dtype):
    # Small integer sums that every dtype and float32 hold exactly: an even-sized mask with
    # zero weights (its anchor off the centre) and a separable column, each mode its own.
    if dtype is np.float64:
        need_fp64(device)
    image = np.array([[1, 2, 3], [4, 5, 6]]).astype(dtype)
    if dtype is np.bool_:
        image = np.array([[1, 0, 1], [1, 1, 0]], dtype)
    for mask, mode in (([[1, 0], [0, 1]], "reflect"), ([[1], [2], [1]], "nearest"),
                       ([[2, 1, -1]], "wrap"), ([[1, 1], [1, 1]], "constant")):
        mask = np.array(mask)
        got = ck.convolve(image, mask, mode=mode, cval=2.0, device=device)
        expected = scipy.ndimage.convolve(image.astype(np.float64), mask, mode=mode, cval=2.0)
        assert got.dtype == result_dtype(dtype)
        np.testing.assert_array_equal(got, expected, err_msg=f"{mask.tolist()}, {mode}")


@pytest.mark.parametrize("dtype", WIDE_INTEGERS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("separable", [False, True], ids=["2-D", "separable"])
def test_convolve_integers_beyond_float32(device, rng, dtype, separable):
    # Differences of neighbours around 2**31 (int32) or 2**50: float32 sums lose them to
    # rounding (its spacing there is 256 or 2**27); double sums, where the device has them,
    # give scipy's float64 result exactly (the differences are small integers).
    info = np.iinfo(dtype)
    base = min(info.max // 2, 2 ** 50) + (2 ** 20 if info.min == 0 else 0)
    image = (base + rng.integers(-1000, 1000, sized(device, (9, 23), (67, 131)))).astype(dtype)
    mask = np.outer([1, 2, 1], [1, 0, -1]) if separable else np.array([[0, 1, 0], [1, -4, 1],
                                                                      [0, 1, 0]])
    expected = scipy.ndimage.convolve(image.astype(np.float64), mask, mode="reflect")
    if device.fp64:
        got = ck.convolve(image, mask, mode="reflect", device=device)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, expected.astype(np.float32))
    with reporting(device, fp64=False):  # summed in float32: right to float32's rounding
        got = ck.convolve(image, mask, mode="reflect", device=device)
    check_convolve(got, image, mask, "reflect")
    assert not np.array_equal(got, expected.astype(np.float32))  # which loses the differences


@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=lambda d: np.dtype(d).name)
def test_convolve_channels(device, rng, dtype, channels):
    image = random_image(rng, sized(device, (9, 13), (127, 131)) + (channels,), dtype)
    mask = rng.standard_normal((3, 5))
    result = ck.convolve(image, mask, mode="wrap", device=device)
    assert result.shape == image.shape
    check_convolve(result, image, mask, "wrap")


def test_convolve_channels_are_independent(device, rng):
    image = random_image(rng, (8, 10, 3), np.float32)
    mask = rng.standard_normal((3, 3))
    whole = ck.convolve(image, mask, device=device)
    for c in range(3):
        alone = ck.convolve(np.ascontiguousarray(image[..., c]), mask, device=device)
        _, scale = convolve_reference(image[..., c], mask)
        assert_close_scaled(whole[..., c], alone, scale, ulps=filter_ulps(9), what=f"channel {c}")


def test_convolve_non_contiguous_image_and_mask(device, rng):
    big = random_image(rng, (30, 40), np.float32)
    image = big[::2, ::-3]
    mask = rng.standard_normal((5, 6))[:, ::2]  # a strided 5x3 mask
    check_convolve(ck.convolve(image, mask, device=device), image, mask)
    mask_f = np.asfortranarray(rng.standard_normal((4, 3)))
    check_convolve(ck.convolve(image, mask_f, device=device), image, mask_f)


@pytest.mark.parametrize("tier", ["specialised", "generic"])
def test_each_kernel_takes_one_local_size_whatever_the_width(device, rng, monkeypatch, tier):
    """A driver such as PoCL compiles a kernel again for each new local size: a new image width
    must not choose one."""
    from clkit._launch import kernel as _launch
    from clkit._build import tiers as _tiers
    sizes = {}
    enqueue = _launch._enqueue

    def spy(queue, knl, gsize, lsize):
        sizes.setdefault(knl.function_name, set()).add(tuple(lsize))
        return enqueue(queue, knl, gsize, lsize)
    monkeypatch.setattr(_launch, "_enqueue", spy)
    mask = rng.random((3, 5))
    with _tiers.tier(tier):
        for width in (1, 2, 3, 5, 9, 17, 40, 131):
            image = rng.random((6, width), dtype=np.float32)
            for got, (want, scale) in ((ck.convolve(image, mask, device=device),
                                        convolve_reference(image, mask, "reflect", 0.0)),
                                       (ck.gaussian_blur(image, 1.5, device=device),
                                        (scipy.ndimage.gaussian_filter(image.astype(np.float64),
                                                                       1.5), 1.0))):
                assert_close_scaled(got, want, scale, dtype=np.float32, ulps=64,
                                    what=f"width {width}")
    assert sizes and all(len(s) == 1 for s in sizes.values()), sizes


@pytest.mark.parametrize("shape", [(37, 45), (24, 64, 3)], ids=["odd-width", "aligned-rgb"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_stores_past_the_caches_equal_scipy(device, rng, monkeypatch, shape, dtype):
    """The CPU variant's nontemporal stores (results larger than the caches; here every
    result), into rows that start on whole vectors or not, and into an out= that does not
    start on one: both passes of a separable mask, and the direct kernel."""
    from clkit._build import tiers as _tiers
    from clkit._engine import filter as _filter
    if dtype == np.float64:
        need_fp64(device)
    monkeypatch.setattr(_filter, "NONTEMPORAL_FROM", 0)
    drop_held()
    image = random_image(rng, shape, dtype)
    with _tiers.tier("specialised"):
        for mask in (np.outer(rng.random(5), rng.random(7)), rng.standard_normal((3, 3))):
            check_convolve(ck.convolve(image, mask, device=device), image, mask)
            raw = np.empty(image.size + 1, dtype)
            out = raw[1:].reshape(shape)  # one element past an aligned start
            assert ck.convolve(image, mask, out=out, device=device) is out
            check_convolve(out, image, mask)
    drop_held()


def test_large_image_equals_scipy(device, rng):
    """An image larger than half the last cache of a CPU (its results stored past the caches
    there): the same sums as a small one."""
    from clkit._build import tiers as _tiers
    image = random_image(rng, sized(device, (40, 64), (2160, 2112)), np.float32)
    mask = np.outer(rng.random(5), rng.random(5))
    with _tiers.tier("specialised"):
        check_convolve(ck.convolve(image, mask, device=device), image, mask)


# -- convolve: out= and device arrays -------------------------------------------------------------

def test_convolve_out_numpy(device, rng):
    image = random_image(rng, (10, 21), np.uint8)
    mask = rng.standard_normal((3, 3))
    out = np.full((10, 21), np.nan, np.float32)
    assert ck.convolve(image, mask, out=out, device=device) is out
    check_convolve(out, image, mask)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=lambda d: np.dtype(d).name)
def test_convolve_device_arrays_stay_on_the_device(device, rng, monkeypatch, dtype):
    image = random_image(rng, (37, 53), dtype)
    mask = rng.standard_normal((5, 5))
    d_image = clkit.to_device(image, device=device)
    out = clkit.empty((37, 53), np.float32, device=device)
    log = record_transfers(monkeypatch)
    result = ck.convolve(d_image, mask, mode="mirror", device=device)
    into = ck.convolve(d_image, mask, mode="mirror", out=out, device=device)
    # Nothing comes back; only the (numpy) mask's weights may be uploaded, not the image.
    assert log.reads == [] and log.maps == [], log
    assert sum(log.writes) < image.nbytes // 2, log
    monkeypatch.undo()
    assert isinstance(result, cl_array.Array) and into is out
    assert result.shape == (37, 53) and result.dtype == np.float32
    check_convolve(result.get(), image, mask, "mirror")
    check_convolve(out.get(), image, mask, "mirror")


@pytest.mark.parametrize("kind", ["numpy", "device"])
@pytest.mark.parametrize("place", ["the image itself", "a row above it"])
@pytest.mark.parametrize("mask_shape", [(5, 5), (1, 9)], ids=lambda s: "x".join(map(str, s)))
def test_out_over_the_image_gives_the_filtered_image(device, rng, kind, place, mask_shape):
    # As scipy's output=input: the kernels must not read pixels they have already written.
    # Both masks are one pass over the image (not separable; one row).  Rows of a multiple of
    # 16 bytes keep the shifted view aligned, as arrays a CPU driver uses in place are.
    values = rng.random(sized(device, (12, 20), (61, 84)), dtype=np.float32)
    whole = values if kind == "numpy" else clkit.to_device(values, device=device)
    image, out = (whole, whole) if place == "the image itself" else (whole[1:], whole[:-1])
    original = values[1:].copy() if image is not whole else values.copy()
    mask = rng.standard_normal(mask_shape)
    assert ck.convolve(image, mask, out=out, device=device) is out
    check_convolve(out if kind == "numpy" else out.get(), original, mask)


@pytest.mark.parametrize("dtype", [">f4", ">u2", ">i2"])
def test_big_endian_images_give_their_values_filtered(device, rng, dtype):
    # scipy reads any byte order (FITS files are big-endian): so does clkit, by converting
    native = random_image(rng, sized(device, (9, 14), (47, 65)), np.dtype(dtype).newbyteorder("="))
    mask = rng.standard_normal((3, 5))
    check_convolve(ck.convolve(native.astype(dtype), mask, device=device), native, mask)


# -- convolve: mistakes ---------------------------------------------------------------------------

def test_convolve_wrong_image(device):
    mask = np.ones((3, 3))
    with raises_argument_error(r"image"):
        ck.convolve(np.zeros(10, np.float32), mask, device=device)
    with raises_argument_error(r"image"):
        ck.convolve(np.zeros((2, 3, 4, 5), np.float32), mask, device=device)
    with raises_argument_error(r"complex64|image"):
        ck.convolve(np.zeros((4, 4), np.complex64), mask, device=device)


def test_convolve_wrong_mask(device):
    image = np.zeros((6, 7), np.float32)
    with raises_argument_error(r"mask"):
        ck.convolve(image, np.ones(3), device=device)
    with raises_argument_error(r"mask"):
        ck.convolve(image, np.ones((3, 3, 3)), device=device)
    with raises_argument_error(r"mask"):
        ck.convolve(image, np.ones((0, 3)), device=device)


def test_convolve_wrong_mode(device):
    with raises_argument_error(r"(?s)bogus.*reflect|reflect.*bogus"):
        ck.convolve(np.zeros((6, 7), np.float32), np.ones((3, 3)), mode="bogus", device=device)


def test_convolve_wrong_out(device):
    image = np.zeros((6, 7), np.uint8)
    with raises_argument_error(r"out"):
        ck.convolve(image, np.ones((3, 3)), out=np.zeros((6, 7), np.uint8), device=device)
    with raises_argument_error(r"out"):
        ck.convolve(image, np.ones((3, 3)), out=np.zeros((7, 6), np.float32), device=device)
    with raises_argument_error(r"out must be a numpy array like the input, not list"):
        ck.convolve(image, np.ones((3, 3)), out=[0.0] * 42, device=device)


# -- gaussian_blur --------------------------------------------------------------------------------

@pytest.mark.parametrize("sigma", [0.3, 0.5, 1.0, 1.7, 3.0, 12.0])
def test_gaussian_sigmas(device, rng, sigma):
    if sigma > 3:
        skip_on_simulator(device, f"sigma {sigma}")
    image = random_image(rng, sized(device, (13, 21), (131, 257)), np.float32)
    check_gaussian(ck.gaussian_blur(image, sigma, device=device), image, sigma)


@pytest.mark.parametrize("image_shape", ["1x1", "3x2", "odd"])
@pytest.mark.parametrize("mode", MODES)
def test_gaussian_modes(device, rng, mode, image_shape):
    shape = {"1x1": (1, 1), "3x2": (3, 2), "odd": sized(device, (11, 19), (97, 133))}
    image = random_image(rng, shape[image_shape], np.float32)
    sigma = 1.3  # radius 5: an 11-tap kernel, wider than the small images
    check_gaussian(ck.gaussian_blur(image, sigma, mode=mode, cval=0.75, device=device),
                   image, sigma, mode, 0.75)


@pytest.mark.parametrize("mode", MODES)
def test_gaussian_non_finite_pixels(device, rng, mode):
    # NaN where scipy has NaN, each infinity with its sign, numbers elsewhere (sigma 1: nine
    # taps, none of weight 0, so that scipy's order of the two passes does not matter).
    image = non_finite_image(rng, sized(device, (13, 47), (41, 67)))
    check_gaussian(ck.gaussian_blur(image, 1.0, mode=mode, cval=0.5, device=device),
                   image, 1.0, mode, 0.5)


@pytest.mark.parametrize("truncate", [1.0, 2.5, 6.0])
def test_gaussian_truncate(device, rng, truncate):
    image = random_image(rng, sized(device, (10, 15), (64, 77)), np.float32)
    check_gaussian(ck.gaussian_blur(image, 1.6, truncate=truncate, device=device),
                   image, 1.6, truncate=truncate)


@pytest.mark.parametrize("dtype,channels",
                         [(d, None) for d in IMAGE_DTYPES] +
                         [(d, c) for d in (np.uint8, np.int64, np.float32, np.float64)
                          for c in (3, 4)],
                         ids=lambda v: np.dtype(v).name if isinstance(v, type) else
                         f"HxWx{v}" if v else "HxW")
def test_gaussian_dtypes_and_channels(device, rng, dtype, channels):
    if dtype is np.float64:
        need_fp64(device)
    shape = sized(device, (9, 14), (121, 163)) + ((channels,) if channels else ())
    image = random_image(rng, shape, dtype)
    result = ck.gaussian_blur(image, 1.1, device=device)
    assert result.shape == image.shape
    check_gaussian(result, image, 1.1)


def test_gaussian_constant_image_stays_constant(device):
    image = np.full((7, 9), 200, np.uint8)
    result = ck.gaussian_blur(image, 2.0, device=device)
    assert result.dtype == np.float32
    np.testing.assert_allclose(result, 200.0, rtol=1e-5)


def test_gaussian_out_and_device_arrays(device, rng, monkeypatch):
    image = random_image(rng, (37, 61), np.float32)
    out = np.zeros((37, 61), np.float32)
    assert ck.gaussian_blur(image, 1.5, out=out, device=device) is out
    check_gaussian(out, image, 1.5)
    d_image = clkit.to_device(image, device=device)
    d_out = clkit.empty((37, 61), np.float32, device=device)
    log = record_transfers(monkeypatch)
    result = ck.gaussian_blur(d_image, 1.5, device=device)
    into = ck.gaussian_blur(d_image, 1.5, out=d_out, device=device)
    # Nothing comes back; the weights (13 taps) may be uploaded, not the image.
    assert log.reads == [] and log.maps == [], log
    assert sum(log.writes) < image.nbytes // 2, log
    monkeypatch.undo()
    assert isinstance(result, cl_array.Array) and into is d_out
    check_gaussian(result.get(), image, 1.5)
    check_gaussian(d_out.get(), image, 1.5)


def test_gaussian_wrong_arguments(device):
    image = np.zeros((6, 7), np.float32)
    with raises_argument_error(r"image"):
        ck.gaussian_blur(np.zeros(5, np.float32), 1.0, device=device)
    with raises_argument_error(r"(?s)bogus.*reflect|reflect.*bogus"):
        ck.gaussian_blur(image, 1.0, mode="bogus", device=device)
    with raises_argument_error(r"out"):
        ck.gaussian_blur(image, 1.0, out=np.zeros((6, 7), np.uint8), device=device)


# -- the GPU variant, on every device: CI has no GPU, so it also runs on PoCL and Oclgrind ---

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape,mask_shape", [((37, 71), (5, 5)), ((9, 133, 3), (4, 7)),
                                              ((1, 1), (3, 3)), ((70, 5), (9, 2))])
def test_gpu_variant(as_gpu, rng, mode, shape, mask_shape):
    from clkit._engine import conv_kernels as _conv_kernels
    image = rng.random(shape, dtype=np.float32)
    mask = rng.random(mask_shape)
    assert _conv_kernels.geometry(as_gpu, *mask_shape, 1, 4, False).variant == "gpu"
    got = ck.convolve(image, mask, mode=mode, cval=0.5, device=as_gpu)
    expected, scale = convolve_reference(image, mask, mode, 0.5)
    assert_close_scaled(got, expected, scale, ulps=filter_ulps(mask.size))
    blurred = ck.gaussian_blur(image, 1.3, mode=mode, device=as_gpu)
    expected, scale = gaussian_reference(image, 1.3, mode)
    assert_close_scaled(blurred, expected, scale, ulps=filter_ulps(2 * 9))


# rows of a multiple of 4 elements, in several work-groups of 128 (whole vectors inside the
# row, folded ones at its ends), and rows of other lengths (vectors off the 16-byte grid inside
# the row); images summed in float (a float64 image, and one of wide integers where the device
# has fp64, summed in double, keep outputs LX apart)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape,mask_shape,dtype", [
    ((29, 300), (9, 9), np.float32), ((13, 64, 2), (3, 5), np.float32),
    ((11, 70, 4), (5, 2), np.float32), ((26, 131), (8, 3), np.float32),
    ((5, 2), (9, 9), np.float32), ((21, 136), (5, 5), np.uint8), ((9, 68, 3), (7, 4), np.int16),
    ((14, 133), (5, 5), np.uint8), ((10, 45, 3), (3, 4), np.int16),
    ((17, 132), (5, 5), np.float64), ((19, 72), (3, 3), np.int32)], ids=str)
def test_gpu_variant_four_adjacent_outputs(as_gpu, rng, monkeypatch, mode, shape, mask_shape,
                                           dtype):
    from clkit._build import tiers as _tiers
    from clkit._engine import conv_kernels as _conv_kernels
    from clkit._engine.filter import Filter
    if dtype == np.float64:
        need_fp64(as_gpu)
    image = random_image(rng, shape, dtype)
    mask = rng.random(mask_shape)
    filt = Filter.for_mask("convolve", image, mask, mode, -0.5)
    defines = build_defines(filt, as_gpu)
    assert defines.get("VEC4") == ("1" if summed_in_float(as_gpu, dtype) else None)
    # the build for the image's kind of row
    aligned = str(int(np.prod(shape[1:]) % 4 == 0))
    assert defines.get("ROW_ALIGNED") == (aligned if summed_in_float(as_gpu, dtype) else None)
    expected, scale = convolve_reference(image, mask, mode, -0.5)
    with _tiers.tier("specialised"):
        got = ck.convolve(image, mask, mode=mode, cval=-0.5, device=as_gpu)
        assert got.dtype == result_dtype(dtype)
        assert_close_scaled(got, expected, scale, ulps=filter_ulps(mask.size))
        # the same sums in the same order as four outputs LX apart
        monkeypatch.setattr(_conv_kernels, "GPU_VEC4_MAX", 0)
        drop_held()
        assert "VEC4" not in build_defines(filt, as_gpu)
        np.testing.assert_array_equal(
            ck.convolve(image, mask, mode=mode, cval=-0.5, device=as_gpu), got)
    drop_held()


@pytest.mark.parametrize("mode,cval", ZERO_TAP_MODES, ids=lambda v: str(v))
@pytest.mark.parametrize("name", list(ZERO_TAP_MASKS))
def test_gpu_variant_zero_weights(as_gpu, rng, name, mode, cval):
    # 70 columns: two work-groups of 64 elements, one whose tile lies inside the row and one
    # that folds; separable masks of up to 81 taps take the direct kernel here
    zero_tap_case(as_gpu, rng, name, mode, cval, (sized(as_gpu, 7, 37), 70))


def test_gpu_variant_zero_weights_in_chunks(as_gpu, rng):
    # With 12 KiB of local memory a 13-row mask is applied 6 rows at a time: the chunk's first
    # row is known only at run time, and so is which of its taps are used.
    from clkit._engine import conv_kernels as _conv_kernels
    with reporting(as_gpu, local_mem=12 * 1024):
        mask = zero_rows_and_columns(rng, (13, 3), [0, 5, 6, 12], [1])
        assert _conv_kernels.geometry(as_gpu, 13, 3, 1, 4, False).defines["KH_CHUNK"] == 6
        image = non_finite_image(rng, (sized(as_gpu, 9, 40), 70))
        for mode, cval in (("reflect", 0.0), ("constant", np.nan), ("constant", 2.0)):
            check_non_finite(ck.convolve(image, mask, mode=mode, cval=cval, device=as_gpu),
                             image, mask, mode, cval)
    # four adjacent outputs per work-item: 24 rows and 5 of a 9-row mask in 16 KiB
    with reporting(as_gpu, local_mem=16 * 1024):
        mask = zero_rows_and_columns(rng, (9, 3), [0, 4, 8], [2])
        defines = _conv_kernels.geometry(as_gpu, 9, 3, 1, 4, False, vec4=True).defines
        assert defines["KH_CHUNK"] == 5 and defines["VEC4"] == 1
        image = non_finite_image(rng, (sized(as_gpu, 9, 40), 264))
        for mode, cval in (("reflect", 0.0), ("constant", np.nan)):
            check_non_finite(ck.convolve(image, mask, mode=mode, cval=cval, device=as_gpu),
                             image, mask, mode, cval)


# -- the one-kernel separable filter of GPUs (convolution_fused.cl) -------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sigma,shape", [(0.5, (45, 150)), (1.0, (37, 133)),  # (5x5, 9x9: one channel)
                                         (2.0, (45, 150)), (2.0, (23, 70, 3)), (5.0, (90, 140)),
                                         (7.0, (70, 132)),  # the tallest: 57 rows
                                         (3.0, (41, 33, 2)),
                                         # rows of whole 16-byte vectors, several groups wide
                                         (2.0, (37, 520)), (3.0, (20, 260, 2)),
                                         # short rows of channels (sigma y, sigma x): 8
                                         # elements per work-item of the row pass
                                         ((2.0, 1.0), (40, 300, 2)), ((2.0, 0.6), (21, 256, 3))],
                         ids=str)
def test_gpu_fused_gaussian(as_gpu, rng, monkeypatch, mode, sigma, shape):
    fused_gaussian_case(as_gpu, rng, mode, sigma, shape, np.float32, monkeypatch)


@pytest.mark.parametrize("sigma,channels,variant", [(1.0, None, "fused"), (0.5, 3, "gpu"),
                                                    (1.0, 4, "gpu"), (1.3, 3, "fused")], ids=str)
def test_gpu_small_separable_masks_of_channels_take_the_direct_kernel(as_gpu, rng, sigma,
                                                                      channels, variant):
    # one channel: the two passes as one kernel at any size; channels: the direct kernel up to
    # 9x9 taps (sigma 1.3: 11x11, the one kernel)
    from clkit._engine.filter import Filter
    image = random_image(rng, (sized(as_gpu, 9, 30), 70) + ((channels,) if channels else ()),
                         np.float32)
    filt = Filter.for_gaussian("gaussian_blur", image, sigma, "reflect", 0.0, 4.0)
    assert filt._program(as_gpu)[1].variant == variant
    check_gaussian(ck.gaussian_blur(image, sigma, device=as_gpu), image, sigma)


# images of other types: read four at a time (summed in float), or one (summed in double;
# wide integers then give float32 results); wide integers summed in float where the device
# hides its fp64
@pytest.mark.parametrize("mode", ["reflect", "constant"])
@pytest.mark.parametrize("sigma,shape,dtype,fp64", [(2.0, (30, 264), np.uint8, True),
                                                    (3.0, (25, 67, 3), np.uint16, True),
                                                    (2.0, (28, 132), np.int8, True),
                                                    (2.0, (26, 140), np.float64, True),
                                                    (3.0, (21, 50, 2), np.float64, True),
                                                    (2.0, (24, 136), np.int32, True),
                                                    (2.0, (22, 70, 2), np.uint64, True),
                                                    (2.0, (24, 136), np.int64, False)], ids=str)
def test_gpu_fused_gaussian_of_other_types(as_gpu, rng, monkeypatch, mode, sigma, shape, dtype,
                                           fp64):
    if dtype == np.float64 or (fp64 and dtype in WIDE_INTEGERS):
        need_fp64(as_gpu)
    with reporting(as_gpu, fp64=fp64 and as_gpu.fp64):
        fused_gaussian_case(as_gpu, rng, mode, sigma, shape, dtype, monkeypatch)


def fused_gaussian_case(as_gpu, rng, mode, sigma, shape, dtype, monkeypatch):
    from clkit._engine import conv_kernels as _conv_kernels
    from clkit._engine.filter import Filter
    if as_gpu.simulator and (np.max(sigma) > 2 or mode not in ("reflect", "constant", "wrap")):
        pytest.skip("wide masks and every mode are too slow on the simulator")
    # masks as tall as the kernel takes (57 rows), beyond those it is shipped for
    monkeypatch.setattr(_conv_kernels, "FUSED_MAX_ROWS",
                        {"float": 57, "byte": 57, "double": 25})
    drop_held()
    image = random_image(rng, shape, dtype)
    filt = Filter.for_gaussian("gaussian_blur", image, sigma, mode, -0.75, 4.0)
    geometry = filt._program(as_gpu)[1]
    assert geometry.variant == "fused"
    assert geometry.defines["VEC4"] == summed_in_float(as_gpu, dtype)
    got = ck.gaussian_blur(image, sigma, mode=mode, cval=-0.75, device=as_gpu)
    assert got.dtype == result_dtype(dtype)
    expected, scale = gaussian_reference(image, sigma, mode, -0.75)
    taps = 2 * int(4.0 * np.max(sigma) + 0.5) + 1
    assert_close_scaled(got, expected, scale, ulps=filter_ulps(2 * taps), what="gaussian_blur")


# The two passes of GPUs for masks taller than the one kernel takes: both streamed through
# registers (images summed in float) against the tiles' passes. The one kernel's limit is
# lowered so that short masks, which the simulator can run, take the two passes too.
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sigma,shape", [(1.5, (37, 132)), (1.5, (21, 130)), (1.5, (19, 44, 3)),
                                         (1.5, (11, 45, 2)), (1.5, (9, 67)), (1.5, (7, 3)),
                                         (1.5, (5, 2, 3)),
                                         (3.0, (70, 264)), (9.0, (90, 141))], ids=str)
def test_gpu_streamed_passes(as_gpu, rng, monkeypatch, mode, sigma, shape):
    from clkit._engine import conv_kernels as _conv_kernels
    from clkit._engine.filter import Filter
    if as_gpu.simulator and (sigma > 2 or mode not in ("reflect", "constant", "wrap")):
        pytest.skip("wide masks and every mode are too slow on the simulator")
    monkeypatch.setattr(_conv_kernels, "FUSED_MAX_ROWS",
                        dict.fromkeys(("float", "byte", "double"), 0))
    image = random_image(rng, shape, np.float32)
    results = []
    for rows, cols in ((_conv_kernels.GPU_ROWS, _conv_kernels.GPU_COLS), (None, None)):
        monkeypatch.setattr(_conv_kernels, "GPU_ROWS", rows)
        monkeypatch.setattr(_conv_kernels, "GPU_COLS", cols)
        drop_held()  # plans made with the other passes
        filt = Filter.for_gaussian("gaussian_blur", image, sigma, mode, -0.75, 4.0)
        defines = filt._program(as_gpu)[1].defines
        assert ("ROW_SX" in defines, "COL_SY" in defines) == (rows is not None, cols is not None)
        with clkit._build.tiers.tier("specialised"):
            results.append(ck.gaussian_blur(image, sigma, mode=mode, cval=-0.75, device=as_gpu))
    drop_held()
    streamed, tiles = results
    # the same taps in the same order: the same sums, where the compiler contracts alike
    np.testing.assert_allclose(streamed, tiles, rtol=2e-7, atol=1e-7)
    expected, scale = gaussian_reference(image, sigma, mode, -0.75)
    taps = 2 * int(4.0 * sigma + 0.5) + 1
    assert_close_scaled(streamed, expected, scale, ulps=filter_ulps(2 * taps),
                        what="gaussian_blur, streamed passes")


def test_gpu_fused_rows_of_a_band_and_uneven_tiles(as_gpu, rng):
    """Two devices' bands (row maps that start inside the image), a height of no whole tiles."""
    skip_on_simulator(as_gpu, "a 17-tap blur of 1000 rows")
    image = rng.random((1001, 77), dtype=np.float32)
    got = ck.gaussian_blur(image, 2.0, mode="mirror", device=[as_gpu, as_gpu])
    expected, scale = gaussian_reference(image, 2.0, "mirror")
    assert_close_scaled(got, expected, scale, ulps=filter_ulps(34), what="gaussian_blur")


BAKED = {"WEIGHTS_2D", "ROW_WEIGHTS", "COL_WEIGHTS"}
BAKED_CASES = {  # sigma (y, x): the defines that carry the weights
    "one kernel": ((2.0, 2.0), {"ROW_WEIGHTS", "COL_WEIGHTS"}),
    "sigma_yx (1, 3)": ((1.0, 3.0), {"ROW_WEIGHTS", "COL_WEIGHTS"}),
    "two passes": ((10.0, 10.0), {"ROW_WEIGHTS", "COL_WEIGHTS"}),
    "2-D kernel": ((2.0, 0.0), {"WEIGHTS_2D"}),
}


def build_defines(filt, device) -> dict:
    """The defines of the filter's specialised build on ``device``."""
    options = filt._program(device)[0].options
    return dict(o[2:].split("=", 1) for o in options if o.startswith("-D") and "=" in o)


def baked_case(device, rng, case):
    """Case ``case`` of BAKED_CASES: (sigma, the defines with its weights, image, filter)."""
    from clkit._engine.filter import Filter
    sigma, baked = BAKED_CASES[case]
    if max(sigma) > 5:
        skip_on_simulator(device, "a blur of sigma 10")
    image = rng.random((sized(device, 24, 150), 70), dtype=np.float32)
    return sigma, baked, image, Filter.for_gaussian("gaussian_blur", image, sigma, "reflect",
                                                    0.0, 4.0)


@pytest.mark.parametrize("case", list(BAKED_CASES))
def test_gpu_gaussian_weights_built_into_the_program(as_gpu, rng, monkeypatch, case):
    from clkit._build import tiers as _tiers
    from clkit._engine import filter as _filter
    sigma, baked, image, filt = baked_case(as_gpu, rng, case)
    defines = build_defines(filt, as_gpu)
    assert BAKED & set(defines) == baked
    if "WEIGHTS_2D" in baked:  # exact: the mask's float32 weights (weights_as), row by row
        from clkit._engine.stencil import weights_as
        np.testing.assert_array_equal(
            [float.fromhex(v.rstrip("f")) for v in defines["WEIGHTS_2D"].split(",")],
            weights_as(filt.corr, np.float32).ravel())
    # a mask a caller passes stays an argument: a build per mask size, not per mask
    assert not BAKED & set(build_defines(
        _filter.Filter.for_mask("convolve", image, filt.corr, "reflect", 0.0), as_gpu))
    expected, scale = gaussian_reference(image, sigma)
    with _tiers.tier("specialised"):
        got = ck.gaussian_blur(image, sigma, device=as_gpu)
        assert_close_scaled(got, expected, scale, ulps=filter_ulps(sum(filt.corr.shape)),
                            what=f"gaussian_blur sigma {sigma}")
        # the same sums in the same order as the kernels that read the weights from arguments
        monkeypatch.setattr(_filter, "MAX_BAKED_TAPS", 0)
        drop_held()
        assert not BAKED & set(build_defines(filt, as_gpu))
        np.testing.assert_array_equal(ck.gaussian_blur(image, sigma, device=as_gpu), got)
    drop_held()


@pytest.mark.parametrize("case", list(BAKED_CASES))
def test_gpu_masks_past_the_constant_buffer_go_to_global_memory(as_gpu, rng, monkeypatch, case):
    """Masks over the device's constant buffer are read from __global memory, with the same
    sums, and then no weights are built in: the program's tables are __constant."""
    from clkit._build import tiers as _tiers
    from clkit._engine import filter as _filter
    sigma, _, image, filt = baked_case(as_gpu, rng, case)
    assert "MASK_SPACE" not in build_defines(filt, as_gpu)
    with _tiers.tier("specialised"):
        in_constant = ck.gaussian_blur(image, sigma, device=as_gpu)
        monkeypatch.setattr(_filter, "constant_bytes", lambda device: 64)  # 16 floats
        drop_held()
        defines = build_defines(filt, as_gpu)
        assert defines["MASK_SPACE"] == "__global"
        assert not BAKED & set(defines)
        np.testing.assert_array_equal(ck.gaussian_blur(image, sigma, device=as_gpu), in_constant)
    drop_held()
    expected, scale = gaussian_reference(image, sigma)
    assert_close_scaled(in_constant, expected, scale, ulps=filter_ulps(sum(filt.corr.shape)),
                        what=f"gaussian_blur sigma {sigma}")


def test_gpu_two_passes_keep_their_factors_in_constant_memory(as_gpu, monkeypatch):
    """The two passes take the mask's factors: a sigma-25 blur (201x201 taps, 158 KiB as one
    mask) keeps its 2 x 201 weights in the 64 KiB of constant memory of an NVIDIA GPU."""
    from clkit._engine import filter as _filter
    monkeypatch.setattr(_filter, "constant_bytes", lambda device: 64 * 1024)
    image = np.zeros((300, 300), np.float32)
    filt = _filter.Filter.for_gaussian("gaussian_blur", image, 25.0, "reflect", 0.0, 4.0)
    assert filt.corr.nbytes > 64 * 1024 and filt.two_pass(as_gpu)
    defines = build_defines(filt, as_gpu)
    assert "MASK_SPACE" not in defines
    assert {"ROW_WEIGHTS", "COL_WEIGHTS"} <= set(defines)
    monkeypatch.setattr(_filter, "constant_bytes", lambda device: 2 * 201 * 4 - 1)
    assert build_defines(filt, as_gpu)["MASK_SPACE"] == "__global"


def test_gpu_fused_fits_the_local_memory_or_gives_way(as_gpu, rng, monkeypatch):
    from clkit._engine import conv_kernels as _conv_kernels
    monkeypatch.setattr(_conv_kernels, "FUSED_SHAPE", (32, 8, 16))  # (LX, LY, PY)
    monkeypatch.setattr(_conv_kernels, "FUSED_SHAPE4", (8, 32, 8))
    with reporting(as_gpu, local_mem=48 * 1024):  # an NVIDIA GPU's
        assert _conv_kernels.fused(as_gpu, 17, 17, 1, 4).py == 16  # 144 rows of 32 floats
        assert _conv_kernels.fused(as_gpu, 25, 25, 1, 4).py == 16  # the tallest it takes
        assert _conv_kernels.fused(as_gpu, 27, 27, 1, 4) is None  # two passes are faster there
        limit = _conv_kernels.FUSED_MAX_ROWS["float"]  # four elements each
        assert _conv_kernels.fused(as_gpu, limit, limit, 1, 4, vec4=True).py == 8
        assert _conv_kernels.fused(as_gpu, limit + 2, limit + 2, 1, 4, vec4=True) is None
        # images of bytes: taller masks
        limit = _conv_kernels.FUSED_MAX_ROWS["byte"]
        assert limit > _conv_kernels.FUSED_MAX_ROWS["float"]
        assert _conv_kernels.fused(as_gpu, limit, limit, 1, 4, True, src_itemsize=1).py == 8
        assert _conv_kernels.fused(as_gpu, limit + 2, limit + 2, 1, 4, True, 1) is None
    with reporting(as_gpu, local_mem=12 * 1024):
        assert _conv_kernels.fused(as_gpu, 17, 17, 1, 4).py == 8  # 64 + 16 rows: 10 KiB
        assert _conv_kernels.fused(as_gpu, 81, 81, 1, 4) is None  # two passes, as above
        image = rng.random((sized(as_gpu, 30, 200), 90), dtype=np.float32)
        mask = np.outer(rng.standard_normal(81), rng.standard_normal(3))
        from clkit._engine.filter import Filter
        filt = Filter.for_mask("convolve", image, mask, "reflect", 0.0)
        assert filt._program(as_gpu)[1].variant == "gpu"  # the two passes
        expected, scale = convolve_reference(image, mask)
        assert_close_scaled(ck.convolve(image, mask, device=as_gpu), expected, scale,
                            ulps=filter_ulps(84), what="convolve")


@pytest.mark.parametrize("tier", ["generic", "specialised"])
@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("mask_shape", [(5, 3), (4, 4), "gaussian"])
def test_a_pixel_does_not_depend_on_where_the_image_begins(device, rng, mask_shape, channels,
                                                           tier):
    """A crop of an image, filtered, equals the whole image's result away from the crop's
    edges, bit for bit: each pixel sums its taps in the same order wherever it lies (what
    clkit.dask's blocks rely on).  Crops starting at every offset within a vector of 16."""
    image = rng.random((40, 70, channels), dtype=np.float32).squeeze()
    mode = "reflect"
    run = ((lambda im: ck.gaussian_blur(im, 1.5, mode=mode, device=device))
           if mask_shape == "gaussian" else
           (lambda im, m=rng.random(mask_shape): ck.convolve(im, m, mode=mode, device=device)))
    from clkit._build import tiers as _tiers
    margin = 7
    with _tiers.tier(tier):
        whole = run(image)
        for c0 in (range(0, 17) if not device.simulator else (0, 3, 13)):  # (the simulator: slow)
            part = run(image[2:, c0:])
            np.testing.assert_array_equal(part[margin:-margin, margin:-margin],
                                          whole[2 + margin:-margin, c0 + margin:-margin])
