"""clkit.kernels.grayscale against OpenCV and numpy, on every device."""

import cv2
import numpy as np
import pyopencl.array as cl_array
import pytest

import clkit
import clkit.kernels as ck
from _reference import (WEIGHTS, assert_close_scaled, gray_reference, gray_uint8_reference,
                        raises_argument_error, record_transfers, skip_on_simulator)

# (height, width): one pixel, a row, a column, primes; the large ones on real devices only.
SHAPES = [(1, 1), (1, 7), (5, 1), (13, 29), (257, 509), (480, 641)]
LARGE = {(257, 509), (480, 641)}


def shape_id(shape):
    return f"{shape[0]}x{shape[1]}"


def random_rgb(rng, shape, channels, dtype):
    size = shape + (channels,)
    if np.dtype(dtype) == np.uint8:
        return rng.integers(0, 256, size=size, dtype=np.uint8)
    # Values beyond [0, 1] too: the float result is the plain weighted sum, nothing clipped.
    return (rng.random(size) * 1.5 - 0.25).astype(np.float32)


def check_uint8(result, image, weights="bt601"):
    """Bit for bit OpenCV's fixed-point luma (cv2.cvtColor itself for bt601), and within 1 of
    the exact weighted sum."""
    assert type(result) is np.ndarray
    assert result.dtype == np.uint8 and result.shape == image.shape[:2]
    expected = gray_uint8_reference(image, weights)
    wrong = result != expected
    assert not wrong.any(), (
        f"{wrong.sum()} of {wrong.size} pixels differ from "
        f"{'cv2.cvtColor' if weights == 'bt601' else 'the fixed-point luma'}; first at "
        f"{tuple(np.argwhere(wrong)[0])}: got {result[wrong][0]}, expected {expected[wrong][0]}")
    exact = np.clip(gray_reference(image, weights), 0, 255)
    assert np.abs(result - exact).max() <= 1


def check_float(result, image, weights):
    assert type(result) is np.ndarray
    assert result.dtype == np.float32 and result.shape == image.shape[:2]
    w = np.asarray(WEIGHTS[weights] if isinstance(weights, str) else weights, np.float64)
    scale = np.abs(image[..., :3].astype(np.float64)) @ np.abs(w)
    assert_close_scaled(result, gray_reference(image, w), scale, ulps=6)


@pytest.mark.parametrize("channels", [3, 4], ids=["rgb", "rgba"])
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_uint8_matches_opencv(device, rng, shape, channels):
    if shape in LARGE:
        skip_on_simulator(device, shape_id(shape))
    image = random_rgb(rng, shape, channels, np.uint8)
    check_uint8(ck.grayscale(image, device=device), image)


def test_uint8_primaries_and_extremes(device):
    levels = np.array([0, 1, 2, 127, 128, 254, 255], np.uint8)
    corners = np.array(np.meshgrid(levels, levels, levels, indexing="ij")).reshape(3, -1).T
    image = np.ascontiguousarray(corners.reshape(7, 49, 3))  # every mix of the levels
    result = ck.grayscale(image, device=device)
    check_uint8(result, image)
    assert (result[image.min(axis=-1) == 255] == 255).all(), "white stays white (no wrap-around)"
    assert (result[image.max(axis=-1) == 0] == 0).all()


@pytest.mark.parametrize("weights", ["bt709", (0.25, 0.5, 0.25), [0.1, 0.2, 0.7]],
                         ids=["bt709", "tuple", "list"])
def test_uint8_other_weights(device, rng, weights):
    image = random_rgb(rng, (13, 29), 3, np.uint8)
    check_uint8(ck.grayscale(image, weights=weights, device=device), image, weights)


@pytest.mark.parametrize("weights", ["bt601", "bt709", (0.5, -0.25, 1.5)],
                         ids=["bt601", "bt709", "custom"])
@pytest.mark.parametrize("channels", [3, 4], ids=["rgb", "rgba"])
@pytest.mark.parametrize("shape", [(1, 1), (13, 29), (257, 509)], ids=shape_id)
def test_float32_equals_weighted_sum(device, rng, shape, channels, weights):
    if shape in LARGE:
        skip_on_simulator(device, shape_id(shape))
    image = random_rgb(rng, shape, channels, np.float32)
    check_float(ck.grayscale(image, weights=weights, device=device), image, weights)


def test_default_weights_are_bt601(device, rng):
    image = random_rgb(rng, (5, 11), 3, np.float32)
    np.testing.assert_array_equal(ck.grayscale(image, device=device),
                                  ck.grayscale(image, weights="bt601", device=device))
    check_float(ck.grayscale(image, weights=WEIGHTS["bt601"], device=device), image, "bt601")


def test_weights_as_any_sequence(device, rng):
    image = random_rgb(rng, (6, 9), 3, np.float32)
    forms = [(0.3, 0.3, 0.4), [0.3, 0.3, 0.4], np.array([0.3, 0.3, 0.4]),
             np.array([0.3, 0.3, 0.4], np.float32)]
    results = [ck.grayscale(image, weights=w, device=device) for w in forms]
    for result in results[1:]:
        np.testing.assert_array_equal(result, results[0])
    check_float(results[0], image, (0.3, 0.3, 0.4))


@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=["uint8", "float32"])
def test_alpha_is_ignored(device, rng, dtype):
    image = random_rgb(rng, (9, 14), 4, dtype)
    opaque, clear = image.copy(), image.copy()
    opaque[..., 3] = 255 if dtype == np.uint8 else 1.0
    clear[..., 3] = 0 if dtype == np.uint8 else np.nan  # not even a NaN alpha leaks in
    np.testing.assert_array_equal(ck.grayscale(opaque, device=device),
                                  ck.grayscale(clear, device=device))


def test_non_contiguous_views(device, rng):
    rgba = random_rgb(rng, (11, 17), 4, np.uint8)
    rgb_view = rgba[..., :3]              # strided channels
    check_uint8(ck.grayscale(rgb_view, device=device), rgb_view)
    flipped = rgba[::-1, ::2]             # negative and step-2 strides
    check_uint8(ck.grayscale(flipped, device=device), flipped)


def test_out_numpy(device, rng):
    image = random_rgb(rng, (7, 23), 3, np.uint8)
    out = np.zeros((7, 23), np.uint8)
    assert ck.grayscale(image, out=out, device=device) is out
    check_uint8(out, image)
    image_f = random_rgb(rng, (7, 23), 4, np.float32)
    out_f = np.full((7, 23), np.nan, np.float32)
    assert ck.grayscale(image_f, out=out_f, device=device) is out_f
    check_float(out_f, image_f, "bt601")


@pytest.mark.parametrize("channels", [3, 4], ids=["rgb", "rgba"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=["uint8", "float32"])
def test_device_arrays_stay_on_the_device(device, rng, monkeypatch, dtype, channels):
    image = random_rgb(rng, (19, 31), channels, dtype)
    d_image = clkit.to_device(image, device=device)
    out = clkit.empty((19, 31), dtype, device=device)
    log = record_transfers(monkeypatch)
    result = ck.grayscale(d_image, device=device)
    into = ck.grayscale(d_image, out=out, device=device)
    # Nothing comes back to the host; three weights may travel as a tiny upload.
    assert log.reads == [] and log.maps == [] and sum(log.writes) <= 256, log
    monkeypatch.undo()
    assert isinstance(result, cl_array.Array) and into is out
    assert result.shape == (19, 31) and result.dtype == np.dtype(dtype)
    for got in (result.get(), out.get()):
        if dtype == np.uint8:
            check_uint8(got, image)
        else:
            check_float(got, image, "bt601")


def test_device_arrays_pick_the_device(device, rng, monkeypatch):
    image = random_rgb(rng, (6, 10), 3, np.uint8)
    d_image = clkit.to_device(image, device=device)
    log = record_transfers(monkeypatch)
    result = ck.grayscale(d_image)  # no device=: the array's own device
    assert log.reads == [] and log.maps == [] and sum(log.writes) <= 256, log
    monkeypatch.undo()
    assert result.queue.device.int_ptr == device.cl_device.int_ptr
    check_uint8(result.get(), image)


# -- mistakes ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(8, 9), (8, 9, 2), (8, 9, 5), (2, 8, 9, 3)],
                         ids=["HxW", "HxWx2", "HxWx5", "4-D"])
def test_wrong_image_shape(device, shape):
    with raises_argument_error(r"(?i)image|HxWx|channel"):
        ck.grayscale(np.zeros(shape, np.uint8), device=device)


@pytest.mark.parametrize("dtype", [np.int32, np.complex64], ids=["int32", "complex64"])
def test_wrong_image_dtype(device, dtype):
    with raises_argument_error(r"uint8|float32"):
        ck.grayscale(np.zeros((4, 5, 3), dtype), device=device)


@pytest.mark.parametrize("weights,match", [
    ("bt2020", r"bt601"), ((0.5, 0.5), r"3"), ((0.1, 0.2, 0.3, 0.4), r"3"),
    ("", r"bt601")], ids=["unknown-name", "two", "four", "empty"])
def test_wrong_weights(device, weights, match):
    with raises_argument_error(match):
        ck.grayscale(np.zeros((4, 5, 3), np.uint8), weights=weights, device=device)


def test_wrong_out(device):
    image = np.zeros((4, 5, 3), np.uint8)
    with raises_argument_error(r"out"):
        ck.grayscale(image, out=np.zeros((5, 4), np.uint8), device=device)
    with raises_argument_error(r"out"):
        ck.grayscale(image, out=np.zeros((4, 5), np.float32), device=device)
    with raises_argument_error(r"out"):
        ck.grayscale(image, out=np.zeros((4, 5, 3), np.uint8), device=device)


@pytest.mark.parametrize("channels", [3, 4])
@pytest.mark.parametrize("weights", ["bt601", "bt709"])
def test_each_layout_equals_opencv(device, rng, monkeypatch, channels, weights):
    """Every layout of the uint8 kernel on every device: one 16-pixel block per work-item (the
    GPU layout, run here with the device reporting itself a GPU), and on CPU drivers blocks in
    pairs in 8-lane vectors (AVX2) or in fours in 16-lane vectors (AVX-512), whatever the
    device's own vectors. Shapes of this test only, with a tail of single pixels, so that the
    launch is planned here rather than taken from an earlier test."""
    from _reference import reporting
    from clkit.kernels import _grayscale
    used = []
    original = _grayscale.program

    def program(name, options=(), **defines):
        used.append((defines["PPW"], defines["LANES"]))
        return original(name, options, **defines)

    monkeypatch.setattr(_grayscale, "program", program)
    for kind, lanes, shape in (("gpu", 4, (19, 83 + channels)), ("cpu", 8, (23, 611 + channels)),
                               ("cpu", 16, (21, 613 + channels))):
        image = random_rgb(rng, shape, channels, np.uint8)
        used.clear()
        monkeypatch.setattr(_grayscale, "int_lanes", lambda device, lanes=lanes: lanes)
        with reporting(device, type=kind):
            check_uint8(ck.grayscale(image, weights=weights, device=device), image, weights)
        assert used == [(16 if kind == "gpu" else 256, lanes)], (kind, used)
