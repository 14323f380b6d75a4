"""Launch overhead: clkit's Kernel.__call__ against raw pyopencl, same kernel, same queue."""

import numpy as np
import pyopencl as cl
import pytest

import clkit

SRC = """
__kernel void nothing(__global float* a, __global const float* b, const uint n) { }
"""
N = 1 << 16


@pytest.fixture(scope="module")
def setup(device):
    rt = clkit.runtime(device)
    a = clkit.to_device(np.zeros(N, np.float32), device=device)
    b = clkit.to_device(np.zeros(N, np.float32), device=device)
    knl = clkit.Program.from_source(SRC, device=device).nothing
    raw = cl.Kernel(cl.Program(rt.context, SRC).build(), "nothing")
    raw.set_scalar_arg_dtypes([None, None, np.uint32])  # idiomatic, fast pyopencl
    knl(a, b, N)
    raw(rt.queue, (N,), None, a.data, b.data, N).wait()
    return rt, a, b, knl, raw


@pytest.mark.benchmark(group="launch-wait")
def test_launch_wait__clkit(benchmark, setup):
    rt, a, b, knl, raw = setup
    benchmark(lambda: knl(a, b, N))


@pytest.mark.benchmark(group="launch-wait")
def test_launch_wait__pyopencl(benchmark, setup):
    rt, a, b, knl, raw = setup
    benchmark(lambda: raw(rt.queue, (N,), None, a.data, b.data, N).wait())


@pytest.mark.benchmark(group="launch-async")
def test_launch_async__clkit(benchmark, setup):
    rt, a, b, knl, raw = setup
    benchmark.pedantic(lambda: knl(a, b, N, wait=False), rounds=20000, warmup_rounds=500,
                       teardown=None)
    rt.queue.finish()


@pytest.mark.benchmark(group="launch-async")
def test_launch_async__pyopencl(benchmark, setup):
    rt, a, b, knl, raw = setup
    benchmark.pedantic(lambda: raw(rt.queue, (N,), None, a.data, b.data, N), rounds=20000,
                       warmup_rounds=500)
    rt.queue.finish()
