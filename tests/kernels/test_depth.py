"""clkit.kernels.depth_to_points against the pinhole formula in numpy, on every device."""

import numpy as np
import pyopencl.array as cl_array
import pytest

import clkit
import clkit.kernels as ck
from _reference import (assert_close_scaled, pinhole_reference, raises_argument_error,
                        record_transfers, skip_on_simulator)

SHAPES = [(1, 1), (1, 9), (7, 1), (7, 11), (13, 29), (257, 509), (480, 640)]
LARGE = {(257, 509), (480, 640)}


def shape_id(shape):
    return f"{shape[0]}x{shape[1]}"


def intrinsics(shape):
    """Focal lengths and a principal point off the pixel grid, as a real camera has."""
    h, w = shape
    return dict(fx=525.3, fy=519.7, cx=(w - 1) / 2 + 0.37, cy=(h - 1) / 2 - 0.21)


def uint16_depth(rng, shape):
    depth = rng.integers(1, 10000, size=shape, endpoint=True).astype(np.uint16)
    depth[rng.random(shape) < 0.2] = 0          # holes
    depth[rng.random(shape) < 0.01] = 65535     # the far limit
    return depth


def float_depth(rng, shape):
    """Metres, with every kind of invalid pixel: NaN, +-inf, 0, -0 (and negatives, still valid)."""
    depth = rng.uniform(0.3, 8.0, size=shape).astype(np.float32)
    pick = rng.random(shape)
    depth[pick < 0.30] = -1.5
    depth[pick < 0.25] = -0.0
    depth[pick < 0.20] = 0.0
    depth[pick < 0.15] = -np.inf
    depth[pick < 0.10] = np.inf
    depth[pick < 0.05] = np.nan
    return depth


def check_points(points, depth, cam, depth_scale=1.0, drop_invalid=True):
    expected, scale, valid = pinhole_reference(depth, depth_scale=depth_scale, **cam)
    if drop_invalid:
        expected, scale = expected[valid], scale[valid]
    assert type(points) is np.ndarray
    assert points.dtype == np.float32, f"dtype {points.dtype}, expected float32"
    assert points.shape == expected.shape, f"shape {points.shape}, expected {expected.shape}"
    assert_close_scaled(points, expected, scale, ulps=8, what="points")
    return valid


@pytest.mark.parametrize("depth_scale", [1000.0, 5000.0])
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_uint16_depth(device, rng, shape, depth_scale):
    if shape in LARGE:
        skip_on_simulator(device, shape_id(shape))
    depth, cam = uint16_depth(rng, shape), intrinsics(shape)
    points = ck.depth_to_points(depth, depth_scale=depth_scale, device=device, **cam)
    check_points(points, depth, cam, depth_scale)


@pytest.mark.parametrize("depth_scale", [1.0, 0.5])
@pytest.mark.parametrize("drop_invalid", [True, False], ids=["drop", "keep"])
@pytest.mark.parametrize("shape", [(1, 1), (13, 29), (257, 509)], ids=shape_id)
def test_float32_depth_with_invalid_pixels(device, rng, shape, drop_invalid, depth_scale):
    if shape in LARGE:
        skip_on_simulator(device, shape_id(shape))
    depth, cam = float_depth(rng, shape), intrinsics(shape)
    points = ck.depth_to_points(depth, depth_scale=depth_scale, drop_invalid=drop_invalid,
                                device=device, **cam)
    check_points(points, depth, cam, depth_scale, drop_invalid)


def test_row_major_order_by_hand(device):
    depth = np.array([[1, 0, 2], [3, 4, 0]], np.float32)
    points = ck.depth_to_points(depth, 1.0, 1.0, 0.0, 0.0, device=device)
    # pixels (u, v) = (0, 0), (2, 0), (0, 1), (1, 1): x = u z, y = v z
    np.testing.assert_array_equal(points, [[0, 0, 1], [4, 0, 2], [0, 3, 3], [4, 4, 4]])
    every = ck.depth_to_points(depth, 2.0, 4.0, 1.0, 0.5, depth_scale=2.0, drop_invalid=False,
                               device=device)
    z = depth / 2
    u, v = np.meshgrid(np.arange(3.0), np.arange(2.0))
    expected = np.stack([(u - 1) * z / 2, (v - 0.5) * z / 4, z], -1).reshape(-1, 3)
    np.testing.assert_array_equal(every, expected)


def test_keep_invalid_keeps_every_pixel(device, rng):
    depth = np.zeros((6, 10), np.uint16)
    cam = intrinsics(depth.shape)
    points = ck.depth_to_points(depth, drop_invalid=False, device=device, **cam)
    assert points.shape == (60, 3) and points.dtype == np.float32
    assert (points == 0).all()
    depth = uint16_depth(rng, (6, 10))
    check_points(ck.depth_to_points(depth, drop_invalid=False, device=device, **cam),
                 depth, cam, drop_invalid=False)


def test_all_invalid_gives_no_points(device):
    depth = np.full((5, 8), np.nan, np.float32)
    depth[2] = 0
    cam = intrinsics(depth.shape)
    points = ck.depth_to_points(depth, device=device, **cam)
    assert points.shape == (0, 3) and points.dtype == np.float32
    rgb = np.zeros((5, 8, 3), np.uint8)
    points, colors = ck.depth_to_points(depth, rgb=rgb, device=device, **cam)
    assert points.shape == (0, 3) and points.dtype == np.float32
    assert colors.shape == (0, 3) and colors.dtype == np.uint8


def test_all_valid_gives_every_point(device, rng):
    depth = rng.integers(1, 5000, size=(9, 13)).astype(np.uint16)
    cam = intrinsics(depth.shape)
    points = ck.depth_to_points(depth, depth_scale=1000.0, device=device, **cam)
    assert points.shape == (9 * 13, 3)
    check_points(points, depth, cam, 1000.0)


# -- colours -------------------------------------------------------------------------------------

@pytest.mark.parametrize("drop_invalid", [True, False], ids=["drop", "keep"])
@pytest.mark.parametrize("kind", ["uint16", "float32"])
@pytest.mark.parametrize("shape", [(1, 1), (13, 29), (480, 640)], ids=shape_id)
def test_colours_follow_their_points(device, rng, shape, kind, drop_invalid):
    if shape in LARGE:
        skip_on_simulator(device, shape_id(shape))
    depth = uint16_depth(rng, shape) if kind == "uint16" else float_depth(rng, shape)
    scale = 1000.0 if kind == "uint16" else 1.0
    rgb = rng.integers(0, 256, size=shape + (3,), dtype=np.uint8)
    cam = intrinsics(shape)
    result = ck.depth_to_points(depth, depth_scale=scale, rgb=rgb, drop_invalid=drop_invalid,
                                device=device, **cam)
    assert isinstance(result, tuple) and len(result) == 2
    points, colors = result
    valid = check_points(points, depth, cam, scale, drop_invalid)
    expected = rgb.reshape(-1, 3)[valid] if drop_invalid else rgb.reshape(-1, 3)
    assert type(colors) is np.ndarray and colors.dtype == np.uint8
    np.testing.assert_array_equal(colors, expected)


def test_colours_from_a_non_contiguous_image(device, rng):
    depth = uint16_depth(rng, (10, 12))
    rgba = rng.integers(0, 256, size=(10, 12, 4), dtype=np.uint8)
    rgb = rgba[..., :3]
    cam = intrinsics(depth.shape)
    points, colors = ck.depth_to_points(depth, depth_scale=1000.0, rgb=rgb, device=device, **cam)
    valid = check_points(points, depth, cam, 1000.0)
    np.testing.assert_array_equal(colors, rgb.reshape(-1, 3)[valid])


# -- device arrays -------------------------------------------------------------------------------

def test_device_arrays_stay_on_the_device(device, rng, monkeypatch):
    shape = (19, 27)
    depth = uint16_depth(rng, shape)
    rgb = rng.integers(0, 256, size=shape + (3,), dtype=np.uint8)
    cam = intrinsics(shape)
    d_depth, d_rgb = clkit.to_device(depth, device=device), clkit.to_device(rgb, device=device)
    log = record_transfers(monkeypatch)
    points, colors = ck.depth_to_points(d_depth, depth_scale=1000.0, rgb=d_rgb,
                                        drop_invalid=False, device=device, **cam)
    assert (log.reads, log.writes, log.maps) == ([], [], []), log
    kept_points = ck.depth_to_points(d_depth, depth_scale=1000.0, device=device, **cam)
    # Dropping pixels needs the count of points on the host: a few bytes, never the data.
    assert log.host_bytes < depth.size, log
    monkeypatch.undo()
    assert isinstance(points, cl_array.Array) and isinstance(colors, cl_array.Array)
    assert isinstance(kept_points, cl_array.Array)
    assert points.dtype == np.float32 and colors.dtype == np.uint8
    check_points(points.get(), depth, cam, 1000.0, drop_invalid=False)
    np.testing.assert_array_equal(colors.get(), rgb.reshape(-1, 3))
    check_points(kept_points.get(), depth, cam, 1000.0)


# -- mistakes ------------------------------------------------------------------------------------

CAM = dict(fx=500.0, fy=500.0, cx=3.5, cy=2.5)


@pytest.mark.parametrize("shape", [(12,), (6, 8, 3), (2, 6, 8)], ids=["1-D", "HxWx3", "2xHxW"])
def test_wrong_depth_shape(device, shape):
    with raises_argument_error(r"depth"):
        ck.depth_to_points(np.zeros(shape, np.uint16), device=device, **CAM)


def test_wrong_depth_dtype(device):
    with raises_argument_error(r"uint16|float32"):
        ck.depth_to_points(np.zeros((6, 8), np.complex64), device=device, **CAM)


@pytest.mark.parametrize("shape", [(6, 9, 3), (7, 8, 3), (6, 8)], ids=["wider", "taller", "HxW"])
def test_wrong_rgb_shape(device, shape):
    with raises_argument_error(r"rgb"):
        ck.depth_to_points(np.ones((6, 8), np.uint16), rgb=np.zeros(shape, np.uint8),
                           device=device, **CAM)


def test_wrong_rgb_dtype(device):
    with raises_argument_error(r"(?s)rgb.*uint8|uint8.*rgb"):
        ck.depth_to_points(np.ones((6, 8), np.uint16), rgb=np.zeros((6, 8, 3), np.float32),
                           device=device, **CAM)
