"""clkit.kernels.mandelbrot against a numpy reference in the same precision, on every device."""

import numpy as np
import pytest

import clkit
import clkit.kernels as ck
from _reference import (assert_counts_equal, mandelbrot_reference, need_fp64,
                        raises_argument_error)

PRECISIONS = [np.float32, np.float64]

# name: (small size for the simulator, size for real devices, window and max_iter)
CASES = {
    "default": ((30, 20), (509, 257), {}),
    "asymmetric": ((23, 17), (641, 479),       # not symmetric in y: catches flipped rows
                   dict(xmin=-1.5, xmax=0.5, ymin=-0.2, ymax=1.1, max_iter=100)),
    "zoom": ((16, 11), (211, 149),             # seahorse valley, long orbits
             dict(xmin=-0.7485, xmax=-0.7425, ymin=0.098, ymax=0.102, max_iter=600)),
    "one-column": ((1, 37), (1, 1001), dict(ymin=-1.2, ymax=1.3)),
    "one-row": ((37, 1), (997, 1), dict(xmin=-2.1, xmax=0.6, ymin=0.1, ymax=0.5)),
    "one-pixel": ((1, 1), (1, 1), dict(xmin=-0.5, xmax=0.5, ymin=0.25, ymax=0.75)),
    "max-iter-1": ((13, 7), (301, 203), dict(max_iter=1)),
    "outside": ((9, 5), (129, 65), dict(xmin=2.5, xmax=4.0, ymin=-3.0, ymax=-2.1)),
}


def run(device, width, height, dtype, **window):
    result = ck.mandelbrot(width, height, dtype=dtype, device=device, **window)
    assert type(result) is np.ndarray
    assert result.dtype == np.int32, f"dtype {result.dtype}, expected int32"
    assert result.shape == (height, width), f"shape {result.shape}, expected {(height, width)}"
    return result


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("dtype", PRECISIONS, ids=lambda d: np.dtype(d).name)
def test_matches_reference(device, dtype, case):
    if dtype is np.float64:
        need_fp64(device)
    small, large, window = CASES[case]
    width, height = small if device.simulator else large
    result = run(device, width, height, dtype, **window)
    expected = mandelbrot_reference(width, height, dtype=dtype, **window)
    assert_counts_equal(result, expected, what=f"mandelbrot {case} {width}x{height}")
    assert result.min() >= 1 and result.max() <= window.get("max_iter", 256)


# c, and its exact count with max_iter = 50 (every value here is exact in binary).
KNOWN_POINTS = [
    ((0.0, 0.0), 50),     # the origin never leaves
    ((-1.0, 0.0), 50),    # period 2: -1, 0, -1, ...
    ((0.0, 1.0), 50),     # pre-periodic: i, -1+i, -i, -1+i, ...
    ((-2.0, 0.0), 50),    # |z| = 2 forever, never > 2
    ((0.25, 0.0), 50),    # the cusp, creeping up towards 1/2
    ((2.0, 0.0), 2),      # 2, 6: |z_1| = 2 is not > 2
    ((0.0, 2.0), 2),      # 2i, -4+2i
    ((1.0, 0.0), 3),      # 1, 2, 5
    ((0.5, 0.0), 5),      # 0.5, 0.75, 1.0625, 1.62890625, 3.15...
    ((-2.5, 0.0), 1),     # |c| > 2 gives 1
    ((1.5, -1.5), 1),
]


def test_into_a_device_array_runs_on_its_device(device):
    out = clkit.empty((17, 23), np.int32, device=device)
    assert ck.mandelbrot(23, 17, out=out) is out  # no device=: the one out lives on
    assert_counts_equal(out.get(), mandelbrot_reference(23, 17, dtype=np.float32),
                        what="mandelbrot into a device array")


def test_reference_known_points():
    for (cr, ci), count in KNOWN_POINTS:
        for dtype in PRECISIONS:
            got = mandelbrot_reference(1, 1, xmin=cr, xmax=cr + 1, ymin=ci, ymax=ci + 1,
                                       max_iter=50, dtype=dtype)
            assert got.tolist() == [[count]], (cr, ci, dtype)


@pytest.mark.parametrize("c,count", KNOWN_POINTS, ids=[f"{c[0]}{c[1]:+}i" for c, _ in KNOWN_POINTS])
@pytest.mark.parametrize("dtype", PRECISIONS, ids=lambda d: np.dtype(d).name)
def test_known_points(device, dtype, c, count):
    if dtype is np.float64:
        need_fp64(device)
    # A 1-pixel image sits at (xmin, ymin), as numpy.linspace(a, b, 1) == [a].
    result = run(device, 1, 1, dtype, xmin=c[0], xmax=c[0] + 1, ymin=c[1], ymax=c[1] + 1,
                 max_iter=50)
    assert result.tolist() == [[count]]


def test_orientation(device):
    # Row 0 has imaginary part ymin, the last row ymax; column 0 has real part xmin.
    rows = run(device, 1, 2, np.float32, xmin=0.0, xmax=1.0, ymin=0.0, ymax=2.0, max_iter=20)
    assert rows.tolist() == [[20], [2]]  # c = 0, then c = 2i
    cols = run(device, 3, 1, np.float32, xmin=-1.0, xmax=1.0, ymin=0.0, ymax=1.0, max_iter=20)
    assert cols.tolist() == [[20, 20, 3]]  # c = -1, 0, 1
    grid = run(device, 5, 4, np.float32, xmin=-2.0, xmax=2.0, ymin=-2.0, ymax=2.0, max_iter=20)
    np.testing.assert_array_equal(grid, mandelbrot_reference(5, 4, xmin=-2.0, xmax=2.0,
                                                             ymin=-2.0, ymax=2.0, max_iter=20))


def test_max_iter_caps_the_count(device):
    inside = dict(xmin=-0.2, xmax=0.1, ymin=-0.1, ymax=0.2)  # inside the main cardioid
    for max_iter in (1, 2, 7, 1000):
        result = run(device, 4, 3, np.float32, max_iter=max_iter, **inside)
        assert (result == max_iter).all(), max_iter


def test_default_precision_is_float32(device):
    window = dict(xmin=-0.7485, xmax=-0.7425, ymin=0.098, ymax=0.102, max_iter=300)
    default = ck.mandelbrot(12, 9, device=device, **window)
    np.testing.assert_array_equal(default, run(device, 12, 9, np.float32, **window))


def test_default_arguments():
    result = ck.mandelbrot(24, 16)  # default window, max_iter 256, default device
    assert result.dtype == np.int32 and result.shape == (16, 24)
    assert_counts_equal(result, mandelbrot_reference(24, 16))


# -- mistakes ------------------------------------------------------------------------------------

@pytest.mark.parametrize("width,height", [(-3, 4), (4, -1)])
def test_wrong_size(device, width, height):
    with raises_argument_error(r"width|height"):
        ck.mandelbrot(width, height, device=device)


def test_non_integer_size(device):
    with raises_argument_error(r"width"):
        ck.mandelbrot(2.5, 4, device=device)


def test_wrong_max_iter(device):
    with raises_argument_error(r"max_iter"):
        ck.mandelbrot(4, 4, max_iter=-1, device=device)


def test_wrong_precision(device):
    with raises_argument_error(r"float32|float64"):
        ck.mandelbrot(4, 4, dtype=np.int32, device=device)
