"""clkit.ndimage against scipy.ndimage itself, on every device.

Every dtype (bool, int8 to uint64, float16/32/64) in 1-D, 2-D and 3-D with odd shapes goes
through each filter, the border modes and origins cycling over the cases so that each mode and
origin meets every number of dimensions; a second set crosses every mode with every origin.
Integer and bool results must equal scipy's exactly (clkit sums in double in scipy's order),
float64 to 1e-12, float32 to float32 rounding. float16, which scipy refuses, is checked
against scipy on float32 data rounded to float16.
"""

import itertools

import numpy as np
import pyopencl.array as cl_array
import pytest
import scipy.ndimage as sn

import clkit
from clkit import ndimage as cn
from clkit._engine import passes

MODES = ["reflect", "mirror", "nearest", "wrap", "constant", "grid-mirror", "grid-wrap",
         "grid-constant"]
DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
          np.uint64, np.float16, np.float32, np.float64]
SHAPES = {1: (23,), 2: (9, 14), 3: (5, 6, 7)}
ORIGINS = [0, -1, 1]
CASES = [(np.dtype(d), nd, MODES[i % len(MODES)], ORIGINS[i // len(MODES) % 3])
         for i, (d, nd) in enumerate(itertools.product(DTYPES, SHAPES))]
CASE_IDS = [f"{d}-{nd}d-{m}-o{o}" for d, nd, m, o in CASES]


def data(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = max(info.min, -1000), min(info.max, 1000)
        return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)
    return (rng.random(shape) * 200 - 100).astype(dtype)


def reference(fn, x, *args, **kwargs):
    """scipy's result; for float16 (which scipy refuses) scipy's float32 result, rounded."""
    if x.dtype == np.float16:
        return getattr(sn, fn)(x.astype(np.float32), *args, **kwargs).astype(np.float16)
    return getattr(sn, fn)(x, *args, **kwargs)


def check(got, expected, what, mean=False):
    assert type(got) is np.ndarray, what
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype}, scipy {expected.dtype}"
    assert got.shape == expected.shape
    if expected.dtype.kind in "biu":
        if mean:  # scipy's running sum may round a whole mean down by 1 (documented)
            diff = np.abs(got.astype(np.float64) - expected.astype(np.float64))
            assert diff.max(initial=0) <= 1, what
        else:
            np.testing.assert_array_equal(got, expected, err_msg=what)
    elif expected.dtype == np.float64:
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12, err_msg=what)
    else:
        eps = float(np.finfo(expected.dtype).eps)
        scale = max(1.0, float(np.abs(expected.astype(np.float64)).max(initial=0)))
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64),
                                   rtol=0, atol=64 * eps * scale, err_msg=what)


def fp64_or_skip(device, dtype):
    if np.dtype(dtype) == np.float64 and not device.fp64:
        pytest.skip(f"{device} has no fp64")


LINEAR = [
    ("correlate1d", lambda o: (([0.5, -1.25, 2.0],), dict(axis=0, origin=o))),
    ("convolve1d", lambda o: (([1, 3, -2, 1],), dict(axis=-1, origin=o))),
    ("correlate", lambda o: ((None,), dict(origin=o))),
    ("convolve", lambda o: ((None,), dict(origin=o))),
    ("gaussian_filter1d", lambda o: ((1.5,), dict(axis=0, order=o % 3))),
    ("gaussian_filter", lambda o: ((1.0,), dict(order=o % 2, truncate=3.0))),
    ("uniform_filter1d", lambda o: ((4,), dict(axis=0, origin=o))),
    ("uniform_filter", lambda o: ((3,), dict(origin=o))),
    ("sobel", lambda o: ((), dict(axis=0))),
    ("prewitt", lambda o: ((), dict(axis=-1))),
    ("laplace", lambda o: ((), {})),
    ("gaussian_laplace", lambda o: ((1.0,), {})),
    ("gaussian_gradient_magnitude", lambda o: ((1.0,), {})),
]


def weights_for(ndim):
    w = np.arange(1, 3 ** ndim + 1, dtype=np.float64).reshape((3,) * ndim) / 7 - 1.5
    w.flat[1] = 0.0  # a tap of weight 0, which scipy leaves out
    return w


@pytest.mark.parametrize("fn,arguments", LINEAR, ids=[f for f, _ in LINEAR])
@pytest.mark.parametrize("dtype,ndim,mode,origin", CASES, ids=CASE_IDS)
def test_linear_filters_equal_scipy(device, fn, arguments, dtype, ndim, mode, origin):
    fp64_or_skip(device, dtype)
    x = data(dtype, SHAPES[ndim])
    args, kwargs = arguments(origin)
    if args[:1] == (None,):
        args = (weights_for(ndim),)
    kwargs.update(mode=mode, cval=2.5)
    if fn in ("sobel", "prewitt", "laplace"):
        kwargs.pop("cval")
        kwargs["cval"] = 2.0
    expected = reference(fn, x, *args, **kwargs)
    got = getattr(cn, fn)(x, *args, device=device, **kwargs)
    check(got, expected, f"{fn} {dtype} {ndim}-D {mode} {kwargs}", mean="uniform" in fn)


RANK = [
    ("minimum_filter1d", lambda o: ((3,), dict(axis=0, origin=o))),
    ("maximum_filter1d", lambda o: ((4,), dict(axis=-1, origin=o))),
    ("minimum_filter", lambda o: ((), dict(size=3, origin=o))),
    ("maximum_filter", lambda o: ((), dict(footprint="cross", origin=o))),
    ("median_filter", lambda o: ((), dict(size=3, origin=o))),
    ("rank_filter", lambda o: ((-2,), dict(footprint="cross", origin=o))),
    ("percentile_filter", lambda o: ((30,), dict(size=(2,), axes=(0,)))),
]


def cross(ndim):
    fp = np.zeros((3,) * ndim, bool)
    for d in range(ndim):
        index = [1] * ndim
        index[d] = slice(None)
        fp[tuple(index)] = True
    return fp


@pytest.mark.parametrize("fn,arguments", RANK, ids=[f for f, _ in RANK])
@pytest.mark.parametrize("dtype,ndim,mode,origin", CASES, ids=CASE_IDS)
def test_rank_filters_equal_scipy(device, fn, arguments, dtype, ndim, mode, origin):
    fp64_or_skip(device, dtype)
    x = data(dtype, SHAPES[ndim])
    args, kwargs = arguments(origin)
    if kwargs.get("footprint") == "cross":
        kwargs["footprint"] = cross(ndim)
    kwargs.update(mode=mode, cval=3.0)
    expected = reference(fn, x, *args, **kwargs)
    got = getattr(cn, fn)(x, *args, device=device, **kwargs)
    # exact: a rank filter selects one of the window's values
    np.testing.assert_array_equal(got, expected, err_msg=f"{fn} {dtype} {ndim}-D {kwargs}")
    assert got.dtype == expected.dtype


@pytest.mark.parametrize("mode,origin", list(itertools.product(MODES, [-2, -1, 0, 1, 2])))
def test_every_mode_with_every_origin(device, mode, origin):
    x = data(np.dtype(np.int32), (11, 12))
    w = weights_for(2)
    w = np.pad(w, 1)  # 5 x 5, so that origins of +-2 are valid
    check(cn.correlate(x, w, mode=mode, origin=origin, cval=-4, device=device),
          sn.correlate(x, w, mode=mode, origin=origin, cval=-4), f"correlate {mode} {origin}")
    check(cn.correlate1d(x, w[2], axis=0, mode=mode, origin=origin, device=device),
          sn.correlate1d(x, w[2], axis=0, mode=mode, origin=origin), f"correlate1d {mode}")
    np.testing.assert_array_equal(
        cn.median_filter(x, size=5, mode=mode, origin=origin, device=device),
        sn.median_filter(x, size=5, mode=mode, origin=origin))


@pytest.mark.parametrize("shape", [(1,), (2,), (1, 1), (3, 1), (1, 40), (2, 3, 1, 4)])
def test_small_and_odd_shapes(device, shape):
    """Windows larger than the array fold as scipy folds them, in any number of dimensions."""
    x = data(np.dtype(np.float64 if device.fp64 else np.float32), shape)
    for mode in ["reflect", "mirror", "wrap", "nearest", "constant"]:
        check(cn.uniform_filter(x, 5, mode=mode, device=device),
              sn.uniform_filter(x, 5, mode=mode), f"uniform_filter {shape} {mode}")
        check(cn.correlate(x, np.ones((5,) * x.ndim), mode=mode, device=device),
              sn.correlate(x, np.ones((5,) * x.ndim), mode=mode), f"correlate {shape} {mode}")
        if x.ndim > 1:  # scipy's 1-D median of a window larger than the signal reads memory
            np.testing.assert_array_equal(  # it never wrote (scipy 1.17)
                cn.median_filter(x, size=4, mode=mode, device=device),
                sn.median_filter(x, size=4, mode=mode))


def test_large_windows_take_the_generic_rank_selection(device):
    """Beyond the sorting network's size (128 taps) a rank filter selects by insertion."""
    x = data(np.dtype(np.int16), (20, 21))
    for size, rank in [(12, 70), (13, 0), (12, -1)]:
        np.testing.assert_array_equal(cn.rank_filter(x, rank, size=size, device=device),
                                      sn.rank_filter(x, rank, size=size))


@pytest.mark.parametrize("output", [np.float32, "float64", np.uint8, np.int16, "array"])
def test_output_dtype_or_array(device, output):
    x = data(np.dtype(np.int16), (10, 11))
    if output == "float64" and not device.fp64:
        pytest.skip(f"{device} has no fp64")
    target = np.zeros(x.shape, np.float32) if isinstance(output, str) and output == "array" \
        else output
    got = cn.gaussian_filter(x, 1.2, output=target, device=device)
    expected = sn.gaussian_filter(x, 1.2, output=np.zeros(x.shape, np.float32)
                                  if isinstance(output, str) and output == "array" else output)
    if isinstance(output, str) and output == "array":
        assert got is target
    check(got, expected, f"gaussian_filter output={output}")


def test_device_arrays_stay_on_the_device(device, monkeypatch):
    x = data(np.dtype(np.float32), (12, 13))
    d = clkit.to_device(x, device=device)
    copies = []
    real_get = cl_array.Array.get
    monkeypatch.setattr(cl_array.Array, "get", lambda self, *a, **k: copies.append(1) or
                        real_get(self, *a, **k))
    out = cn.sobel(d, axis=0)
    out2 = cn.median_filter(d, size=3)
    assert isinstance(out, cl_array.Array) and out.context == d.context
    assert isinstance(out2, cl_array.Array) and out2.context == d.context
    assert copies == []
    monkeypatch.undo()
    check(out.get(), sn.sobel(x, axis=0), "sobel on a device array")
    np.testing.assert_array_equal(out2.get(), sn.median_filter(x, size=3))
    target = clkit.empty(x.shape, np.float32, device=device)
    assert cn.uniform_filter(d, 3, output=target) is target
    check(target.get(), sn.uniform_filter(x, 3), "uniform_filter into a device array")
    with pytest.raises(TypeError, match="device array"):
        cn.uniform_filter(d, 3, output=np.zeros(x.shape, np.float32))


def test_scipy_exception_types_for_bad_arguments(device):
    x = np.zeros((5, 5), np.float32)
    with pytest.raises(RuntimeError, match="mode"):
        cn.correlate1d(x, [1, 2], mode="bogus", device=device)
    with pytest.raises(ValueError, match="origin"):
        cn.correlate1d(x, [1, 2, 3], origin=2, device=device)
    with pytest.raises(ValueError, match="origin"):
        cn.median_filter(x, size=3, origin=(2, 0), device=device)
    with pytest.raises(RuntimeError, match="size"):
        cn.uniform_filter1d(x, 0, device=device)
    with pytest.raises(RuntimeError, match="weights"):
        cn.correlate1d(x, [], device=device)
    with pytest.raises(RuntimeError, match="shape"):
        cn.sobel(x, output=np.zeros((4, 5), np.float32), device=device)
    with pytest.raises(RuntimeError, match="rank"):
        cn.rank_filter(x, 9, size=3, device=device)
    with pytest.raises(RuntimeError, match="percentile"):
        cn.percentile_filter(x, 101, size=3, device=device)
    with pytest.raises(ValueError, match="axes"):
        cn.gaussian_filter(x, 1, axes=(0, 0), device=device)
    with pytest.raises(np.exceptions.AxisError):
        cn.correlate1d(x, [1, 2], axis=2, device=device)
    with pytest.raises(RuntimeError, match="footprint"):
        cn.median_filter(x, device=device)
    with pytest.raises(ValueError, match="All-zero"):
        cn.minimum_filter(x, footprint=np.zeros((3, 3)), device=device)


def test_complex_is_refused_clearly(device):
    z = np.zeros((4, 4), np.complex64)
    with pytest.raises(NotImplementedError, match="complex"):
        cn.gaussian_filter(z, 1, device=device)
    with pytest.raises(NotImplementedError, match="complex"):
        cn.correlate(np.zeros((4, 4)), np.ones((3, 3), complex), device=device)
    with pytest.raises(TypeError, match="Complex"):
        cn.median_filter(z, 3, device=device)


def test_public_names_are_scipys():
    import inspect
    for name in cn.__all__:
        ours, theirs = inspect.signature(getattr(cn, name)), inspect.signature(getattr(sn, name))
        params = [p for p in ours.parameters.values() if p.name != "device"]
        assert [p.name for p in params] == [p.name for p in theirs.parameters.values()], name
        for p in params:
            q = theirs.parameters[p.name]
            assert (p.kind, p.default) == (q.kind, q.default), f"{name}({p.name})"
        assert ours.parameters["device"].kind is inspect.Parameter.KEYWORD_ONLY
        doc = getattr(cn, name).__doc__
        assert ">>>" in doc and "Differences from scipy.ndimage" in doc, name
    assert sorted(cn.__all__) == sorted(set(cn.__all__))


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32,
                                   np.uint32, np.int64, np.uint64])
def test_out_of_range_values_convert_as_scipys(device, dtype):
    """Values beyond the output type's range, negative values for unsigned types, NaN and
    infinities become what scipy's conversions make of them, on every device."""
    if not device.fp64:
        pytest.skip(f"{device} has no fp64")
    v = np.array([-1e20, -3e9, -5.7, -0.5, 0.5, 255.5, 256, 3e9, 5e9, 1.8e19, 2e19, 1e30,
                  np.nan, np.inf, -np.inf, 9.3e18])
    expected = sn.correlate1d(v, [1.0], output=dtype)
    got = cn.correlate1d(v, [1.0], output=dtype, device=device)
    np.testing.assert_array_equal(got.astype(np.float64), expected.astype(np.float64))


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_output_may_be_the_input_itself(device, dtype):
    """scipy allows output= to be the input: the result is as if computed aside."""
    x = data(np.dtype(dtype), (12, 13))
    expected = [sn.median_filter(x, 3), sn.gaussian_filter(x, 1.0), sn.sobel(x, 0)]
    got = []
    for f in (lambda a: cn.median_filter(a, 3, output=a, device=device),
              lambda a: cn.gaussian_filter(a, 1.0, output=a, device=device),
              lambda a: cn.sobel(a, 0, output=a, device=device)):
        a = x.copy()
        assert f(a) is a
        got.append(a)
    for g, e in zip(got, expected):
        check(g, e, "output=input")


def test_input_copied_for_alignment_outlives_the_passes(device):
    """An input that a driver cannot use in place (here 8 bytes off a 16-byte boundary) is
    copied to aligned memory for the kernels; that copy must live until they have read it,
    however soon the filter moves on to its next pass."""
    rng = np.random.default_rng(1)
    for i in range(20):
        raw = np.empty(9 * 14 * 8 + 24, np.uint8)
        start = 8 + (-raw.ctypes.data % 16)
        x = raw[start:start + 9 * 14 * 8].view(np.int64).reshape(9, 14)
        x[...] = rng.integers(-1000, 1000, x.shape, endpoint=True)
        assert x.ctypes.data % 16 == 8
        for fn, args in [("correlate1d", ([0.5, -1.25, 2.0],)), ("maximum_filter1d", (3,))]:
            kwargs = dict(axis=0, origin=1, mode="grid-wrap" if fn == "correlate1d" else "wrap")
            np.testing.assert_array_equal(
                getattr(cn, fn)(x, *args, device=device, **kwargs),
                getattr(sn, fn)(x, *args, **kwargs), err_msg=f"{fn} call {i}")


IMAGE_ENGINE = [
    ("gaussian_filter", (41, 37, 3), ((1.5, 2.0, 0),), {}),
    ("gaussian_filter", (41, 37, 4), ((2.0, 1.0, 0),), dict(order=(1, 0, 0))),
    ("uniform_filter", (41, 37), ((4, 5),), dict(origin=(1, -2))),
    ("uniform_filter", (41, 37, 3), ((3, 4, 1),), dict(origin=(-1, 1, 0))),
    ("correlate", (41, 37), ("w46",), dict(origin=(1, -1))),
    ("convolve", (41, 37), ("w46",), dict(origin=(-2, 2))),
    ("correlate", (41, 37, 3), ("w46",), dict(origin=(1, 0), axes=(0, 1))),
    ("laplace", (41, 37, 2), (), dict(axes=(0, 1))),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["reflect", "mirror", "nearest", "wrap", "constant"])
@pytest.mark.parametrize("fn,shape,args,kwargs", IMAGE_ENGINE,
                         ids=[f"{f}-{'x'.join(map(str, s))}-{k}" for f, s, _, k in IMAGE_ENGINE])
def test_float_images_run_on_the_image_engine(device, dtype, mode, fn, shape, args, kwargs):
    """Float images with channels last, even windows and origins run the convolution
    kernels of clkit.kernels (not the N-D passes), with scipy's results."""
    fp64_or_skip(device, dtype)
    x = data(np.dtype(dtype), shape, seed=3)
    if args[:1] == ("w46",):
        args = (np.random.default_rng(4).random((4, 6)) - 0.3,)
    kwargs = dict(kwargs, mode=mode, cval=0.0)
    expected = reference(fn, x, *args, **kwargs)
    with clkit.trace() as tr:
        got = getattr(cn, fn)(x, *args, device=device, **kwargs)
    kernels = {e["name"] for e in tr.events if e["kind"] == "kernel"}
    assert kernels and all(k.startswith("convolve_") or k == "to_acc" for k in kernels), kernels
    check(got, expected, f"{fn} {dtype} {shape} {kwargs}")


SPECIALISED = [
    ("correlate1d", ([0.5, -1.25, 2.0, 1.0, -0.75],), dict(axis=0, origin=1)),
    ("convolve1d", ([1.0, 0.0, -1.0],), dict(axis=1)),
    ("gaussian_filter", (1.5,), {}),
    ("uniform_filter1d", (4,), dict(axis=0, origin=-1)),
    ("uniform_filter1d", (5,), dict(axis=-1, origin=2)),
    ("correlate1d", ([0.5, -1.25, 2.0, 1.0],), dict(axis=-1, origin=-2)),
]
LARGE = [(263, 251), (19, 61, 59)]  # above the size from which the passes take specialised builds


@pytest.mark.parametrize("shape", LARGE, ids=["x".join(map(str, s)) for s in LARGE])
@pytest.mark.parametrize("fn,args,kwargs", SPECIALISED, ids=[f for f, _, _ in SPECIALISED])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float16, np.float32, np.float64])
def test_large_arrays_equal_scipy(device, dtype, fn, args, kwargs, shape):
    """Arrays large enough for the specialised builds of the 1-D passes (on CPUs, several
    lines per work-item along an axis other than the last, permutes of blocks along the
    last), every mode in turn."""
    fp64_or_skip(device, dtype)
    dtype = np.dtype(dtype)
    i = [np.uint8, np.int16, np.float16, np.float32, np.float64].index(dtype.type)
    mode = MODES[(i + 3 * LARGE.index(shape) + len(fn)) % len(MODES)]
    x = data(dtype, shape, seed=5)
    kwargs = dict(kwargs, mode=mode, cval=1.5)
    expected = reference(fn, x, *args, **kwargs)
    got = getattr(cn, fn)(x, *args, device=device, **kwargs)
    check(got, expected, f"{fn} {dtype} {shape} {kwargs}", mean="uniform" in fn)


@pytest.mark.parametrize("mode", MODES)
def test_large_arrays_fold_every_mode_at_their_edges(device, mode):
    """The work-items of the specialised 1-D passes whose windows cross an edge (on CPUs:
    rows folded whole along an axis other than the last, a span folded into private memory
    along the last, and rows of a width that leaves a ragged end), in every mode, with
    origins and a cval (which minima and maxima of uint8 compare in double), equal to scipy to
    the bit."""
    x = data(np.dtype(np.uint8), (70, 1031), seed=9)
    f = data(np.dtype(np.float32), (70, 1031), seed=9)
    for a, fn, args, kwargs in (
            (x, "gaussian_filter", (2.0,), {}),
            (x, "correlate1d", ([0.5, -1.25, 2.0, 1.0, 0.25],), dict(axis=0, origin=1)),
            (x, "correlate1d", ([0.75, 0.5, -0.25, 1.5],), dict(axis=1, origin=-2)),
            (x, "minimum_filter1d", (3,), dict(origin=1)),
            (x, "maximum_filter1d", (9,), dict(origin=-4)),
            (x, "minimum_filter1d", (6,), dict(output=np.float32)),
            (f, "maximum_filter1d", (5,), dict(origin=2)),
            (f, "minimum_filter1d", (31,), {})):
        kwargs = dict(kwargs, mode=mode, cval=7.5)
        check(getattr(cn, fn)(a, *args, device=device, **kwargs), reference(fn, a, *args, **kwargs),
              f"{fn} {args} {kwargs}")


MIN_MAX_SHAPES = {1: (97,), 2: (23, 45), 3: (7, 9, 50)}


@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.dtype(d) for d in DTYPES], ids=str)
def test_min_max_along_every_axis_short_and_long_windows(device, dtype, ndim):
    """Windows of 3 compare each window's values; from 16 or so (41 along the last axis) van
    Herk and Gil-Werman's blocks take over: both along every axis, in every mode, with
    origins, and a cval that the input's type cannot hold (compared in double, as scipy)."""
    fp64_or_skip(device, dtype)
    x = data(dtype, MIN_MAX_SHAPES[ndim], seed=ndim)
    for i, (size, axis) in enumerate(itertools.product([3, 17, 41], range(ndim))):
        mode = MODES[i % len(MODES)]
        origin = [0, -(size // 2), (size - 1) // 2][i % 3]
        cval = [3.0, -300.5, 1.0][i % 3] if "constant" in mode else 0.0
        for fn in ("minimum_filter1d", "maximum_filter1d"):
            kwargs = dict(axis=axis, mode=mode, origin=origin, cval=cval)
            expected = reference(fn, x, size, **kwargs)
            got = getattr(cn, fn)(x, size, device=device, **kwargs)
            assert got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected, err_msg=f"{fn} {size} {kwargs}")
    sizes = (17,) * ndim
    for fn, output in [("maximum_filter", None), ("minimum_filter", np.float32)]:
        kwargs = dict(mode="constant", cval=2.5, output=output)
        expected = reference(fn, x, sizes, **kwargs) if output is None or \
            dtype != np.float16 else getattr(sn, fn)(x.astype(np.float32), sizes, **kwargs)
        got = getattr(cn, fn)(x, sizes, device=device, **kwargs)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected, err_msg=f"{fn} {sizes} {kwargs}")


HISTOGRAM_SHAPES = {1: (5001,), 2: (17, 400), 3: (5, 6, 200)}  # rows of several segments


@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.dtype(np.uint8), np.dtype(np.int8), np.dtype(np.bool_)],
                         ids=str)
def test_8_bit_ranks_of_large_footprints(device, dtype, ndim):
    """Footprints of 129 elements and more (64 on CPUs) of 8-bit data select from a
    histogram of the window: boxes and an irregular footprint, every mode, origins."""
    x = data(dtype, HISTOGRAM_SHAPES[ndim], seed=ndim)
    rng = np.random.default_rng(ndim)
    box = {1: (131,), 2: (12, 11), 3: (6, 5, 5)}[ndim]
    irregular = rng.random({1: (140,), 2: (13, 14), 3: (6, 6, 6)}[ndim]) < 0.8
    calls = [("median_filter", (), dict(size=box)),
             ("rank_filter", (17,), dict(footprint=irregular)),
             ("percentile_filter", (85,), dict(size=box)),
             ("rank_filter", (-7,), dict(footprint=irregular))]
    modes = MODES
    if ndim == 1:  # scipy's 1-D path takes a footprint's size as a box, origins otherwise
        calls = [(fn, args, dict(size=box)) for fn, args, _ in calls]
        modes = ["reflect", "nearest", "mirror"]
    for i, (fn, args, kwargs) in enumerate(calls * 2):
        shape = kwargs.get("size", getattr(kwargs.get("footprint"), "shape", None))
        origin = 0 if ndim == 1 else [(s - 1) // 2 if i % 2 else -(s // 2) for s in shape]
        kwargs = dict(kwargs, mode=modes[i % len(modes)], origin=origin, cval=5.0)
        expected = reference(fn, x, *args, **kwargs)
        got = getattr(cn, fn)(x, *args, device=device, **kwargs)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected, err_msg=f"{fn} {args} {kwargs}")


ZERO_D = {
    "correlate1d": ([1.0, 2.0, 0.5],), "convolve1d": ([1.0, 2.0, 0.5],),
    "correlate": (np.array(2.5),), "convolve": (np.array(-1.5),),
    "gaussian_filter1d": (1.0,), "gaussian_filter": (1.0,), "uniform_filter1d": (3,),
    "uniform_filter": (3,), "sobel": (), "prewitt": (), "laplace": (),
    "gaussian_laplace": (1.0,), "gaussian_gradient_magnitude": (1.0,),
    "minimum_filter1d": (3,), "maximum_filter1d": (3,), "minimum_filter": (3,),
    "maximum_filter": (3,), "median_filter": (3,), "rank_filter": (0, 3),
    "percentile_filter": (50, 3),
}


@pytest.mark.parametrize("fn", sorted(ZERO_D))
def test_zero_dimensional_arrays_as_scipy(device, fn):
    """A 0-d array gives scipy's result (its element, filtered as one tap) or scipy's error
    (the 1-D filters have no axis to filter along)."""
    assert sorted(ZERO_D) == sorted(cn.__all__)
    args = ZERO_D[fn]
    for value, extra in [(np.array(7, np.uint8), {}), (np.array(-3, np.int16), {}),
                         (np.array(2.5, np.float32), dict(output=np.float64)),
                         (np.array(True), dict(mode="constant", cval=4.0)),
                         (np.array(9.75), dict(output=np.zeros((), np.int32)))]:
        if np.float64 in (value.dtype, extra.get("output")) and not device.fp64:
            continue
        try:
            expected = getattr(sn, fn)(value, *args, **dict(extra))
        except Exception as error:
            with pytest.raises(type(error)):
                getattr(cn, fn)(value, *args, device=device, **dict(extra))
            continue
        out = dict(extra)
        if isinstance(out.get("output"), np.ndarray):
            out["output"] = np.zeros((), np.int32)
        got = getattr(cn, fn)(value, *args, device=device, **out)
        if isinstance(out.get("output"), np.ndarray):
            assert got is out["output"]
        assert got.shape == () and got.dtype == expected.dtype, (fn, value, extra)
        np.testing.assert_array_equal(got, expected, err_msg=f"{fn} {value!r} {extra}")
    if fn in ("correlate", "median_filter"):
        d = clkit.to_device(np.array(5.5, np.float32), device=device)
        got = getattr(cn, fn)(d, *args)
        assert isinstance(got, cl_array.Array) and got.shape == ()
        np.testing.assert_array_equal(got.get(), getattr(sn, fn)(np.float32(5.5), *args))


@pytest.mark.parametrize("shape", LARGE, ids=["x".join(map(str, s)) for s in LARGE])
@pytest.mark.parametrize("dtype", [np.dtype(d) for d in DTYPES], ids=str)
def test_large_arrays_rank_filters_equal_scipy(device, dtype, shape):
    """Arrays large enough for the specialised sorting networks (on CPUs, on vectors of
    neighbouring elements, the elements near the edges one by one)."""
    fp64_or_skip(device, dtype)
    x = data(dtype, shape, seed=3)
    ndim = len(shape)
    for i, (fn, args, kwargs) in enumerate([
            ("median_filter", (), dict(size=3)),
            ("rank_filter", (2,), dict(footprint=cross(ndim), origin=1)),
            ("percentile_filter", (60,), dict(size=4, origin=-1)),
            ("median_filter", (), dict(size=(2, 7) + (1,) * (ndim - 2)))]):
        mode = MODES[(i + len(DTYPES) * ndim) % len(MODES)]
        kwargs = dict(kwargs, mode=mode, cval=-3.0)
        expected = reference(fn, x, *args, **kwargs)
        got = getattr(cn, fn)(x, *args, device=device, **kwargs)
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected, err_msg=f"{fn} {args} {kwargs}")


BOX_SHAPES = {2: (13, 21), 3: (4, 6, 11)}


@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("dtype", [np.dtype(d) for d in DTYPES], ids=str)
def test_box_ranks_from_sorted_columns(device, dtype, ndim, monkeypatch):
    """The rank kernel of box footprints that sorts each column of the window once for
    neighbouring elements (GPUs take it; here every device does, in specialised builds
    whatever the array's size), with 2, 4 and 8 elements per work-item, every mode."""
    fp64_or_skip(device, dtype)
    if device.short_platform == "intel" and dtype.kind in "iu" and dtype.itemsize >= 4:
        pytest.skip("Intel's OpenCL CPU compiler crashes building this kernel for 4- and "
                    "8-byte integers (CPUs take rank_nd_vector instead)")
    monkeypatch.setattr(passes, "COLUMNS_ON_CPUS", True)
    monkeypatch.setattr(passes, "SPECIALISE_FROM", 1)
    x = data(dtype, BOX_SHAPES[ndim], seed=ndim)
    rest = (1,) * (ndim - 2)
    calls = [("median_filter", (), dict(size=3)),
             ("percentile_filter", (25,), dict(size=3)),
             ("median_filter", (), dict(size=rest + (5, 5))),
             ("rank_filter", (3,), dict(size=rest + (5, 5))),
             ("median_filter", (), dict(size=rest + (2, 7))),
             ("rank_filter", (5,), dict(size=(3, 4) + (2,) * (ndim - 2),
                                        origin=(1, -2) + (0,) * (ndim - 2)))]
    for i, (fn, args, kwargs) in enumerate(calls):
        monkeypatch.setattr(passes, "COLUMN_ELEMENTS", (2, 4, 8)[i % 3])
        kwargs = dict(kwargs, mode=MODES[(i + ndim) % len(MODES)], cval=-3.0)
        expected = reference(fn, x, *args, **kwargs)
        with clkit.trace() as trace:
            got = getattr(cn, fn)(x, *args, device=device, **kwargs)
        assert "rank_nd_columns" in {e["name"] for e in trace.events}
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected, err_msg=f"{fn} {args} {kwargs}")


@pytest.mark.parametrize("column,columns,rank", [(3, 3, 4), (3, 3, 2), (5, 5, 12), (5, 5, 3),
                                                 (2, 7, 6), (4, 3, 10), (9, 3, 13)])
def test_column_network_selects_the_rank(column, columns, rank):
    """The host's network for sorted columns, run in numpy on random data with ties and
    sorted columns, gives np.sort's value of that rank."""
    net, selected = passes.column_network(column, columns, rank)
    rng = np.random.default_rng(column * columns + rank)
    v = np.sort(rng.integers(0, 6, (columns, column, 2000)), axis=1).reshape(-1, 2000)
    expected = np.sort(v, axis=0)[rank]
    for pair in net.replace("CE(", "").split(")")[:-1]:
        a, b = map(int, pair.split(","))
        v[a], v[b] = np.minimum(v[a], v[b]), np.maximum(v[a], v[b])
    np.testing.assert_array_equal(v[selected], expected)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0, 3.0, 5.0])
def test_float32_smoothing_weights_keep_their_sum(sigma):
    """float32 weights that smooth: each one of its two float32 neighbours, symmetric weights
    still symmetric, and their sum no further from the float64 sum than that of the weights
    rounded to the nearest (from sigma 2 on, under a third of it)."""
    from clkit._engine.stencil import weights_as
    r = int(4.0 * sigma + 0.5)
    w = np.exp(-0.5 * (np.arange(-r, r + 1) / sigma) ** 2)
    w /= w.sum()
    got, nearest = weights_as(w, np.float32), w.astype(np.float32)
    assert got.dtype == np.float32
    assert np.all(np.abs(got - w) < np.spacing(nearest))
    np.testing.assert_array_equal(got, got[::-1])
    off, nearest_off = abs(got.sum(dtype=np.float64) - w.sum()), abs(nearest.sum(dtype=np.float64) - w.sum())
    assert off <= nearest_off
    if sigma >= 2:
        assert off < nearest_off / 3
    # (2-D masks too, their equal weights equal)
    got2 = weights_as(np.outer(w, w), np.float32)
    np.testing.assert_array_equal(got2, got2.T)
    assert abs(got2.sum(dtype=np.float64) - 1) <= abs(np.outer(w, w).astype(np.float32).sum(
        dtype=np.float64) - 1)


def test_float32_weights_of_both_signs_round_to_nearest():
    from clkit._engine.stencil import weights_as
    w = np.array([-0.1, -0.2, 0.0, 0.2, 0.1]) / 3
    np.testing.assert_array_equal(weights_as(w, np.float32), w.astype(np.float32))
    np.testing.assert_array_equal(weights_as(w, np.float64), w)


@pytest.mark.parametrize("sigma", [2.0, 3.0])
def test_float32_gaussians_are_not_biased(device, rng, sigma):
    """float32 Gaussians err both ways: their mean error against float64 is under a sixth of
    an ulp (weights rounded each to the nearest raised it to a third)."""
    shape = (40, 60) if device.simulator else (300, 400)
    x = (rng.random(shape) * 1000).astype(np.float32)
    exact = sn.gaussian_filter(x.astype(np.float64), sigma)
    ulps = (cn.gaussian_filter(x, sigma, device=device).astype(np.float64) - exact) / \
        np.spacing(exact.astype(np.float32)).astype(np.float64)
    assert np.abs(ulps).max() < 8
    assert abs(ulps.mean()) < 1 / 6


@pytest.mark.parametrize("order", [1, 2, 3])
@pytest.mark.parametrize("sigma", [0.7, 1.5, 3.2])
def test_gaussian_derivatives_take_scipys_weights(device, sigma, order):
    """gaussian_filter1d's derivative weights are scipy's to the bit: its response to a unit
    impulse (its weights) equals scipy's; float64 results lie within one ulp of scipy's
    largest value along every axis, integer results equal scipy's."""
    fp64_or_skip(device, np.float64)
    from clkit._engine.stencil import gaussian_kernel1d
    r = int(4.0 * sigma + 0.5)
    impulse = np.zeros(2 * r + 3)
    impulse[r + 1] = 1.0
    response = sn.gaussian_filter1d(impulse, sigma, order=order, mode="constant")
    np.testing.assert_array_equal(gaussian_kernel1d(sigma, order, r), response[1:-1])
    np.testing.assert_array_equal(
        cn.gaussian_filter1d(impulse, sigma, order=order, mode="constant", device=device),
        response)
    for i, (shape, axis) in enumerate([((23,), 0), ((9, 14), 0), ((9, 14), 1),
                                       ((5, 6, 7), 1)]):
        mode = MODES[(i + order) % len(MODES)]
        for dtype in (np.float64, np.int32):
            x = data(np.dtype(dtype), shape, seed=order)
            want = sn.gaussian_filter1d(x, sigma, axis=axis, order=order, mode=mode, cval=2.0)
            got = cn.gaussian_filter1d(x, sigma, axis=axis, order=order, mode=mode, cval=2.0,
                                       device=device)
            what = f"{dtype.__name__} {shape} axis {axis} {mode}"
            assert got.dtype == want.dtype, what
            if dtype == np.int32:
                np.testing.assert_array_equal(got, want, err_msg=what)
            else:
                ulp = np.spacing(np.abs(want).max())
                np.testing.assert_allclose(got, want, rtol=0, atol=ulp, err_msg=what)
