"""Device memory of the library: what queued work reads stays valid until that work has run."""

import gc

import numpy as np
import pyopencl as cl
import pytest

import clkit
import clkit.kernels as ck
from clkit._memory import pools as _memory

from _reference import reporting


def test_a_dropped_constant_is_still_read_right_by_queued_work(device):
    # Nothing on the runtime's queue runs until the gate opens: the call that reads the
    # constant is queued, then every reference to the constant goes and its memory is reused.
    if device.simulator:
        pytest.skip("a call on the simulator returns with its work done (threads take turns "
                    "there), so no work stays queued behind a gate")
    rt = clkit.runtime(device)
    gate = cl.UserEvent(rt.context)
    try:
        cl.enqueue_marker(rt.own_queue, wait_for=[gate])
        host = np.arange(4096, dtype=np.float32)
        weights = _memory.constant(rt, host)
        out = clkit.empty(4096, np.float32, device=device)
        ck.vector_add(weights, weights, out=out)
        del weights
        rt.drop_held()
        gc.collect()
        reused = [np.full(4096, -1, np.float32) for _ in range(256)]
    finally:
        gate.set_status(cl.command_execution_status.COMPLETE)
    np.testing.assert_array_equal(out.get(), 2 * host)
    assert all((r == -1).all() for r in reused)


def _held(rt):
    return _memory.pools(rt).held_bytes()


def test_lanes_keep_pools_of_their_own_within_the_device_bound(discrete, rng, monkeypatch):
    """A batch's lanes take their buffers from pools of their own queues, whose memory counts
    toward the device's bound and which release_memory empties with the rest."""
    device, _ = discrete
    rt = clkit.runtime(device)
    images = [rng.random((256, 512), dtype=np.float32) for _ in range(12)]
    mask = rng.random((3, 3)).astype(np.float32)
    want = [ck.convolve(x, mask, device=device) for x in images]
    for got, expected in zip(clkit.map(ck.convolve, images, mask, device=device), want):
        np.testing.assert_array_equal(got, expected)
    assert len(_memory.pools(rt)) > 1  # the lanes' queues have pools of their own
    held = _held(rt)
    assert held > 0 and ck.release_memory(device) >= held and _held(rt) == 0

    # no share at all: every allocation first gives back what the device's pools hold, so
    # what stays is about what each queue's last call dropped (an image and its result), not
    # the buffers of every size the batch used
    monkeypatch.setattr(_memory, "POOL_SHARE", 2 * device.global_mem)
    sizes = [rng.random((64 * (i + 1), 512), dtype=np.float32) for i in range(12)]
    # the batch first, then the single calls: on PoCL 5 a download beside a lane's download
    # on another queue of the device (posing as discrete) once aborted in the driver
    batch = list(clkit.map(ck.convolve, sizes, mask, device=device))
    for got, x in zip(batch, sizes):
        np.testing.assert_array_equal(got, ck.convolve(x, mask, device=device))
    assert _held(rt) <= len(_memory.pools(rt)) * 3 * sizes[-1].nbytes


def test_a_device_array_result_too_large_for_one_allocation_says_to_pass_numpy(device):
    image = np.zeros((64, 64), np.uint8)
    on_device = clkit.to_device(image, device=device)
    with reporting(device, max_alloc=8 << 10):  # the float32 result: 16 KiB
        with pytest.raises(clkit.OutOfDeviceMemoryError, match="device arrays are computed "
                                                               "whole: pass the data as numpy"):
            ck.convolve(on_device, np.ones((3, 3)), device=device)
        # the same image as a numpy array goes through in tiles
        np.testing.assert_array_equal(ck.convolve(image, np.ones((3, 3)), device=device), 0)


def test_release_memory_counts_what_it_gave_back(device):
    a = clkit.to_device(np.ones(1000, np.float32), device=device)
    kept = ck.vector_add(a, a)  # lent out of the pool: not given back
    kept_bytes = kept.nbytes
    ck.release_memory(device)
    assert ck.release_memory(device) == 0  # (it counted the live blocks' rounding each time)
    del kept
    if not device.simulator:  # (the simulator's buffers are new each call, never pooled)
        assert ck.release_memory(device) >= kept_bytes
