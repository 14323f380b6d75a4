"""Launching stays flat: 10,000 launches with numpy arguments leave host and device memory as
they found them.

Measured after a warm-up (first builds, caches, pools): the process's resident memory
(``/proc/self/statm``), the number of Python objects, and the device buffers alive (every
``pyopencl.Buffer`` made in the loop is counted while it lives).  The bounds are generous:
a leak of one argument's buffer per launch would hold about 300 MB, of one small Python object
per launch some 10,000 objects, far beyond them.  No timing is measured.
"""

import gc
import os
import weakref

import numpy as np
import pyopencl as cl
import pytest

import clkit
import clkit.kernels as ck
from clkit._build import tiers as _tiers
from clkit._platform.runtime import working_runtimes

SAXPY = """
__kernel void saxpy(const float a, __global const float* x, __global float* y)
{ size_t i = get_global_id(0); y[i] = a * x[i] + y[i]; }
"""
PAGE = os.sysconf("SC_PAGE_SIZE")


def resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


@pytest.fixture
def live_buffers(monkeypatch):
    """The pyopencl buffers made from now on that are still alive.

    Background builds are off, and those an earlier test queued are done first: a build's
    first launch makes buffers of its own in another thread, whenever it runs."""
    monkeypatch.setenv("CLKIT_BACKGROUND_BUILDS", "0")
    _tiers.wait_idle()
    alive = weakref.WeakSet()

    class Counted(cl.Buffer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            alive.add(self)

    monkeypatch.setattr(cl, "Buffer", Counted)
    return alive


def footprint(alive):
    gc.collect()
    return resident_bytes(), len(gc.get_objects()), len(alive)


def launches_for(device, real, simulated):
    return simulated if device.simulator else real


def test_ten_thousand_launches_with_numpy_arguments(device, live_buffers):
    n = launches_for(device, 10_000, 500)
    prg = clkit.Program.from_source(SAXPY, device=device, name="<resources>")
    x = np.linspace(0, 1, 4096, dtype=np.float32)  # 16 KiB per argument and launch
    y = np.zeros_like(x)
    for _ in range(n // 10):  # warm-up: build, caches, allocator high-water marks
        prg.saxpy(1.0, x, y)
    before = footprint(live_buffers)
    for i in range(n):
        y = np.zeros_like(x)
        prg.saxpy(2.0, x, y, wait=i % 2 == 0).wait()
    assert np.array_equal(y, np.float32(2) * x)
    after = footprint(live_buffers)
    grown_mb = (after[0] - before[0]) / 2**20
    assert grown_mb < 40, f"resident memory grew by {grown_mb:.1f} MB over {n} launches"
    assert after[1] - before[1] < 2000, f"{after[1] - before[1]} more Python objects"
    assert after[2] <= before[2] + 2, f"{after[2]} device buffers alive after {n} launches"


def test_library_calls_with_numpy_arguments(device, live_buffers, rng):
    rounds = launches_for(device, 300, 15)
    rgb = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
    image = rng.standard_normal((48, 64)).astype(np.float32)
    depth = rng.integers(0, 3000, (48, 64)).astype(np.uint16)
    calls = [lambda: ck.vector_add(image, image, device=device),
             lambda: ck.grayscale(rgb, device=device),
             lambda: ck.convolve(image, np.ones((3, 3)), device=device),
             lambda: ck.gaussian_blur(image, 1.0, device=device),
             lambda: ck.mandelbrot(64, 48, max_iter=20, device=device),
             lambda: ck.depth_to_points(depth, 50.0, 50.0, 32.0, 24.0, rgb=rgb, device=device)]
    # The convolution's specialised kernels built first: a call switches to them once they are,
    # with their own masks on the device, which a background build finishing mid-loop would add.
    ck.warmup(masks=[np.ones((3, 3))], sigmas=[1.0], device=device)
    first = [call() for call in calls]
    for _ in range(3):
        for call in calls:
            call()
    before = footprint(live_buffers)
    for _ in range(rounds):
        for call, want in zip(calls, first):
            got = call()
            if isinstance(want, tuple):
                assert all(np.array_equal(g, w) for g, w in zip(got, want))
            else:
                assert np.array_equal(got, want)
    after = footprint(live_buffers)
    grown_mb = (after[0] - before[0]) / 2**20
    assert grown_mb < 40, f"resident memory grew by {grown_mb:.1f} MB over {rounds} rounds"
    assert after[1] - before[1] < 2000, f"{after[1] - before[1]} more Python objects"
    assert after[2] <= before[2] + 4, f"{after[2]} device buffers alive"


def test_device_arrays_are_freed_with_their_python_objects(device, live_buffers):
    before = footprint(live_buffers)
    for _ in range(launches_for(device, 2000, 100)):
        a = clkit.to_device(np.ones(8192, np.float32), device=device)
        b = clkit.empty(8192, np.float32, device=device)
        ck.vector_add(a, a, out=b)
    del a, b
    after = footprint(live_buffers)
    assert after[2] <= before[2], f"{after[2] - before[2]} device buffers outlived their arrays"
    assert (after[0] - before[0]) / 2**20 < 40


def test_ten_thousand_library_calls_with_fresh_results_stay_flat(device, live_buffers, rng):
    """Every library function, numpy and device arrays in, no out=: memory stays within 5%.

    Device memory is what the counted buffers and the library's pools hold; a result
    that was never given back to the pool would show as a pool that keeps growing.
    """
    from clkit._memory import pools as _memory

    rgb = rng.integers(0, 256, (24, 32, 3), dtype=np.uint8)
    image = rng.standard_normal((24, 32)).astype(np.float32)
    depth = rng.integers(0, 3000, (24, 32)).astype(np.uint16)
    on = {name: clkit.to_device(x, device=device)
          for name, x in (("rgb", rgb), ("image", image), ("depth", depth))}
    mask = np.ones((3, 3))

    def calls(rgb, image, depth):
        return [lambda: ck.vector_add(image, image, device=device),
                lambda: ck.grayscale(rgb, device=device),
                lambda: ck.convolve(image, mask, device=device),
                lambda: ck.gaussian_blur(image, 1.0, device=device),
                lambda: ck.depth_to_points(depth, 50.0, 50.0, 16.0, 12.0, rgb=rgb,
                                           device=device)]

    every = calls(rgb, image, depth) + calls(on["rgb"], on["image"], on["depth"]) + \
        [lambda: ck.mandelbrot(32, 24, max_iter=20, device=device)]
    first = []
    for call in every:
        got = call()
        got = got if isinstance(got, tuple) else (got,)
        first.append(tuple(g if isinstance(g, np.ndarray) else g.get() for g in got))

    def device_bytes():
        gc.collect()
        pools = sum(_memory.pools(rt).managed_bytes() for rt in working_runtimes())
        return pools + sum(b.size for b in list(live_buffers))

    total = launches_for(device, 10_000, 600)
    done = 0

    def run(n):
        nonlocal done
        for i in range(n):
            call = every[(done + i) % len(every)]
            call()
        done += n
        clkit.runtime(device).queue.finish()

    run(100)
    host_before, device_before = resident_bytes(), device_bytes()
    run(total - 100)
    host_after, device_after = resident_bytes(), device_bytes()
    for call, want in zip(every, first):  # still right at the end
        got = call()
        got = got if isinstance(got, tuple) else (got,)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g if isinstance(g, np.ndarray) else g.get(), w)
    assert host_after <= host_before * 1.05, \
        f"resident memory grew from {host_before / 2**20:.1f} to {host_after / 2**20:.1f} MB"
    assert device_after <= max(device_before * 1.05, device_before + 4096), \
        f"device memory grew from {device_before} to {device_after} bytes over {total} calls"
