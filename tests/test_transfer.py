"""Staged transfers through pinned buffers (the GPU path), exercised on every device."""

import numpy as np
import pyopencl as cl
import pytest

import clkit
from clkit import _transfer


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
