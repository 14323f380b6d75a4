"""clkit.kernels: the public names, hello and vector_add, on every device."""

import numpy as np
import pyopencl.array as cl_array
import pytest

import clkit
import clkit.kernels as ck
from _reference import (need_fp64, raises_argument_error, record_transfers, reporting,
                        skip_on_simulator)

LIBRARY = ("hello", "vector_add", "grayscale", "convolve", "gaussian_blur", "mandelbrot",
           "depth_to_points")

INT_DTYPES = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
DTYPES = (np.float32, np.float64) + INT_DTYPES


def operands(rng, shape, dtype):
    """Two arrays over the whole range of an integer dtype (so sums wrap), or floats."""
    dtype = np.dtype(dtype)
    if dtype.kind in "ui":
        info = np.iinfo(dtype)
        return tuple(rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
                     for _ in range(2))
    return tuple((rng.standard_normal(shape) * 1000.0).astype(dtype) for _ in range(2))


def numpy_sum(a, b):
    with np.errstate(over="ignore", invalid="ignore"):
        return a + b


def on_device(array, device):
    return array.queue.device.int_ptr == device.cl_device.int_ptr


def test_library_names_are_public():
    from clkit.kernels import (convolve, depth_to_points, gaussian_blur, grayscale,  # noqa: F401
                               hello, mandelbrot, vector_add)
    assert set(LIBRARY) <= set(ck.__all__)
    assert clkit.kernels is ck
    for name in LIBRARY:
        assert callable(getattr(ck, name)), name
        assert getattr(ck, name).__doc__, f"clkit.kernels.{name} has no docstring"


# -- hello ---------------------------------------------------------------------------------------

def test_hello(device):
    greeting = ck.hello(device=device)
    assert type(greeting) is str
    assert greeting == "Hello, World!"


def test_hello_takes_a_device_spec(device):
    assert ck.hello(device=device.id) == "Hello, World!"


def test_hello_on_the_default_device():
    assert ck.hello() == "Hello, World!"


# -- vector_add: values and dtypes ---------------------------------------------------------------

@pytest.mark.parametrize("shape", [(1,), (1009,), (3, 5, 7)], ids=["1", "1009", "3x5x7"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_vector_add_matches_numpy(device, rng, dtype, shape):
    if dtype is np.float64:
        need_fp64(device)
    a, b = operands(rng, shape, dtype)
    a_copy, b_copy = a.copy(), b.copy()
    result = ck.vector_add(a, b, device=device)
    assert type(result) is np.ndarray
    assert result.dtype == np.dtype(dtype) and result.shape == shape
    # Addition is exact (integers wrap as numpy's do) or correctly rounded in IEEE float.
    np.testing.assert_array_equal(result, numpy_sum(a, b))
    np.testing.assert_array_equal(a, a_copy)
    np.testing.assert_array_equal(b, b_copy)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8], ids=lambda d: np.dtype(d).name)
def test_vector_add_large_odd_size(device, rng, dtype):
    skip_on_simulator(device, "a million elements")
    a, b = operands(rng, (1_000_003,), dtype)
    np.testing.assert_array_equal(ck.vector_add(a, b, device=device), numpy_sum(a, b))


def test_vector_add_wraps_at_the_limits(device):
    for dtype in INT_DTYPES:
        info = np.iinfo(dtype)
        a = np.array([info.max, info.min, info.max, 0, info.min], dtype)
        b = np.array([1, -1 if info.min else info.max, info.max, info.max, info.min], dtype)
        result = ck.vector_add(a, b, device=device)
        np.testing.assert_array_equal(result, numpy_sum(a, b), err_msg=np.dtype(dtype).name)


def test_vector_add_float_specials(device):
    a = np.array([np.inf, -np.inf, np.nan, 1e38, -0.0, 3.0e38], np.float32)
    b = np.array([1.0, np.inf, 1.0, 1e38, -0.0, 3.0e38], np.float32)
    result = ck.vector_add(a, b, device=device)
    expected = numpy_sum(a, b)  # inf, nan, nan, 2e38, -0.0, inf
    np.testing.assert_array_equal(result, expected)
    assert np.signbit(result[4])


def test_vector_add_empty(device):
    a = np.zeros(0, np.float32)
    result = ck.vector_add(a, a.copy(), device=device)
    assert result.shape == (0,) and result.dtype == np.float32


def test_vector_add_non_contiguous(device, rng):
    big_a, big_b = operands(rng, (3 * 257,), np.int32)
    a, b = big_a[::3], big_b[1::3]
    np.testing.assert_array_equal(ck.vector_add(a, b, device=device), a + b)
    fa, fb = operands(rng, (11, 7), np.float32)
    fa, fb = np.asfortranarray(fa), fb.T.copy().T  # Fortran order, and a transposed view
    result = ck.vector_add(fa, fb, device=device)
    assert result.shape == (11, 7)
    np.testing.assert_array_equal(result, fa + fb)


# -- vector_add: out= and device arrays ----------------------------------------------------------

def test_vector_add_out_numpy(device, rng):
    a, b = operands(rng, (4, 257), np.float32)
    out = np.full((4, 257), np.nan, np.float32)
    result = ck.vector_add(a, b, out=out, device=device)
    assert result is out
    np.testing.assert_array_equal(out, a + b)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.int64],
                         ids=lambda d: np.dtype(d).name)
def test_vector_add_device_arrays_stay_on_the_device(device, rng, monkeypatch, dtype):
    a, b = operands(rng, (1031,), dtype)
    da, db = clkit.to_device(a, device=device), clkit.to_device(b, device=device)
    log = record_transfers(monkeypatch)
    result = ck.vector_add(da, db, device=device)
    assert isinstance(result, cl_array.Array)
    assert (log.reads, log.writes, log.maps) == ([], [], []), log
    monkeypatch.undo()
    assert result.shape == (1031,) and result.dtype == np.dtype(dtype)
    assert on_device(result, device)
    np.testing.assert_array_equal(result.get(), numpy_sum(a, b))
    np.testing.assert_array_equal(da.get(), a)


def test_vector_add_out_device_array(device, rng, monkeypatch):
    a, b = operands(rng, (7, 37), np.float32)
    da, db = clkit.to_device(a, device=device), clkit.to_device(b, device=device)
    out = clkit.empty((7, 37), np.float32, device=device)
    log = record_transfers(monkeypatch)
    result = ck.vector_add(da, db, out=out, device=device)
    assert result is out
    assert (log.reads, log.writes, log.maps) == ([], [], []), log
    monkeypatch.undo()
    np.testing.assert_array_equal(out.get(), a + b)


@pytest.mark.parametrize("kind", ["numpy", "device"])
def test_vector_add_into_its_input_and_into_a_shifted_view(device, rng, kind):
    a, b = operands(rng, (4099,), np.float32)
    expected_same, expected_shifted = a + b, a[1:] + b[:-1]
    to = (lambda x: x.copy()) if kind == "numpy" else (lambda x: clkit.to_device(x, device=device))
    back = (lambda x: x) if kind == "numpy" else (lambda x: x.get())
    da, db = to(a), to(b)
    assert ck.vector_add(da, db, out=da, device=device) is da  # in place: a += b
    np.testing.assert_array_equal(back(da), expected_same)
    da = to(a)
    ck.vector_add(da[1:], db[:-1], out=da[:-1], device=device)  # out one element behind
    np.testing.assert_array_equal(back(da)[:-1], expected_shifted)


def test_vector_add_of_big_endian_arrays(device, rng):
    a, b = operands(rng, (1001,), np.int32)
    result = ck.vector_add(a.astype(">i4"), b.astype(">i4"), device=device)
    assert result.dtype == np.int32  # native order
    np.testing.assert_array_equal(result, numpy_sum(a, b))


def test_vector_add_into_a_device_array_made_without_a_queue(device, rng):
    # pyopencl.array.Array(context, ...) has no queue, so no order to keep
    import pyopencl.array as cl_array
    a, b = operands(rng, (301,), np.float32)
    rt = clkit.runtime(device)
    out = cl_array.Array(rt.context, (301,), np.float32)
    result = ck.vector_add(clkit.to_device(a, device=device), clkit.to_device(b, device=device),
                           out=out)
    assert result is out
    np.testing.assert_array_equal(out.with_queue(rt.queue).get(), a + b)


def test_vector_add_device_arrays_pick_the_device(device, rng, monkeypatch):
    a, b = operands(rng, (101,), np.int16)
    da, db = clkit.to_device(a, device=device), clkit.to_device(b, device=device)
    log = record_transfers(monkeypatch)
    result = ck.vector_add(da, db)  # no device=: the arrays' own device, with no copies
    assert (log.reads, log.writes, log.maps) == ([], [], []), log
    monkeypatch.undo()
    assert on_device(result, device)
    np.testing.assert_array_equal(result.get(), numpy_sum(a, b))


# -- vector_add: mistakes ------------------------------------------------------------------------

def test_vector_add_shape_mismatch(device):
    with raises_argument_error(r"shape"):
        ck.vector_add(np.zeros(3, np.float32), np.zeros(4, np.float32), device=device)


def test_vector_add_dtype_mismatch(device):
    with raises_argument_error(r"(?s)float32.*int32|int32.*float32"):
        ck.vector_add(np.zeros(3, np.float32), np.zeros(3, np.int32), device=device)


@pytest.mark.parametrize("dtype", [np.complex64, np.bool_], ids=lambda d: np.dtype(d).name)
def test_vector_add_unsupported_dtype(device, dtype):
    name = np.dtype(dtype).name
    with raises_argument_error(name):
        ck.vector_add(np.zeros(3, dtype), np.zeros(3, dtype), device=device)


def test_float64_on_a_device_without_fp64(device):
    # The device is made to report no cl_khr_fp64 (every device CI has does have it).
    lacks = r"needs double precision, which .* lacks \(no cl_khr_fp64\); use float32 or another"
    with reporting(device, fp64=False):
        with raises_argument_error(rf"vector_add: float64 {lacks}"):
            ck.vector_add(np.zeros(3), np.zeros(3), device=device)
        with raises_argument_error(rf"mandelbrot: dtype float64 {lacks}"):
            ck.mandelbrot(4, 3, dtype=np.float64, device=device)
        with raises_argument_error(rf"convolve: a float64 image {lacks}"):
            ck.convolve(np.zeros((4, 5)), np.ones((3, 3)), device=device)
        with raises_argument_error(rf"gaussian_blur: a float64 image {lacks}"):
            ck.gaussian_blur(np.zeros((4, 5)), 1.0, device=device)
    assert device.fp64 == ("cl_khr_fp64" in device.cl_device.extensions)


def test_vector_add_bad_out(device):
    a = np.zeros(5, np.float32)
    with raises_argument_error(r"out"):
        ck.vector_add(a, a, out=np.zeros(6, np.float32), device=device)
    with raises_argument_error(r"out"):
        ck.vector_add(a, a, out=np.zeros(5, np.int32), device=device)
