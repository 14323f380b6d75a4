"""Stress: threads, queues and batches mixed at random for a while, every result checked.

Each test runs its workers for a fixed time (20 s each by default, about a minute for the
file on two cores) and counts the calls, the wrong values and the errors; any wrong value or
error fails it, with the first few described.  The long version runs each test for ten
minutes and prints the counts::

    CLKIT_STRESS=long python -m pytest -s tests/reliability/test_stress.py

(``CLKIT_STRESS_SECONDS=N`` sets the time per test outright.)  What the workers mix:

- threads on the runtime's queue (shared), on a queue of their own
  (``clkit.runtime(dev).new_queue()``) and on another thread's queue (foreign), with numpy
  and device arrays, ``out=`` in place and at an offset;
- library results dropped while a user kernel on another queue still reads them, user kernels
  launched with ``wait=False``;
- :func:`clkit.map` over device arrays with ``out=`` in the lanes, and over a generator that
  refills a few arrays (``in_flight=``);
- :func:`clkit.kernels.release_memory` now and then;

on the device as it is and posing as a GPU (the ``discrete`` fixture: pooled device memory,
pinned results, staged copies).  References: scipy.ndimage, OpenCV and numpy.
"""

import os
import threading
import time

import cv2
import numpy as np
import pyopencl.array as cl_array
import pytest
import scipy.ndimage

import clkit
import clkit.kernels as ck
from _reference import skip_on_simulator

pytestmark = pytest.mark.stress

LONG = os.environ.get("CLKIT_STRESS", "").strip().lower() == "long"
SECONDS = float(os.environ.get("CLKIT_STRESS_SECONDS") or (600 if LONG else 20))
THREADS = 4

KERNELS = """
__kernel void slow_copy(__global const float* src, __global float* dst, int spins) {
    size_t i = get_global_id(0);
    float x = (float)i;
    for (int k = 0; k < spins; ++k) x = x * 0.999f + 1.0f;
    dst[i] = src[i] + (x == -1.0f ? 1.0f : 0.0f);
}
__kernel void axpy(float a, __global const float* x, __global float* y) {
    size_t i = get_global_id(0);
    y[i] = a * x[i] + y[i];
}
"""
MASK = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], np.float32) / 16


class Tally:
    """Calls, wrong values and errors of a stress test's workers."""

    def __init__(self, name):
        self.name = name
        self.calls = 0
        self.wrong = []
        self.errors = []
        self.lock = threading.Lock()

    def check(self, what, ok):
        with self.lock:
            self.calls += 1
            if not ok:
                self.wrong.append(what)

    def close(self):
        print(f"\nstress {self.name}: {self.calls} calls, {len(self.wrong)} wrong, "
              f"{len(self.errors)} errors")
        assert not self.errors, f"{len(self.errors)} errors, the first: {self.errors[0]!r}"
        assert not self.wrong, (f"{len(self.wrong)} wrong of {self.calls}: "
                                f"{'; '.join(self.wrong[:5])}")
        assert self.calls > 0


def for_a_while(tally, count, work):
    """``work(index, rng)`` again and again on ``count`` threads until the time is up."""
    stop = time.monotonic() + SECONDS

    def body(index):
        rng = np.random.default_rng(1000 + index)
        while time.monotonic() < stop and len(tally.errors) < 100:
            try:
                work(index, rng)
            except Exception as exc:  # counted and reported by the test; the thread goes on
                tally.errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=SECONDS + 600)
    assert not any(t.is_alive() for t in threads), "a stress thread hung"


def box(image):
    return scipy.ndimage.convolve(image.astype(np.float64), MASK.astype(np.float64),
                                  mode="reflect")


def close(got, want):
    return got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5)


def mixed(device, tally):
    """One worker's round: a random one of the ways a user mixes queues, checked."""
    rt = clkit.runtime(device)
    prg = clkit.Program.from_source(KERNELS)
    queues = []  # every thread's own queue, for the others to use as foreign ones
    lock = threading.Lock()

    def work(index, rng):
        mine = getattr(local, "queue", None)
        if mine is None:
            mine = local.queue = rt.new_queue()
            with lock:
                queues.append(mine)
        with lock:
            foreign = queues[int(rng.integers(len(queues)))]
        h, w = (int(n) for n in rng.integers(5, 90, 2))
        image = rng.random((h, w), dtype=np.float32)
        case = int(rng.integers(9))
        if case == 0:  # numpy in, numpy out
            tally.check("convolve numpy", close(ck.convolve(image, MASK, device=device),
                                                box(image)))
        elif case == 1:  # device arrays on the runtime's queue, shared by every thread
            d = clkit.to_device(image, device=device)
            r = ck.gaussian_blur(d, 1.5)
            want = scipy.ndimage.gaussian_filter(image.astype(np.float64), 1.5)
            tally.check("gaussian_blur device", close(r.get(), want))
        elif case in (2, 3):  # an out= in place on a queue of the thread's own or a foreign one
            q = mine if case == 2 else foreign
            x = cl_array.to_device(q, image)
            ck.convolve(x, MASK, out=x, device=device)
            tally.check(f"convolve out=x on {'own' if case == 2 else 'foreign'} queue",
                        close(x.get(), box(image)))
        elif case == 4:  # an out= at an offset, on the thread's queue
            whole = cl_array.to_device(mine, np.full((h + 2, w), -1, np.float32))
            src = clkit.to_device(image, device=device)
            ck.convolve(src, MASK, out=whole[2:], device=device)
            want = np.full((h + 2, w), -1, np.float64)
            want[2:] = box(image)
            tally.check("convolve out= at an offset", close(whole.get(), want))
        elif case == 5:  # a result dropped while a kernel on another queue reads it
            a = clkit.to_device(image.ravel(), device=device)
            y = cl_array.empty(mine, a.shape, np.float32)
            r = ck.vector_add(a, a)
            rt.queue.finish()
            prg.slow_copy(r, y, int(rng.integers(1, 300)), queue=mine, wait=False)
            del r
            ck.vector_add(clkit.to_device(-image.ravel(), device=device), a)
            tally.check("dropped result read on another queue",
                        np.array_equal(y.get(), 2 * image.ravel()))
        elif case == 6:  # user kernels with wait=False on device arrays of several queues
            x = cl_array.to_device(foreign, image.ravel())
            y = cl_array.to_device(mine, np.ones(image.size, np.float32))
            launch = prg.axpy(2.0, x, y, wait=False)
            launch.wait()
            tally.check("axpy wait=False", np.allclose(y.get(), 2 * image.ravel() + 1,
                                                       rtol=1e-6))
        elif case == 7:  # grayscale and vector_add against OpenCV and numpy
            rgb = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
            got = ck.grayscale(rgb, device=device)
            want = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
            tally.check("grayscale", np.abs(got.astype(int) - want).max() <= 1)
            ints = rng.integers(-1000, 1000, (h, w)).astype(np.int32)
            tally.check("vector_add", np.array_equal(
                ck.vector_add(ints, ints, device=device), 2 * ints))
        else:  # now and then, the pools emptied under the others' feet
            ck.release_memory(device)
            tally.check("release_memory", True)

    local = threading.local()
    return work


def batches(device, tally):
    """A round of clkit.map: device arrays with out= in the lanes, or a refilling generator."""
    def work(index, rng):
        images = [rng.random((int(rng.integers(20, 70)), 50), dtype=np.float32)
                  for _ in range(int(rng.integers(3, 12)))]
        if rng.integers(2):
            arrays = [clkit.to_device(x, device=device) for x in images]
            done = clkit.map(lambda a, device: ck.convolve(a, MASK, out=a, device=device),
                             arrays, device=device)
            for got, x in zip(done, images):
                tally.check("map out= in a lane", close(got.get(), box(x)))
        else:
            k = int(rng.integers(1, 4))

            def refilled():
                buffers = {}
                for i, x in enumerate(images):
                    b = buffers.setdefault((i % k, x.shape), np.empty_like(x))
                    b[...] = x
                    yield b
            for got, x in zip(clkit.map(ck.convolve, refilled(), MASK, device=device,
                                        in_flight=k), images):
                tally.check(f"map over {k} refilled arrays", close(got, box(x)))
        if rng.integers(10) == 0:
            ck.release_memory(device)
    return work


def test_threads_mixing_queues(device):
    skip_on_simulator(device, "a stress run")
    tally = Tally(f"threads mixing queues on {device.id}")
    for_a_while(tally, THREADS, mixed(device, tally))
    tally.close()


def test_threads_mixing_queues_posing_as_a_gpu(discrete):
    device, _ = discrete
    tally = Tally(f"threads mixing queues, {device.id} posing as a GPU")
    for_a_while(tally, THREADS, mixed(device, tally))
    tally.close()


def test_batches_beside_threads(device):
    skip_on_simulator(device, "a stress run")
    tally = Tally(f"batches beside threads on {device.id}")
    work_mixed, work_batch = mixed(device, tally), batches(device, tally)
    for_a_while(tally, THREADS, lambda i, rng: (work_batch if i < 2 else work_mixed)(i, rng))
    tally.close()
