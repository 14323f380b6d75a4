"""The comparison helpers of tests/helpers/_reference.py, which hundreds of kernel tests rely on.

A helper that lets a wrong value through makes every test that uses it blind, so each
way a result can be wrong is checked to fail here: a wrong infinity, a number for an
infinity or a NaN, an infinity or NaN for a number, and a finite error past the bound.
"""

import itertools
import os

import cv2
import numpy as np
import pytest

import clkit
from _reference import (assert_close_scaled, assert_counts_equal, gray_uint8_reference,
                        mandelbrot_reference, reporting)

INF, NAN = np.inf, np.nan


@pytest.mark.parametrize("got,expected,scale", [
    (INF, INF, 1.0), (-INF, -INF, 1.0), (INF, INF, INF), (NAN, NAN, 1.0), (NAN, NAN, INF),
    (1.0, 1.0, 0.0), (1.0 + 1e-7, 1.0, 1.0), (0.0, -0.0, 0.0), (5.0, 5.0, INF),
], ids=str)
def test_close_scaled_accepts(got, expected, scale):
    assert_close_scaled(np.float32(got), expected, scale)


@pytest.mark.parametrize("got,expected,scale", [
    (-INF, INF, 1.0), (INF, -INF, 1.0),
    (-INF, INF, INF),           # an infinite scale must not make any value pass
    (0.0, INF, INF), (3.0e38, INF, INF), (0.0, -INF, INF),
    (NAN, INF, INF), (INF, NAN, 1.0), (0.0, NAN, INF), (NAN, 1.0, 1.0),
    (INF, 1.0, 1.0), (INF, 1.0, INF), (NAN, 1.0, INF),
    (1.0 + 1e-5, 1.0, 1.0), (1.0, 0.0, 0.0),
], ids=str)
def test_close_scaled_refuses(got, expected, scale):
    with pytest.raises(AssertionError, match="1 of 1 elements differ"):
        assert_close_scaled(np.float32(got), expected, scale)


def test_close_scaled_bound_is_ulps_times_scale():
    eps = float(np.finfo(np.float32).eps)
    expected = np.zeros(4)
    scale = np.array([1.0, 10.0, 100.0, 1000.0])
    assert_close_scaled(8 * eps * scale * 0.99, expected, scale, ulps=8)
    with pytest.raises(AssertionError, match="1 of 4"):
        assert_close_scaled(8 * eps * scale * np.array([1, 1, 1.01, 1]), expected, scale, ulps=8)
    with pytest.raises(AssertionError, match="shape"):
        assert_close_scaled(np.zeros(3), expected, 1.0)


def test_close_scaled_points_at_the_infinity_that_is_wrong():
    expected = np.array([[1.0, INF], [NAN, -INF]])
    got = expected.copy()
    got[1, 1] = INF
    with pytest.raises(AssertionError, match=r"1 of 4 .* at \(1, 1\): got inf, expected -inf"):
        assert_close_scaled(got, expected, np.abs(expected))


def test_counts_equal_allows_no_pixel():
    a = np.arange(40000, dtype=np.int32).reshape(200, 200)
    assert_counts_equal(a, a.copy())
    b = a.copy()
    b[-1, -1] += 1
    with pytest.raises(AssertionError, match=r"1 of 40000 differ.*\(199, 199\)"):
        assert_counts_equal(b, a)
    with pytest.raises(AssertionError, match="dtype"):
        assert_counts_equal(a.astype(np.int64), a)


def test_gray_uint8_reference_is_opencv_for_every_colour():
    # bt601 by the fixed-point formula equals cv2.cvtColor on all 2^24 colours, so the
    # formula the other weights are checked against is OpenCV's scheme.
    colours = np.arange(2**24, dtype=np.uint32)
    rgb = np.stack([(colours >> s) & 0xFF for s in (16, 8, 0)], axis=-1).astype(np.uint8)
    rgb = rgb.reshape(4096, 4096, 3)
    np.testing.assert_array_equal(gray_uint8_reference(rgb, (0.299, 0.587, 0.114)),
                                  cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY))


def test_gray_uint8_reference_other_weights():
    levels = np.array([0, 1, 127, 128, 255], np.uint8)
    rgb = np.array(list(itertools.product(levels, repeat=3)), np.uint8).reshape(5, 25, 3)
    for weights in ("bt709", (0.25, 0.5, 0.25), (0.5, -0.25, 1.5), (1.5, 1.5, 1.5)):
        got = gray_uint8_reference(rgb, weights)
        w = np.asarray({"bt709": (0.2126, 0.7152, 0.0722)}.get(weights, weights))
        exact = np.clip(rgb.astype(np.float64) @ w, 0, 255)
        # rounding to the nearest level, plus three coefficients each off by under 1.5 / 2^15
        assert np.abs(got - exact).max() <= 0.5 + 3 * 1.5 * 255 / 2**15, weights


def test_mandelbrot_reference_by_hand():
    # Three points whose orbits are worked out exactly: -1 (period 2), 1 (1, 2, 5), 0.5.
    counts = mandelbrot_reference(5, 1, xmin=-1.0, xmax=1.0, ymin=0.0, ymax=0.0, max_iter=10)
    assert counts.tolist() == [[10, 10, 10, 5, 3]]  # c = -1, -0.5, 0, 0.5, 1


def test_reporting_leaves_the_background_builds_setting_as_it_found_it(device, monkeypatch):
    # A fixture that sets CLKIT_BACKGROUND_BUILDS after the block began and undoes it after the
    # block ended (fixture teardown order) must put back what the test found, not "0".
    monkeypatch.delenv("CLKIT_BACKGROUND_BUILDS", raising=False)
    before = clkit.background_builds()
    block = reporting(device)
    block.__enter__()
    inner = pytest.MonkeyPatch()
    try:
        inner.setenv("CLKIT_BACKGROUND_BUILDS", "0")
        assert clkit.background_builds() is False
    finally:
        block.__exit__(None, None, None)
        inner.undo()
    assert "CLKIT_BACKGROUND_BUILDS" not in os.environ
    assert clkit.background_builds() is before
    with reporting(device):
        assert clkit.background_builds() is False
    assert clkit.background_builds() is before
