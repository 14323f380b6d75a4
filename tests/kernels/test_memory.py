"""Device memory of the library: what queued work reads stays valid until that work has run."""

import gc

import numpy as np
import pyopencl as cl

import clkit
import clkit.kernels as ck
from clkit.kernels import _memory


def test_a_dropped_constant_is_still_read_right_by_queued_work(device):
    # Nothing on the runtime's queue runs until the gate opens: the call that reads the
    # constant is queued, then every reference to the constant goes and its memory is reused.
    rt = clkit.runtime(device)
    gate = cl.UserEvent(rt.context)
    try:
        cl.enqueue_marker(rt.own_queue, wait_for=[gate])
        host = np.arange(4096, dtype=np.float32)
        weights = _memory.constant(rt, host)
        out = clkit.empty(4096, np.float32, device=device)
        ck.vector_add(weights, weights, out=out)
        del weights
        _memory.forget()
        gc.collect()
        reused = [np.full(4096, -1, np.float32) for _ in range(256)]
    finally:
        gate.set_status(cl.command_execution_status.COMPLETE)
    np.testing.assert_array_equal(out.get(), 2 * host)
    assert all((r == -1).all() for r in reused)
