"""clkit.dask's filters against the unchunked call (bit for bit) and scipy.ndimage, on the
threaded scheduler: every mode, chunks of one pixel, chunks below the halo, uneven chunks,
one chunk, masks larger than the image, chains with mixed modes."""

import pickle

import cloudpickle
import dask.array as da
import numpy as np
import pyopencl.array as cl_array
import pytest
import scipy.ndimage as ndi

import clkit.dask as cd
import clkit.kernels as ck

MODES = ["reflect", "mirror", "nearest", "wrap", "constant"]
CHUNKINGS = {"one": (13, 11), "pixel": (1, 1), "below-halo": (2, 3),
             "uneven": ((5, 1, 7), (4, 4, 3))}


def compute(y):
    return y.compute(scheduler="threads")


def image(rng, dtype, shape=(13, 11)):
    if dtype == np.uint8:
        return rng.integers(0, 256, shape).astype(np.uint8)
    return (rng.random(shape) * 10).astype(dtype)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=["uint8", "float32"])
@pytest.mark.parametrize("mask_shape", [(5, 4), (2, 7)], ids=["5x4", "2x7"])
@pytest.mark.parametrize("chunks", CHUNKINGS.values(), ids=CHUNKINGS.keys())
@pytest.mark.parametrize("mode", MODES)
def test_convolve_equals_the_unchunked_call(rng, mode, chunks, mask_shape, dtype):
    x = image(rng, dtype)
    mask = rng.random(mask_shape) - 0.3
    y = cd.convolve(da.from_array(x, chunks=chunks), mask, mode=mode, cval=2.5)
    got = compute(y)
    want = ck.convolve(x, mask, mode=mode, cval=2.5)
    assert y.dtype == y._meta.dtype == got.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, ndi.convolve(x.astype(np.float64), mask, mode=mode,
                                                 cval=2.5), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("chunks", [(1, 1), (2, 3), (5, 4)], ids=["pixel", "small", "one"])
@pytest.mark.parametrize("mode", MODES)
def test_a_halo_larger_than_the_image(rng, mode, chunks):
    x = image(rng, np.float32, (5, 4))
    mask = rng.random((11, 9))
    got = compute(cd.convolve(da.from_array(x, chunks=chunks), mask, mode=mode, cval=-1.0))
    np.testing.assert_array_equal(got, ck.convolve(x, mask, mode=mode, cval=-1.0))
    np.testing.assert_allclose(got, ndi.convolve(x.astype(np.float64), mask, mode=mode,
                                                 cval=-1.0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=["uint8", "float32"])
@pytest.mark.parametrize("chunks", [(1, 1), (3, 2), ((6, 7), (1, 10))],
                         ids=["pixel", "below-halo", "uneven"])
@pytest.mark.parametrize("mode", MODES)
def test_gaussian_blur(rng, mode, chunks, dtype):
    x = image(rng, dtype)
    y = cd.gaussian_blur(da.from_array(x, chunks=chunks), (1.2, 0.6), mode=mode, cval=3.0)
    got = compute(y)
    assert y.dtype == got.dtype == np.float32
    np.testing.assert_array_equal(got, ck.gaussian_blur(x, (1.2, 0.6), mode=mode, cval=3.0))
    np.testing.assert_allclose(got, ndi.gaussian_filter(x.astype(np.float64), (1.2, 0.6),
                                                        mode=mode, cval=3.0),
                               rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("modes", [("reflect", "wrap", "constant"), ("wrap", "mirror", "wrap"),
                                   ("constant", "nearest", "mirror")], ids="-".join)
@pytest.mark.parametrize("chunks", [(1, 1), (3, 4), (13, 11)], ids=["pixel", "small", "one"])
def test_a_chain_runs_in_one_pass_and_equals_the_filters_in_turn(rng, chunks, modes):
    """Each filter's mode extends the previous filter's output at the array's edges."""
    x = image(rng, np.uint8)
    m1, m2 = rng.random((3, 4)), rng.random((2, 2))
    y = cd.convolve(cd.gaussian_blur(cd.convolve(da.from_array(x, chunks=chunks), m1,
                                                 mode=modes[0], cval=1.0),
                                     1.0, mode=modes[1]), m2, mode=modes[2], cval=-2.0)
    assert len(y.dask.layers) == 2  # the input and one pass
    want = ck.convolve(ck.gaussian_blur(ck.convolve(x, m1, mode=modes[0], cval=1.0), 1.0,
                                        mode=modes[1]), m2, mode=modes[2], cval=-2.0)
    np.testing.assert_array_equal(compute(y), want)
    ref = ndi.convolve(ndi.gaussian_filter(ndi.convolve(x.astype(np.float64), m1,
                                                        mode=modes[0], cval=1.0),
                                           1.0, mode=modes[1]), m2, mode=modes[2], cval=-2.0)
    np.testing.assert_allclose(compute(y), ref, rtol=1e-5, atol=1e-4)


def test_a_chain_keeps_its_intermediates_on_the_device(rng):
    """Every filter of a chain takes a device array: the window goes to the device once and
    each filter's output stays there for the next."""
    seen = []

    def spy(function):
        def run(image, *args, **kwargs):
            seen.append(type(image))
            return function(image, *args, **kwargs)
        return run
    x = image(rng, np.float32, (24, 20))
    first = cd.apply(spy(ck.convolve), da.from_array(x, chunks=(12, 10)), np.ones((3, 3)),
                     halo=1, mode="wrap", dtype=np.float32)
    y = cd.apply(spy(ck.gaussian_blur), first, 1.5, halo=6, mode="reflect", dtype=np.float32)
    got = y.compute(scheduler="single-threaded")
    assert len(seen) == 8 and all(t is cl_array.Array for t in seen), seen
    np.testing.assert_array_equal(got, ck.gaussian_blur(ck.convolve(x, np.ones((3, 3)),
                                                                    mode="wrap"), 1.5))


def test_another_dask_operation_ends_the_chain(rng):
    x = da.from_array(image(rng, np.float32), chunks=5)
    y = cd.gaussian_blur(cd.gaussian_blur(x, 1.0) * 2, 1.0)
    assert len(y.dask.layers) == 4
    np.testing.assert_array_equal(compute(y), ck.gaussian_blur(
        ck.gaussian_blur(x.compute(), 1.0) * 2, 1.0))


@pytest.mark.parametrize("chunks", [(3, 4, 1), (13, 2, 3), (1, 1, 2)],
                         ids=["channel-chunks", "columns", "pixel"])
@pytest.mark.parametrize("mode", ["reflect", "wrap", "constant"])
def test_an_image_stack_hxwxc(rng, mode, chunks):
    """HxWxC, each channel filtered separately, the channel axis chunked too.  clkit's
    multi-channel kernels round by the image's width, so to float32 rounding here."""
    x = image(rng, np.uint8, (13, 11, 3))
    mask = rng.random((3, 4))
    y = cd.convolve(da.from_array(x, chunks=chunks), mask, mode=mode, cval=4.0)
    got = compute(y)
    assert got.shape == x.shape and got.dtype == y.dtype == np.float32
    np.testing.assert_allclose(got, ck.convolve(x, mask, mode=mode, cval=4.0), rtol=2e-6)
    for c in range(3):
        np.testing.assert_allclose(got[..., c], ndi.convolve(x[..., c].astype(float), mask,
                                                             mode=mode, cval=4.0), rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32], ids=["uint8", "float32"])
def test_grayscale_reads_the_channels_whole(rng, dtype):
    x = image(rng, dtype, (13, 11, 4))
    y = cd.grayscale(da.from_array(x, chunks=(4, 3, 1)), "bt709")
    assert y.shape == (13, 11) and y.dtype == dtype and y.chunks == ((4, 4, 4, 1), (3, 3, 3, 2))
    got = compute(y)
    np.testing.assert_array_equal(got, ck.grayscale(x, "bt709"))
    if dtype == np.float32:
        np.testing.assert_allclose(got, x[..., :3] @ np.array([0.2126, 0.7152, 0.0722]),
                                   rtol=1e-5)


def test_grayscale_then_blur_in_one_pass(rng):
    x = image(rng, np.uint8, (13, 11, 3))
    y = cd.gaussian_blur(cd.grayscale(da.from_array(x, chunks=(2, 5, 3))), 1.5, mode="wrap")
    assert len(y.dask.layers) <= 3 and y.dtype == np.float32  # input, rechunk, one pass
    np.testing.assert_array_equal(compute(y), ck.gaussian_blur(ck.grayscale(x), 1.5,
                                                               mode="wrap"))


def test_vector_add(rng):
    a = rng.integers(-100, 100, (37, 5)).astype(np.int16)
    b = rng.integers(-100, 100, (37, 5)).astype(np.int16)
    y = cd.vector_add(da.from_array(a, chunks=(7, 2)), da.from_array(b, chunks=(10, 5)))
    assert y.dtype == np.int16
    np.testing.assert_array_equal(compute(y), a + b)


@pytest.mark.parametrize("modes", [("wrap", "reflect", "wrap"), ("mirror", "wrap", "constant"),
                                   ("nearest", "nearest", "reflect")], ids="-".join)
@pytest.mark.parametrize("chunks", [((1, 1), (2, 3)), ((3, 4), (13, 11)),
                                    (((5, 1, 7), (4, 4, 3)), (2, 2))],
                         ids=["pixel", "small-and-one", "uneven"])
def test_vector_add_joins_a_chain(rng, chunks, modes):
    """Additions between filters stay in the filters' pass, with the other arrays' windows
    read from their own chunks (wrapped and gathered where the filters' windows are)."""
    x, b, c = (image(rng, np.float32) for _ in range(3))
    m1, m2 = rng.random((3, 4)), rng.random((5, 2))
    xs, bs, cs = (da.from_array(v, chunks=ch) for v, ch in zip((x, b, c), chunks + chunks))
    y = cd.gaussian_blur(cd.vector_add(cd.convolve(cd.vector_add(
        cd.convolve(xs, m1, mode=modes[0], cval=1.5), bs), m2, mode=modes[1]), cs),
        1.2, mode=modes[2])
    assert len(y.dask.layers) == 4  # three inputs, one pass
    got = compute(y)
    # numpy's float32 additions between the unchunked filters: the same bits
    want = ck.gaussian_blur(ck.convolve(ck.convolve(x, m1, mode=modes[0], cval=1.5) + b, m2,
                                        mode=modes[1]) + c, 1.2, mode=modes[2])
    np.testing.assert_array_equal(got, want)
    ref = ndi.gaussian_filter(ndi.convolve(ndi.convolve(x.astype(float), m1, mode=modes[0],
                                                        cval=1.5) + b, m2, mode=modes[1]) + c,
                              1.2, mode=modes[2])
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)


def test_vector_add_joins_the_chain_of_either_operand(rng):
    x, b = image(rng, np.float32, (12, 10)), image(rng, np.float32, (12, 10))
    blurred = cd.gaussian_blur(da.from_array(x, chunks=5), 1.0, mode="wrap")
    plain = da.from_array(b, chunks=(4, 10))
    for y in (cd.vector_add(blurred, plain), cd.vector_add(plain, blurred)):
        assert len(y.dask.layers) == 3 and y.chunks == blurred.chunks
        np.testing.assert_array_equal(compute(y), ck.gaussian_blur(x, 1.0, mode="wrap") + b)


def test_grayscale_vector_add_and_a_blur_in_one_pass(rng):
    rgb, other = image(rng, np.float32, (13, 11, 3)), image(rng, np.float32, (13, 11))
    y = cd.gaussian_blur(cd.vector_add(cd.grayscale(da.from_array(rgb, chunks=(4, 3, 3))),
                                       da.from_array(other, chunks=(13, 2))), 2.0, mode="mirror")
    got = compute(y)
    np.testing.assert_array_equal(got, ck.gaussian_blur(ck.grayscale(rgb) + other, 2.0,
                                                        mode="mirror"))
    gray = rgb @ np.array([0.299, 0.587, 0.114])
    np.testing.assert_allclose(got, ndi.gaussian_filter(gray + other, 2.0, mode="mirror"),
                               rtol=1e-5, atol=1e-4)


def test_vector_add_of_a_chain_checks_the_chain_s_dtype(rng):
    y = cd.gaussian_blur(da.from_array(image(rng, np.uint8), chunks=5), 1.0)  # float32
    with pytest.raises(TypeError, match="a has dtype float32 and b uint8"):
        cd.vector_add(y, da.from_array(image(rng, np.uint8), chunks=5))


@pytest.mark.parametrize("mode", MODES)
def test_long_rows_widened_for_the_kernels_stay_exact(rng, mode):
    """Windows of long rows take in more of the neighbouring columns (after the block, or
    before it at the right edge) up to a length the kernels run fastest on; the blocks stay
    equal to the unchunked chain, at every seam and edge."""
    x = image(rng, np.float32, (7, 1300))
    b = image(rng, np.float32, (7, 1300))
    y = cd.convolve(cd.vector_add(cd.gaussian_blur(da.from_array(x, chunks=(4, 650)), 1.5,
                                                   mode=mode), da.from_array(b, chunks=500)),
                    np.ones((3, 5)) / 15, mode="wrap")
    want = ck.convolve(ck.gaussian_blur(x, 1.5, mode=mode) + b, np.ones((3, 5)) / 15,
                       mode="wrap")
    np.testing.assert_array_equal(compute(y), want)
    graph = dict(y.__dask_graph__())
    widths = {len(task[1].axes[1].source) for key, task in graph.items() if key[0] == y.name}
    # 650 and the halos (6 + 2 on each side), widened to whole runs of 32
    assert all(w >= 666 and w % 32 == 0 for w in widths), widths


def test_a_filter_that_fails_leaves_later_computations_right(rng):
    """A task that fails after its window went to the device drops its thread's window
    buffers; the blocks computed next on the same threads are right."""
    x = image(rng, np.float32)

    def fails(image, mode=None, device=None):
        raise RuntimeError("the filter failed")
    y = cd.gaussian_blur(cd.apply(fails, da.from_array(x, chunks=(4, 3)), halo=1,
                                  mode="wrap"), 1.0)
    with pytest.raises(RuntimeError, match="the filter failed"):
        compute(y)
    z = cd.convolve(da.from_array(x, chunks=(4, 3)), np.ones((3, 3)), mode="wrap")
    np.testing.assert_array_equal(compute(z), ck.convolve(x, np.ones((3, 3)), mode="wrap"))


@pytest.mark.parametrize("origin", [(1, -1), (-1, 0), (1, 1)])
def test_apply_honours_a_mask_moved_off_centre(rng, origin):
    """A 3x3 mask moved by ``origin`` (scipy's sense) as a zero-padded 7x7 mask for clkit,
    with the moved mask's own halo, which is lopsided: too small a side shows at seams."""
    x = image(rng, np.float32)
    small = rng.random((3, 3))
    big = np.zeros((7, 7))
    # scipy.ndimage.convolve(origin=o) reads x[i + 1 + o - k] for tap k of the mask
    big[2 - origin[0]:5 - origin[0], 2 - origin[1]:5 - origin[1]] = small
    halo = [(1 - o, 1 + o) for o in origin]
    y = cd.apply(ck.convolve, da.from_array(x, chunks=(2, 3)), big, halo=halo, mode="mirror",
                 dtype=np.float32)
    np.testing.assert_allclose(compute(y), ndi.convolve(x.astype(float), small, mode="mirror",
                                                        origin=origin), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(compute(y), ck.convolve(x, big, mode="mirror"))


def test_no_filter_runs_to_build_the_graph(rng, monkeypatch):
    calls = []
    monkeypatch.setattr(ck, "convolve", lambda *a, **k: calls.append(a))
    y = cd.convolve(da.from_array(image(rng, np.uint8), chunks=4), np.ones((3, 3)))
    assert y.dtype == np.float32 and y._meta.dtype == np.float32 and y._meta.ndim == 2
    assert calls == []


def test_the_graph_pickles_without_device_objects(rng):
    x = da.from_array(image(rng, np.float32), chunks=4)
    y = cd.gaussian_blur(cd.convolve(x, np.ones((2, 3)), mode="wrap"), 1.0, device="cpu")
    graph = dict(y.__dask_graph__())
    for payload in (pickle.dumps(graph), cloudpickle.dumps(graph)):
        assert b"pyopencl" not in payload
        again = pickle.loads(payload)
        assert again.keys() == graph.keys()


def test_every_device(device, rng):
    """A chain with wrap (so windows are gathered on the device) on each visible device."""
    x = image(rng, np.float32, (9, 8))
    y = cd.gaussian_blur(cd.convolve(da.from_array(x, chunks=(4, 3)), np.ones((2, 3)),
                                     mode="wrap", device=device), 1.0, mode="reflect",
                         device=device)
    got = compute(y)
    want = ck.gaussian_blur(ck.convolve(x, np.ones((2, 3)), mode="wrap", device=device), 1.0,
                            device=device)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("call, message", [
    (lambda x: cd.convolve(x, np.ones((3, 3)), mode="edge"), "mode must be one of"),
    (lambda x: cd.convolve(x, np.ones(3)), "mask must be a non-empty 2-D"),
    (lambda x: cd.gaussian_blur(x, -1.0), "sigma must be at least 0"),
    (lambda x: cd.gaussian_blur(x, 1.0, device="all"), "one device spec"),
    (lambda x: cd.grayscale(x), "HxWx3 (RGB) or HxWx4"),
    (lambda x: cd.apply(ck.convolve, x, np.ones((3, 3)), halo=1, mode=None),
     "needs its border mode"),
    (lambda x: cd.convolve([[1, 2]], np.ones((3, 3))), "must be a dask array"),
])
def test_bad_input_says_what_to_change(call, message):
    x = da.zeros((6, 6), np.float32, chunks=3)
    with pytest.raises((TypeError, ValueError), match=message.replace("(", r"\(")
                       .replace(")", r"\)")):
        call(x)


@pytest.mark.parametrize("mode", ["reflect", "nearest", "constant"])
def test_dask_image_gives_the_same_blur(rng, mode):
    """dask-image, the peer: scipy.ndimage per chunk through dask's own overlap."""
    ndfilters = pytest.importorskip("dask_image.ndfilters")
    x = da.from_array(image(rng, np.float32, (40, 36)), chunks=(9, 10))
    ours = compute(cd.gaussian_blur(x, 2.0, mode=mode, cval=1.0))
    peer = compute(ndfilters.gaussian_filter(x, 2.0, mode=mode, cval=1.0))
    np.testing.assert_allclose(ours, peer, rtol=1e-5, atol=1e-5)
