"""Queues and threads mixed as users mix them: every result still right.

Each test is one way that work on several queues of one context could read memory another
queue has already reused or not yet written:

- ``out=`` on a queue of the user's (``clkit.runtime(dev).new_queue()``) when the library
  computes the result aside and copies it in (an ``out`` with an offset, an ``out`` that is an
  input, a call inside a :func:`clkit.map` lane), also under ``python -O``;
- a pooled library result dropped while a user kernel on another queue still reads it;
- a user kernel launched without ``queue=`` on device arrays whose own queue still has work;
- :func:`clkit.map` over a generator that refills a few arrays in turn;
- two threads on the Oclgrind simulator (in a child process: that aborted the process).

A kernel that spins before it reads (``slow_copy``) keeps the race windows open, so that each
of these failed every time before clkit ordered the queues.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.ndimage

import clkit
import clkit.kernels as ck
from _reference import skip_on_simulator
from _where import CWD, child_env


# Spins, then copies: a reader (or writer) that comes late on its queue.
SLOW = """
__kernel void slow_copy(__global const float* src, __global float* dst, int spins) {
    size_t i = get_global_id(0);
    float x = (float)i;
    for (int k = 0; k < spins; ++k) x = x * 0.999f + 1.0f;
    dst[i] = src[i] + (x == -1.0f ? 1.0f : 0.0f);   /* x is never -1: a plain copy */
}
__kernel void slow_fill(__global float* dst, float value, int spins) {
    size_t i = get_global_id(0);
    float x = (float)i;
    for (int k = 0; k < spins; ++k) x = x * 0.999f + 1.0f;
    dst[i] = value + (x == -1.0f ? 1.0f : 0.0f);
}
__kernel void copy(__global const float* src, __global float* dst) {
    dst[get_global_id(0)] = src[get_global_id(0)];
}
"""


def spins(device):
    """Loop counts that keep a kernel busy for milliseconds (a few on the simulator)."""
    return 3 if device.simulator else 2000


def rounds(device, n=20):
    return 2 if device.simulator else n


def box(image):
    return scipy.ndimage.convolve(image.astype(np.float64), np.ones((3, 3)) / 9, mode="reflect")


MASK = np.ones((3, 3), np.float32) / 9


def test_out_on_a_queue_of_the_user_s_own(device, rng):
    import pyopencl.array as cl_array
    rt = clkit.runtime(device)
    mine = rt.new_queue()
    prg = clkit.Program.from_source(SLOW)
    shape = (12, 15) if device.simulator else (60, 70)
    for _ in range(rounds(device)):
        image = rng.random(shape, dtype=np.float32)
        x = cl_array.to_device(mine, image)
        # out's queue still busy writing x when the call comes: the call must read it after
        prg.slow_fill(x, 1.0, spins(device), queue=mine, wait=False)
        got = ck.convolve(x, MASK, out=x, device=device)  # out is an input: computed aside
        assert got is x and got.queue is mine
        np.testing.assert_allclose(x.get(), box(np.ones(shape)), rtol=1e-5)

        # an out with an offset, on the user's queue: computed aside, copied in
        whole = cl_array.to_device(mine, np.full((shape[0] + 3,) + shape[1:], -7, np.float32))
        part = whole[3:]
        src = clkit.to_device(image, device=device)
        ck.convolve(src, MASK, out=part, device=device)
        ck.vector_add(src, src, device=device)  # the next call on the runtime's queue
        expected = np.full(whole.shape, -7, np.float64)
        expected[3:] = box(image)
        np.testing.assert_allclose(whole.get(), expected, rtol=1e-5, atol=1e-6)


def test_out_in_a_map_lane(device, rng):
    shape = (10, 13) if device.simulator else (60, 70)
    images = [rng.random(shape, dtype=np.float32) for _ in range(2 if device.simulator else 12)]
    arrays = [clkit.to_device(x, device=device) for x in images]
    done = list(clkit.map(lambda a, device: ck.convolve(a, MASK, out=a, device=device), arrays,
                          device=device))
    for got, a, image in zip(done, arrays, images):
        np.testing.assert_allclose(a.get(), box(image), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got.get(), a.get())


OPTIMISED = """
import sys, numpy as np, pyopencl as cl, pyopencl.array as cl_array, scipy.ndimage, clkit
import clkit.kernels as ck
assert not __debug__  # run with python -O: no assert in pyopencl checks the queues
dev = clkit.select(sys.argv[1])
rt = clkit.runtime(dev)
mine = rt.new_queue()
prg = clkit.Program.from_source(sys.argv[2])
spins = int(sys.argv[4])
busy = cl_array.empty(mine, 4096, np.float32)
barrier = cl.enqueue_barrier

def busy_barrier(queue, wait_for=None):
    # another thread's work lands on out's queue just as clkit orders it after the call
    if queue is mine:
        prg.slow_fill(busy, 1.0, spins, queue=mine, wait=False)
    return barrier(queue, wait_for=wait_for)

cl.enqueue_barrier = busy_barrier
mask = np.ones((3, 3), np.float32) / 9
rng = np.random.default_rng(1)
wrong = 0
for _ in range(int(sys.argv[3])):
    image = rng.random((60, 70), dtype=np.float32)
    x = cl_array.to_device(mine, image)
    ck.convolve(x, mask, out=x)  # aside on the runtime's queue, then copied into x
    ck.vector_add(clkit.to_device(image * 5), clkit.to_device(image * 5))  # the next call
    want = scipy.ndimage.convolve(image.astype(np.float64), mask, mode="reflect")
    wrong += not np.allclose(x.get(), want, rtol=1e-5, atol=1e-6)
print(wrong)
"""


def test_out_on_another_queue_under_python_O(device):
    skip_on_simulator(device, "a few hundred calls")
    proc = subprocess.run([sys.executable, "-O", "-c", OPTIMISED, device.id, SLOW, "50",
                           str(spins(device))], capture_output=True, text=True, timeout=600,
                          cwd=CWD, env=child_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "0", f"wrong results of 50: {proc.stdout}"


def test_a_dropped_result_read_on_another_queue_is_not_reused(device, rng):
    rt = clkit.runtime(device)
    other = rt.new_queue()
    prg = clkit.Program.from_source(SLOW)
    n = 257 if device.simulator else 4096
    wrong = 0
    for _ in range(rounds(device)):
        a = rng.random(n, dtype=np.float32)
        da, dz = clkit.to_device(a, device=device), clkit.to_device(-a, device=device)
        y = clkit.empty(n, np.float32, device=device)
        r = ck.vector_add(da, da)  # a pooled block of the runtime's queue
        rt.queue.finish()
        prg.slow_copy(r, y, spins(device), queue=other, wait=False)  # reads r later
        del r
        ck.vector_add(dz, dz)  # the next result: it must not take r's block before that read
        other.finish()
        wrong += not np.array_equal(y.get(), a + a)
    assert wrong == 0


def test_a_user_kernel_waits_for_its_arrays_queues(device, rng):
    import pyopencl.array as cl_array
    rt = clkit.runtime(device)
    mine = rt.new_queue()
    prg = clkit.Program.from_source(SLOW)
    n = 129 if device.simulator else 4096
    wrong = 0
    for i in range(rounds(device)):
        x = cl_array.empty(mine, n, np.float32)
        prg.slow_fill(x, float(i + 1), spins(device), queue=mine, wait=False)
        y = clkit.empty(n, np.float32, device=device)
        prg.copy(x, y)  # on the runtime's queue: after x's queue has written x
        # and work on x's queue enqueued after the launch comes after it
        z = clkit.empty(n, np.float32, device=device)
        prg.copy(y, x)  # written on the runtime's queue ...
        prg.slow_copy(x, z, 1, queue=mine)  # ... read on x's own queue
        wrong += not (np.all(y.get() == i + 1) and np.all(z.get() == i + 1))
    assert wrong == 0


def refilled(images, k):
    """The images, through ``k`` arrays refilled in turn (a generator reusing its buffers)."""
    buffers = [np.empty_like(images[0]) for _ in range(k)]
    for i, image in enumerate(images):
        buffers[i % k][...] = image
        yield buffers[i % k]


def test_map_over_a_generator_that_refills_its_arrays(device, rng):
    shape = (9, 11) if device.simulator else (256, 300)
    images = [rng.random(shape, dtype=np.float32) for _ in range(3 if device.simulator else 60)]
    for k in (1, 2):
        got = list(clkit.map(ck.convolve, refilled(images, k), MASK, device=device, in_flight=k))
        for i, (result, image) in enumerate(zip(got, images)):
            np.testing.assert_allclose(result, box(image), rtol=1e-5, atol=1e-6,
                                       err_msg=f"image {i} of {len(images)}, {k} arrays")


def test_map_in_flight_must_be_a_positive_count(device):
    with pytest.raises(ValueError, match="in_flight must be a whole number of at least 1"):
        clkit.map(ck.convolve, [np.zeros((3, 3), np.float32)], MASK, device=device, in_flight=0)


SIMULATOR_THREADS = """
import sys, threading, numpy as np, scipy.ndimage, clkit, clkit.kernels as ck
sim = clkit.select("oclgrind")
others = [d for d in clkit.devices() if not d.simulator]
mask = np.ones((3, 3), np.float32) / 9
prg = clkit.Program.from_source("__kernel void twice(__global float* x) "
                                "{ x[get_global_id(0)] *= 2.0f; }")
errors = []

def work(seed):
    try:
        rng = np.random.default_rng(seed)
        for _ in range(3):
            image = rng.random((9, 12), dtype=np.float32)
            want = scipy.ndimage.convolve(image.astype(np.float64), mask, mode="reflect")
            np.testing.assert_allclose(ck.convolve(image, mask, device=sim), want, rtol=1e-5)
            d = clkit.to_device(image, device=sim)
            prg.twice(d, wait=False)
            np.testing.assert_allclose(d.get(), 2 * image)
            lanes = [sim] + others[:1]
            for got, x in zip(clkit.map(ck.convolve, [image, image + 1, image + 2], mask,
                                        device=lanes), [image, image + 1, image + 2]):
                np.testing.assert_allclose(got, scipy.ndimage.convolve(
                    x.astype(np.float64), mask, mode="reflect"), rtol=1e-5)
    except BaseException as exc:
        errors.append(exc)

threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
for t in threads: t.start()
for t in threads: t.join()
print("errors:", [repr(e) for e in errors])
sys.exit(1 if errors else 0)
"""


def test_threads_on_the_simulator_take_turns():
    if not any(d.simulator for d in clkit.devices()):
        pytest.skip("needs the Oclgrind simulator")
    env = child_env({k: v for k, v in os.environ.items()
                     if not k.startswith(("OCLGRIND_", "CLKIT_DEBUG"))})
    proc = subprocess.run([sys.executable, "-c", SIMULATOR_THREADS], capture_output=True,
                          text=True, timeout=600, cwd=CWD, env=env)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr[-3000:])


def test_ndimage_output_on_a_queue_of_the_user_s_own(device, rng):
    import pyopencl.array as cl_array
    import clkit.ndimage
    mine = clkit.runtime(device).new_queue()
    prg = clkit.Program.from_source(SLOW)
    shape = (11, 13) if device.simulator else (60, 70)
    busy = cl_array.empty(mine, 4096, np.float32)
    wrong = 0
    for _ in range(rounds(device, 10)):
        image = rng.random(shape, dtype=np.float32)
        output = cl_array.empty(mine, shape, np.float32)
        prg.slow_fill(busy, 1.0, spins(device), queue=mine, wait=False)  # output's queue busy
        got = clkit.ndimage.uniform_filter(clkit.to_device(image, device=device), 3,
                                           output=output)
        # the next call on the runtime's queue: it must not take the block of the result
        # before output's queue has copied it
        clkit.ndimage.uniform_filter(clkit.to_device(image * 7, device=device), 3)
        assert got is output
        wrong += not np.allclose(output.get(), scipy.ndimage.uniform_filter(image, 3),
                                 rtol=1e-5, atol=1e-6)
    assert wrong == 0
