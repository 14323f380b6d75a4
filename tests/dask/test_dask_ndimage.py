"""clkit.dask.ndimage against clkit.ndimage on the whole array (bit for bit) and scipy.ndimage:
every filter, every mode, origins, 2-D and 3-D, chunks of one pixel, below the halo, uneven."""

import dask.array as da
import numpy as np
import pytest
import scipy.ndimage as sp

ndimage = pytest.importorskip("clkit.ndimage")
from clkit.dask import ndimage as dn  # noqa: E402

MODES = ["reflect", "mirror", "nearest", "wrap", "constant"]
W = np.array([[1.0, -2.0, 0.5], [0.25, 3.0, -1.0]])  # 2x3: an even side
# (name, positional arguments after the input, keyword arguments)
CASES = [
    ("correlate", (W,), {"origin": (0, -1)}),
    ("convolve", (W,), {"origin": (-1, 1)}),
    ("correlate1d", ([1.0, 2.0, -1.0, 0.5],), {"axis": 0, "origin": 1}),
    ("convolve1d", ([1.0, 2.0, -1.0, 0.5],), {"axis": 1, "origin": -2}),
    ("gaussian_filter", (1.3,), {}),
    ("gaussian_filter1d", (0.8,), {"axis": 0, "order": 1}),
    ("uniform_filter", ((4, 3),), {"origin": (1, 0)}),
    ("uniform_filter1d", (4,), {"axis": 1, "origin": -1}),
    ("sobel", (), {"axis": 0}),
    ("prewitt", (), {"axis": 1}),
    ("laplace", (), {}),
    ("gaussian_laplace", (1.0,), {}),
    ("gaussian_gradient_magnitude", (0.9,), {}),
    ("minimum_filter", (), {"size": (2, 4), "origin": (0, 1)}),
    ("maximum_filter", (), {"footprint": np.array([[1, 0, 1], [0, 1, 0]], bool)}),
    ("minimum_filter1d", (3,), {"axis": 0, "origin": 1}),
    ("maximum_filter1d", (4,), {"axis": 1}),
    ("median_filter", (), {"size": 3}),
    ("rank_filter", (2,), {"size": (3, 2)}),
    ("percentile_filter", (70,), {"size": (2, 3), "origin": (-1, 0)}),
]
# Every mode on chunks below the halo; chunks of one pixel and uneven ones in one mode each
# per filter (a different mode for each filter), to keep the suite short.
CHUNKS = {"small": (2, 3), "pixel": 1, "uneven": ((4, 1, 6), (2, 7, 1))}
RUNS = ([(case, mode, "small") for case in CASES for mode in MODES] +
        [(case, MODES[i % 5], "pixel") for i, case in enumerate(CASES)] +
        [(case, MODES[(i + 2) % 5], "uneven") for i, case in enumerate(CASES)])
IDS = [f"{case[0]}-{mode}-{chunks}" for case, mode, chunks in RUNS]


def _call(module, name, x, args, kwargs, mode):
    return getattr(module, name)(x, *args, mode=mode, cval=1.5, **kwargs)


@pytest.mark.parametrize("case, mode, chunks", RUNS, ids=IDS)
def test_every_filter_equals_the_whole_array(rng, case, mode, chunks):
    name, args, kwargs = case
    x = (rng.random((11, 10) if chunks != "pixel" else (6, 5)) * 50).astype(np.float32)
    y = _call(dn, name, da.from_array(x, chunks=CHUNKS[chunks]), args, kwargs, mode)
    got = y.compute(scheduler="threads")
    want = _call(ndimage, name, x, args, kwargs, mode)
    assert got.dtype == y.dtype == y._meta.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, _call(sp, name, x, args, kwargs, mode), rtol=1e-4,
                               atol=1e-3)


@pytest.mark.parametrize("mode", ["wrap", "mirror"])
def test_uint8_keeps_its_dtype(rng, mode):
    x = rng.integers(0, 256, (9, 12)).astype(np.uint8)
    y = dn.gaussian_filter(da.from_array(x, chunks=(2, 5)), 1.5, mode=mode)
    assert y.dtype == np.uint8
    np.testing.assert_array_equal(y.compute(), ndimage.gaussian_filter(x, 1.5, mode=mode))


@pytest.mark.parametrize("mode", MODES)
def test_a_volume_filtered_over_two_axes(rng, mode):
    """A 3-D stack whose filters run over two of its axes (``axes``), chunked on all three."""
    x = rng.random((5, 9, 8), dtype=np.float32)
    d = da.from_array(x, chunks=(2, 3, 3))
    y = dn.uniform_filter(dn.gaussian_filter(d, 1.0, mode=mode, axes=(1, 2)), 3, mode="wrap",
                          axes=(0, 2))
    assert len(y.dask.layers) == 2  # one pass
    want = ndimage.uniform_filter(ndimage.gaussian_filter(x, 1.0, mode=mode, axes=(1, 2)), 3,
                                  mode="wrap", axes=(0, 2))
    np.testing.assert_array_equal(y.compute(scheduler="threads"), want)
    np.testing.assert_allclose(y.compute(), sp.uniform_filter(
        sp.gaussian_filter(x, 1.0, mode=mode, axes=(1, 2)), 3, mode="wrap", axes=(0, 2)),
        rtol=1e-5, atol=1e-6)


def test_a_chain_with_per_axis_modes(rng):
    x = rng.random((12, 9), dtype=np.float32)
    d = da.from_array(x, chunks=(5, 2))
    y = dn.median_filter(dn.sobel(dn.gaussian_filter(d, 1.0, mode=["wrap", "mirror"]), axis=0,
                                  mode="constant"), size=3, mode="nearest")
    want = ndimage.median_filter(ndimage.sobel(ndimage.gaussian_filter(
        x, 1.0, mode=["wrap", "mirror"]), axis=0, mode="constant"), size=3, mode="nearest")
    np.testing.assert_array_equal(y.compute(scheduler="threads"), want)


def test_output_must_be_a_dtype():
    x = da.zeros((4, 4), np.float32, chunks=2)
    assert dn.uniform_filter(x, 3, output=np.float64).dtype == np.float64
    with pytest.raises(TypeError, match="output must be a dtype"):
        dn.uniform_filter(x, 3, output=np.empty((4, 4)))


def test_a_volume_chain_with_an_addition_in_one_pass(rng):
    """clkit.dask.vector_add between clkit.dask.ndimage filters of a 3-D stack stays in their
    pass, the added volume read in chunks of its own."""
    import clkit.dask as cd
    x, b = rng.random((5, 9, 8), dtype=np.float32), rng.random((5, 9, 8), dtype=np.float32)
    y = dn.uniform_filter(cd.vector_add(dn.gaussian_filter(da.from_array(x, chunks=(2, 3, 3)),
                                                           1.0, mode="wrap"),
                                        da.from_array(b, chunks=(5, 2, 8))), 3, mode="mirror")
    assert len(y.dask.layers) == 3  # two inputs, one pass
    want = ndimage.uniform_filter(ndimage.gaussian_filter(x, 1.0, mode="wrap") + b, 3,
                                  mode="mirror")
    np.testing.assert_array_equal(y.compute(scheduler="threads"), want)
    np.testing.assert_allclose(y.compute(), sp.uniform_filter(
        sp.gaussian_filter(x, 1.0, mode="wrap") + b, 3, mode="mirror"), rtol=1e-5, atol=1e-6)
