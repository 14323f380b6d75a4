"""Inputs larger than a device: tiles streamed through the device give the untiled result.

The small tests shrink a device's reported limits so that even small inputs
take the tiled path (many tiles, halos across tile edges, two queues); the
slow ones use arrays larger than PoCL's max allocation for real.
"""


import numpy as np
import pytest
import scipy.ndimage

import clkit
from clkit import kernels as ck
from clkit._engine import bands as _bands
from _reference import reporting


def limits(device, max_alloc, global_mem=None):
    """Make ``device`` report smaller memory limits for a while."""
    return reporting(device, max_alloc=max_alloc, global_mem=global_mem or max_alloc * 8)


@pytest.fixture
def small_device(device):
    return device


@pytest.mark.parametrize("mode", ["reflect", "wrap", "constant"])
def test_convolve_in_tiles(small_device, mode, rng):
    image = rng.random((211, 97), dtype=np.float32)
    mask = rng.random((7, 6))
    whole = ck.convolve(image, mask, mode=mode, cval=-1.0, device=small_device)
    calls = []
    real_run = _bands.run
    with limits(small_device, 16 * 1024):  # a few rows per tile
        tiled = ck.convolve(image, mask, mode=mode, cval=-1.0, device=small_device)
        _bands.run = lambda plan, band, rows: calls.append(rows(small_device)) or \
            real_run(plan, band, rows)
        try:
            ck.convolve(image, mask, mode=mode, device=small_device)
        finally:
            _bands.run = real_run
    assert calls and calls[0] < image.shape[0] // 4  # many tiles
    np.testing.assert_array_equal(tiled, whole)


def test_separable_and_gaussian_in_tiles(small_device, rng):
    image = rng.integers(0, 256, (150, 61, 3), dtype=np.uint8)
    whole = ck.gaussian_blur(image, 2.5, device=small_device)
    with limits(small_device, 64 * 1024):
        tiled = ck.gaussian_blur(image, 2.5, device=small_device)
    np.testing.assert_array_equal(tiled, whole)


def test_row_functions_in_tiles(small_device, rng):
    rgb = rng.integers(0, 256, (333, 45, 3), dtype=np.uint8)
    a = rng.random(100_003).astype(np.float32)
    depth = rng.integers(0, 3, (123, 77)).astype(np.uint16)
    whole = (ck.grayscale(rgb, device=small_device), ck.vector_add(a, a, device=small_device),
             ck.mandelbrot(211, 163, max_iter=50, device=small_device),
             ck.depth_to_points(depth, 2.0, 3.0, 30.0, 60.0, device=small_device))
    with limits(small_device, 8 * 1024):
        tiled = (ck.grayscale(rgb, device=small_device),
                 ck.vector_add(a, a, device=small_device),
                 ck.mandelbrot(211, 163, max_iter=50, device=small_device),
                 ck.depth_to_points(depth, 2.0, 3.0, 30.0, 60.0, device=small_device))
    for got, want in zip(tiled, whole):
        np.testing.assert_array_equal(got, want)


def test_not_even_one_row_fits(small_device, rng):
    image = rng.random((10, 4096), dtype=np.float32)
    with limits(small_device, 1024):
        with pytest.raises(clkit.OutOfDeviceMemoryError, match="even one row"):
            ck.convolve(image, np.ones((3, 3)), device=small_device)


def test_tiles_cover_the_rows_once():
    for n, most in ((10, 3), (7, 7), (1, 5), (1000, 33)):
        pieces = _bands.tiles(0, n, most)
        assert pieces[0][0] == 0 and pieces[-1][1] == n
        assert all(a < b <= a + most for a, b in pieces)
        assert all(p[1] == q[0] for p, q in zip(pieces, pieces[1:]))


def cpu_device():
    found = clkit.devices("cpu")
    if not found:
        pytest.skip("needs a CPU device")
    return found[0]


@pytest.mark.slow
def test_vector_add_beyond_max_alloc():
    device = cpu_device()
    n = 1 << 29  # 2 GiB per float32 array
    rng = np.random.default_rng(1)
    a = rng.random(n, dtype=np.float32)
    b = rng.random(n, dtype=np.float32)
    # PoCL's limits on Debian (1 GiB per allocation), also where the driver allows more
    with limits(device, min(device.max_alloc, 1 << 30), min(device.global_mem, 4 << 30)):
        got = ck.vector_add(a, b, device=device)
    expected = np.add(a, b)
    assert np.array_equal(got, expected)


@pytest.mark.slow
def test_convolve_image_larger_than_a_gibibyte():
    device = cpu_device()
    rng = np.random.default_rng(2)
    image = rng.random((17000, 16500), dtype=np.float32)  # 1.04 GiB
    assert image.nbytes > 1 << 30
    mask = rng.random((3, 5))
    with limits(device, min(device.max_alloc, 1 << 30), min(device.global_mem, 4 << 30)):
        got = ck.convolve(image, mask, mode="mirror", device=device)
    expected = scipy.ndimage.convolve(image, mask, mode="mirror", output=np.float32)
    np.testing.assert_allclose(got, expected, rtol=2e-6, atol=2e-6)
