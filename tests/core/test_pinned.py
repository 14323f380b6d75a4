"""Pinned host arrays: what they hold, how they are freed, and the library's results with them."""

import gc

import numpy as np
import pytest

import clkit
from clkit._memory import pinned as _pinned
from clkit import kernels as ck

from _reference import (assert_close_scaled, convolve_reference, filter_ulps, gray_reference,
                        raises_argument_error, record_transfers)


def test_pinned_empty_is_a_writable_contiguous_array(device):
    a = clkit.pinned_empty((3, 5), np.float32, device=device)
    assert isinstance(a, np.ndarray) and a.shape == (3, 5) and a.dtype == np.float32
    assert a.flags.c_contiguous and a.flags.writeable
    a[...] = np.arange(15).reshape(3, 5)
    np.testing.assert_array_equal(a.sum(axis=0), [15, 18, 21, 24, 27])
    assert clkit.pinned_empty(7, np.uint8, device=device).shape == (7,)
    assert clkit.pinned_empty((0, 4), np.int16, device=device).shape == (0, 4)


def test_views_are_pinned_for_their_device_only(device):
    a = clkit.pinned_empty((8, 6), np.uint8, device=device)
    for view in (a, a[2:5], a[:, ::-2], a.reshape(-1), a.view(np.int16), a.T):
        assert clkit.is_pinned(view) and clkit.is_pinned(view, device)
    assert not clkit.is_pinned(a.copy())
    assert not clkit.is_pinned(np.zeros(4))
    assert not clkit.is_pinned([1, 2])
    others = [d for d in clkit.devices() if d != device]
    if others:
        assert not clkit.is_pinned(a, others[0])


def test_pinned_like_copies_values_and_dtype(device, rng):
    for src in (rng.integers(0, 255, (4, 5, 3), dtype=np.uint8), rng.random(9),
                np.arange(6, dtype=np.int64).reshape(2, 3)[:, ::-1]):
        p = clkit.pinned_like(src, device=device)
        assert p.dtype == src.dtype and p.shape == src.shape and clkit.is_pinned(p, device)
        np.testing.assert_array_equal(p, src)
    on_device = clkit.to_device(np.arange(5, dtype=np.float32), device=device)
    np.testing.assert_array_equal(clkit.pinned_like(on_device, device=device), np.arange(5))


def test_memory_is_released_with_the_last_view(device):
    gc.collect()
    before = len(_pinned._regions)
    a = clkit.pinned_empty((64, 64), np.float32, device=device)
    view = a[10:20]
    del a
    gc.collect()
    assert len(_pinned._regions) == before + 1  # the view still holds the memory
    view[...] = 2.0
    assert float(view.sum()) == 2.0 * view.size
    del view
    gc.collect()
    assert len(_pinned._regions) == before


def test_bad_arguments_say_what_to_pass(device):
    with raises_argument_error("whole numbers"):
        clkit.pinned_empty((3, -1), np.uint8, device=device)
    with raises_argument_error("whole numbers"):
        clkit.pinned_empty((2.5,), np.uint8, device=device)
    with raises_argument_error("Python objects"):
        clkit.pinned_empty(3, object, device=device)
    for shape in (2.0, None):
        with raises_argument_error("whole numbers"):
            clkit.pinned_empty(shape, np.uint8, device=device)
    for shape in (1 << 50, (1 << 40, 1 << 40)):  # (the second's product overflows int64)
        with pytest.raises(clkit.OutOfDeviceMemoryError, match="pinned_empty: .* more than one "
                                                               "allocation may hold"):
            clkit.pinned_empty(shape, np.uint8, device=device)


def test_library_calls_take_pinned_inputs_and_out(device, rng):
    rgb = clkit.pinned_like(rng.integers(0, 256, (37, 53, 3), dtype=np.uint8), device=device)
    gray = clkit.pinned_empty((37, 53), np.uint8, device=device)
    assert ck.grayscale(rgb, out=gray, device=device) is gray
    expected = gray_reference(np.asarray(rgb, np.float64), "bt601")
    assert np.abs(gray - expected).max() <= 1

    image = clkit.pinned_like(rng.random((41, 29), dtype=np.float32), device=device)
    mask = rng.standard_normal((5, 5)).astype(np.float32)
    out = clkit.pinned_empty(image.shape, np.float32, device=device)
    assert ck.convolve(image, mask, out=out, device=device) is out
    reference, scale = convolve_reference(np.asarray(image), mask)
    assert_close_scaled(out, reference, scale, ulps=filter_ulps(25), what="convolve")


def test_pinned_arrays_skip_the_staging_on_a_gpu(discrete, rng, monkeypatch):
    device, staged = discrete
    a = clkit.pinned_like(rng.random(1 << 19, dtype=np.float32), device=device)  # 2 MiB
    b = clkit.pinned_like(rng.random(1 << 19, dtype=np.float32), device=device)
    out = clkit.pinned_empty(a.shape, np.float32, device=device)
    log = record_transfers(monkeypatch)
    assert ck.vector_add(a, b, out=out, device=device) is out
    np.testing.assert_array_equal(out, np.asarray(a) + np.asarray(b))
    assert staged == {"upload": 0, "download": 0}
    assert sorted(log.writes) == [a.nbytes, b.nbytes] and log.reads == [out.nbytes]

    image = clkit.pinned_like(rng.random((601, 700), dtype=np.float32), device=device)
    mask = rng.standard_normal((3, 3)).astype(np.float32)
    got = ck.convolve(image, mask, device=device)  # a pinned input; the result, pinned too
    assert staged == {"upload": 0, "download": 0} and clkit.is_pinned(got, device)
    reference, scale = convolve_reference(np.asarray(image), mask)
    assert_close_scaled(got, reference, scale, ulps=filter_ulps(9), what="convolve")


def test_pinned_rows_of_a_band_go_straight_to_the_device(discrete, rng):
    """Bands over several queues upload and download slices of a pinned array."""
    device, staged = discrete
    image = clkit.pinned_like(rng.random((1200, 640), dtype=np.float32), device=device)
    out = clkit.pinned_empty(image.shape, np.float32, device=device)
    ck.gaussian_blur(image, 1.5, out=out, device=[device, device])
    expected = ck.gaussian_blur(np.asarray(image).copy(), 1.5, device=device)
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-6)
    assert staged == {"upload": 1, "download": 0}  # the reference's ordinary input only


def test_pinned_memory_of_another_device_is_staged(discrete, rng):
    device, staged = discrete
    others = [d for d in clkit.devices() if d != device]
    if not others:
        pytest.skip("one device only")
    a = clkit.pinned_like(rng.random(1 << 19, dtype=np.float32), device=others[0])
    np.testing.assert_array_equal(ck.vector_add(a, a, device=device), np.asarray(a) * 2)
    assert staged == {"upload": 2, "download": 0}  # the result is pinned for this device


# -- the numpy results of GPU calls: pinned blocks, reused once a result is gone -------------------

def test_a_dropped_result_lends_its_memory_to_the_next(discrete, rng):
    device, staged = discrete
    a = rng.random((700, 800), dtype=np.float32)
    first = ck.gaussian_blur(a, 1.0, device=device)
    assert clkit.is_pinned(first, device)
    address = first.ctypes.data
    del first
    gc.collect()
    second = ck.gaussian_blur(a, 1.0, device=device)
    assert second.ctypes.data == address
    np.testing.assert_allclose(second, ck.gaussian_blur(a, 1.0, device=device), atol=1e-6)
    assert staged["download"] == 0


def test_a_view_keeps_a_result_from_being_reused(discrete, rng):
    device, _ = discrete
    a = rng.random((700, 800), dtype=np.float32)
    result = ck.convolve(a, np.ones((3, 3), np.float32), device=device)
    row = result[350, ::-1]
    kept = row.copy()
    del result
    gc.collect()
    other = ck.convolve(a * 7, np.ones((3, 3), np.float32), device=device)
    assert other.ctypes.data != row.base.ctypes.data
    np.testing.assert_array_equal(row, kept)
    reference, _ = convolve_reference(a, np.ones((3, 3), np.float32))
    np.testing.assert_allclose(row, reference[350, ::-1], rtol=1e-5)


def test_release_memory_frees_the_idle_result_blocks(discrete, rng):
    """release_memory unmaps the idle blocks that results came home in, and their bytes leave
    the page-locked budget; a block lent to a result still held stays that result's, its
    values intact, and comes back as an idle block when the result goes."""
    device, _ = discrete
    rt = clkit.runtime(device)
    a = rng.random((700, 800), dtype=np.float32)
    block = -(-a.nbytes // _pinned._GRAIN) * _pinned._GRAIN

    def idle():
        return sum(map(len, rt.holds(_pinned._Blocks).free.values()))

    ck.release_memory(device)
    gc.collect()
    held = _pinned._budget.held  # pinned arrays and results of other devices, still alive
    kept, dropped = (ck.vector_add(a, a, device=device) for _ in range(2))
    assert clkit.is_pinned(kept, device) and clkit.is_pinned(dropped, device)
    del dropped
    gc.collect()
    assert idle() == 1 and _pinned._budget.held == held + 2 * block

    assert ck.release_memory(device) >= block
    gc.collect()
    assert idle() == 0 and _pinned._budget.held == held + block
    other = ck.vector_add(a, 2 * a, device=device)  # a new block, not the one kept holds
    np.testing.assert_array_equal(kept, a + a)
    np.testing.assert_array_equal(other, a + 2 * a)
    del kept, other
    gc.collect()
    assert idle() == 2 and _pinned._budget.held == held + 2 * block


def test_results_beyond_the_pool_are_ordinary_memory(discrete, rng, monkeypatch):
    device, staged = discrete
    monkeypatch.setattr(_pinned, "POOL_BYTES", 2 << 20)
    a = rng.random((1000, 1000), dtype=np.float32)  # 4 MB results: over the pool's size
    results = [ck.vector_add(a, a, device=device) for _ in range(2)]
    assert not any(clkit.is_pinned(r) for r in results)
    assert staged["download"] == 2
    for r in results:
        np.testing.assert_array_equal(r, a + a)


def test_pinned_copies_keep_their_place_in_the_queue(discrete, rng):
    """A pinned upload into pooled memory waits for the work queued before it (a kernel still
    reading the buffer the upload is about to fill) and holds back the work queued after it
    (the kernel reading what it uploads)."""
    device, _ = discrete
    base = clkit.to_device(rng.random((1024, 2048), dtype=np.float32), device=device)
    pairs = [[clkit.pinned_like(rng.random(base.shape, dtype=np.float32), device=device)
              for _ in range(2)] for _ in range(3)]
    for a, b in pairs:
        doubled = ck.vector_add(base, base, device=device)  # a pooled result
        blurred = ck.gaussian_blur(doubled, 6.0, device=device)  # queued, reading it
        del doubled  # its memory back to the pool while the blur may still read it
        sums = ck.vector_add(a, b, device=device)  # uploads into pooled memory
        np.testing.assert_array_equal(sums, np.asarray(a) + np.asarray(b))
        expected = ck.gaussian_blur(np.asarray(base.get()) * 2, 6.0, device=device)
        np.testing.assert_allclose(blurred.get(), expected, rtol=0, atol=1e-5)
