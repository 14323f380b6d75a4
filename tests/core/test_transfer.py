"""Staged transfers through pinned buffers (the GPU path), exercised on every device."""

import threading

import numpy as np
import pyopencl as cl
import pytest

import clkit
from clkit._memory import pinned as _pinned, transfer as _transfer
from clkit import kernels as ck

from _reference import (SAXPY, assert_close_scaled, assert_counts_equal, convolve_reference,
                        filter_ulps, gray_reference, mandelbrot_reference, reporting,
                        skip_on_simulator)


@pytest.mark.parametrize("nbytes", [1, 4096, 1_000_003, 5 * 65536 + 17])
def test_staged_round_trip(device, nbytes, rng):
    rt = clkit.runtime(device)
    queue = rt.new_queue()
    staging = _transfer.Staging(rt.context, queue, chunk=65536, slots=2)
    host = rng.integers(0, 256, nbytes, dtype=np.uint8)
    buf = cl.Buffer(rt.context, cl.mem_flags.READ_WRITE, nbytes + 64)
    staging.upload(queue, buf, host, offset=64)
    back = np.empty_like(host)
    staging.download(queue, buf, back, offset=64)
    np.testing.assert_array_equal(back, host)
    direct = np.empty(nbytes + 64, np.uint8)
    cl.enqueue_copy(queue, direct, buf)
    np.testing.assert_array_equal(direct[64:], host)


def test_staged_multidimensional_and_typed(device, rng):
    rt = clkit.runtime(device)
    host = rng.random((301, 7, 3), dtype=np.float32)
    buf = cl.Buffer(rt.context, cl.mem_flags.READ_WRITE, host.nbytes)
    staging = _transfer.Staging(rt.context, rt.queue, chunk=4096, slots=3)
    staging.upload(rt.queue, buf, host)
    back = np.zeros_like(host)
    staging.download(rt.queue, buf, back)
    np.testing.assert_array_equal(back, host)


def test_to_device_keeps_0d_shapes_and_copies_device_arrays(device, rng):
    scalar = clkit.to_device(np.array(2.5, np.float32), device=device)
    assert scalar.shape == () and scalar.get() == np.float32(2.5)
    host = rng.random((5, 7), dtype=np.float32)
    first = clkit.to_device(host, device=device)
    second = clkit.to_device(first[:, 1::2], device=device)  # a strided view, to a new array
    assert second.base_data.int_ptr != first.base_data.int_ptr
    first.fill(0)
    np.testing.assert_array_equal(second.get(), host[:, 1::2])


def test_a_queue_s_first_transfers_go_plain_while_its_staging_buffers_are_made(device, rng,
                                                                                monkeypatch):
    """The staging buffers of a queue are made in the background when a transfer first wants
    them; until they are ready, transfers are plain copies, with the same results."""
    skip_on_simulator(device, "megabytes of staged data")
    rt = clkit.runtime(device)
    queue = rt.new_queue()
    ready = threading.Event()
    staged = []
    make, upload = _transfer.Staging, _transfer.Staging.upload

    def slow(*args):
        ready.wait(10)
        return make(*args)

    def counted(self, *args):
        staged.append("up")
        return upload(self, *args)

    monkeypatch.setattr(make, "upload", counted)
    monkeypatch.setattr(_transfer, "Staging", slow)
    host = rng.random(1 << 19, dtype=np.float32)  # 2 MiB
    with reporting(device, unified_memory=False):
        first = _transfer.upload(rt, host, queue)
        back = _transfer.download(rt, first)
        assert staged == [] and _transfer.staging(rt, queue, wait=False) is None
        ready.set()
        _transfer.staging(rt, queue)  # waits until they are made
        second = _transfer.upload(rt, host * 2, queue)
        np.testing.assert_array_equal(back, host)
        np.testing.assert_array_equal(_transfer.download(rt, second), host * 2)
        assert staged == ["up"]


def test_pinned_downloads_make_no_staging_buffers(discrete, rng):
    """A download into pinned memory goes by DMA: its queue gets no staging buffers for it."""
    import pyopencl.array as cl_array
    device, staged = discrete
    rt = clkit.runtime(device)
    queue = rt.new_queue()
    host = rng.random(1 << 19, dtype=np.float32)  # 2 MiB
    back = clkit.pinned_empty(host.shape, host.dtype, device=device)
    assert clkit.is_pinned(back, device)
    _transfer.download(rt, cl_array.to_device(queue, host), back)
    np.testing.assert_array_equal(back, host)
    assert id(queue) not in rt.held(_transfer.staging, dict) and staged["download"] == 0


@pytest.mark.parametrize("shape,dtype", [((1000, 700), np.float32), ((513, 1027, 3), np.uint8),
                                         ((7,), np.int64)])
def test_to_device_stages_large_arrays(discrete, rng, shape, dtype):
    """clkit.to_device goes through the staging buffers above 1 MiB, and returns with the data
    on the device (a non-contiguous input is copied as a C-contiguous one)."""
    device, staged = discrete
    host = (rng.random(shape) * 200).astype(dtype)
    strided = np.asfortranarray(host.copy())
    arr = clkit.to_device(strided, device=device)
    assert arr.shape == shape and arr.dtype == dtype and arr.flags.c_contiguous
    strided[...] = 0  # the caller may reuse its array at once
    np.testing.assert_array_equal(arr.get(), host)
    assert staged["upload"] == (1 if host.nbytes > _transfer.SMALL else 0)


def test_user_kernels_stage_large_numpy_arguments(discrete, rng, tmp_path):
    """A user kernel's numpy arguments above 1 MiB go up through the staging buffers of the
    device's queue, and the array it writes comes home through them when the call waits (a
    copy enqueued after the kernel when it does not); on a queue of the caller's own they are
    copied as their buffers are made, and copied back."""
    device, staged = discrete
    path = tmp_path / "saxpy.cl"
    path.write_text(SAXPY)
    prg = clkit.load(path, device=device)
    n = (1 << 18) + 3  # 1 MiB and 12 bytes each
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    expected = np.float32(2.5) * x + y
    prg.saxpy(2.5, x, y)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
    assert staged == {"upload": 2, "download": 1}
    launch = prg.saxpy(1.0, x, y, wait=False)
    launch.wait()
    np.testing.assert_allclose(y, expected + x, rtol=1e-5, atol=1e-5)
    assert staged == {"upload": 4, "download": 1}
    strided = np.zeros(2 * n, np.float32)[::2]  # comes home through a contiguous copy
    prg.saxpy(1.0, x, strided)
    np.testing.assert_array_equal(strided, x)
    assert staged == {"upload": 6, "download": 2}
    queue = clkit.runtime(device).new_queue()
    small = y[:1000].copy()
    prg.saxpy(-3.5, x, y, queue=queue).wait()  # undoes both
    prg.saxpy(1.0, x[:1000], small).wait()  # 4 KB: copied as the buffer is made
    np.testing.assert_allclose(y, expected - np.float32(2.5) * x, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(small, expected[:1000] + 2 * x[:1000], rtol=1e-5, atol=1e-5)
    assert staged == {"upload": 6, "download": 2}


# -- the library's numpy-in, numpy-out calls as they run on a GPU --------------------------------

@pytest.mark.parametrize("pool", [True, False], ids=["pinned-results", "ordinary-results"])
def test_library_calls_stage_numpy_data_through_pinned_buffers(discrete, rng, monkeypatch, pool):
    """Numpy inputs are staged; results come home into pinned memory, or staged without it."""
    device, staged = discrete
    if not pool:
        monkeypatch.setattr(_pinned, "POOL_BYTES", 0)
    down = 0 if pool else 1  # staged downloads per result above 1 MiB
    a = rng.random(1 << 19, dtype=np.float32)  # 2 MiB: above the 1 MiB staging threshold
    b = rng.random(1 << 19, dtype=np.float32)
    total = ck.vector_add(a, b, device=device)
    np.testing.assert_array_equal(total, a + b)
    assert staged == {"upload": 2, "download": down}
    assert clkit.is_pinned(total, device) == pool

    image = rng.random((601, 700, 3), dtype=np.float32)  # 5 MiB in, 1.6 MiB out
    assert_close_scaled(ck.grayscale(image, device=device), gray_reference(image, "bt601"),
                        gray_reference(np.abs(image), "bt601"), what="grayscale")

    flat = image[..., 0].copy()
    mask = rng.standard_normal((5, 5)).astype(np.float32)
    expected, scale = convolve_reference(flat, mask)
    assert_close_scaled(ck.convolve(flat, mask, device=device), expected, scale,
                        ulps=filter_ulps(25), what="convolve")

    assert_counts_equal(ck.mandelbrot(801, 700, max_iter=64, device=device),
                        mandelbrot_reference(801, 700, max_iter=64))
    assert staged == {"upload": 4, "download": 4 * down}  # every input and result above 1 MiB


@pytest.mark.parametrize("shape, dtype", [((), np.float32), ((7,), np.uint8), ((3, 5), np.int64),
                                          ((4, 0, 3), np.float32), ((2, 3, 4), np.uint16)])
def test_a_wrapped_buffer_is_the_array_pyopencl_makes(device, shape, dtype):
    """The library's quick wrapping of a buffer as a device array (numpy memory used in place,
    pooled memory) makes what pyopencl's own constructor makes."""
    from clkit._memory.array import wrap
    rt = clkit.runtime(device)
    dtype = np.dtype(dtype)
    buf = cl.Buffer(rt.context, cl.mem_flags.READ_WRITE,
                    max(1, int(np.prod(shape)) * dtype.itemsize))
    got = wrap(rt.queue, shape, dtype, buf)
    want = cl.array.Array(rt.queue, shape, dtype, data=buf)
    for name in ("shape", "strides", "dtype", "size", "nbytes", "offset", "ndim"):
        assert getattr(got, name) == getattr(want, name), name
    assert got.base_data is buf and got.queue is rt.queue and got.context == rt.context
    assert got.flags.c_contiguous and got.flags.forc == want.flags.forc
    if got.size:
        values = np.arange(got.size).astype(dtype).reshape(shape)
        got.set(values)
        np.testing.assert_array_equal(want.get(), values)
