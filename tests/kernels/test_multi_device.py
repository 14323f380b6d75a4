"""device="all" and device lists split the work across devices; results equal one device's.

With two or more non-simulator devices (e.g. POCL_DEVICES="pthread pthread")
the tests use them all; otherwise they pair the first device with the
Oclgrind simulator as a second implementation, on small inputs.
``test_two_pocl_devices`` reruns this module with two PoCL devices.
"""

import contextlib
import os
import subprocess
import sys

import numpy as np
import pytest

import clkit
from clkit import kernels as ck
from clkit._engine import bands as _bands

from _reference import convolve_reference
from _where import CWD


def pair():
    """The devices to split over: every non-simulator device, else one plus the simulator."""
    usable = [d for d in clkit.devices() if not d.simulator]
    if len(usable) >= 2:
        return "all", usable
    sims = [d for d in clkit.devices() if d.simulator]
    if usable and sims:
        return [usable[0], sims[0]], [usable[0], sims[0]]
    pytest.skip("needs two OpenCL devices (e.g. POCL_DEVICES='pthread pthread')")


def assert_same(got, want, devices):
    """Bit-identical across devices of one implementation; float rounding across vendors.

    Different compilers contract multiply-adds differently, so a float result computed
    partly on a GPU and partly on a CPU equals either one only to float32 rounding.
    """
    if len({(d.platform, d.name, d.driver) for d in devices}) == 1 or got.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want)
    else:
        assert got.dtype == want.dtype and got.shape == want.shape
        scale = max(1.0, float(np.nanmax(np.abs(want)))) if want.size else 1.0
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=4e-6 * scale)


# Row counts: one that does not split evenly, and fewer rows than devices.
@pytest.fixture(params=[(37, 29), (1, 5)], ids=["37x29", "1x5"])
def size(request):
    return request.param


def test_grayscale_all(size, rng):
    spec, devices = pair()
    image = rng.integers(0, 256, size + (3,), dtype=np.uint8)
    np.testing.assert_array_equal(ck.grayscale(image, device=spec), ck.grayscale(image))
    image = rng.random(size + (4,), dtype=np.float32)
    assert_same(ck.grayscale(image, device=spec), ck.grayscale(image), devices)


def test_vector_add_all(rng):
    spec, devices = pair()
    for n in (1, 1009):
        a = rng.integers(-100, 100, n).astype(np.int16)
        b = rng.integers(-100, 100, n).astype(np.int16)
        np.testing.assert_array_equal(ck.vector_add(a, b, device=spec), a + b)
    a = rng.random((7, 11)).astype(np.float32)
    np.testing.assert_array_equal(ck.vector_add(a, a, device=spec), a + a)  # exact everywhere


def test_vector_add_into_its_input_with_several_devices(rng, monkeypatch):
    # The speed probes run bands of the call: they must not add into the input before the call
    spec, _ = pair()
    monkeypatch.setattr(_bands, "_speeds", {})  # measured again, as on a first call
    a, b = rng.integers(-100, 100, (2, 5003)).astype(np.int32)
    expected = a + b
    assert ck.vector_add(a, b, out=a, device=spec) is a
    np.testing.assert_array_equal(a, expected)


@pytest.mark.parametrize("mode", ["reflect", "wrap", "constant"])
def test_convolve_all(size, mode, rng):
    spec, devices = pair()
    image = rng.random(size, dtype=np.float32)
    mask = rng.random((5, 4))
    got = ck.convolve(image, mask, mode=mode, cval=0.25, device=spec)
    assert_same(got, ck.convolve(image, mask, mode=mode, cval=0.25), devices)
    expected, _ = convolve_reference(image, mask, mode, 0.25)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_convolve_all_multichannel_separable(rng):
    spec, devices = pair()
    image = rng.integers(0, 256, (23, 19, 3), dtype=np.uint8)
    mask = np.outer([1.0, 2.0, 1.0], [1.0, 0.0, -1.0])
    assert_same(ck.convolve(image, mask, device=spec), ck.convolve(image, mask), devices)


def test_gaussian_blur_all(size, rng):
    spec, devices = pair()
    image = rng.random(size, dtype=np.float32)
    assert_same(ck.gaussian_blur(image, 1.5, device=spec), ck.gaussian_blur(image, 1.5),
                devices)


def test_mandelbrot_all():
    spec, devices = pair()
    for width, height in ((41, 23), (3, 1)):
        np.testing.assert_array_equal(ck.mandelbrot(width, height, max_iter=60, device=spec),
                                      ck.mandelbrot(width, height, max_iter=60))


def test_depth_to_points_all(rng):
    spec, devices = pair()
    depth = rng.integers(0, 4, (29, 17)).astype(np.uint16)
    rgb = rng.integers(0, 256, (29, 17, 3), dtype=np.uint8)
    got = ck.depth_to_points(depth, 5.0, 6.0, 8.0, 14.0, rgb=rgb, device=spec)
    want = ck.depth_to_points(depth, 5.0, 6.0, 8.0, 14.0, rgb=rgb)
    assert_same(got[0], want[0], devices)
    np.testing.assert_array_equal(got[1], want[1])


def test_device_arrays_with_several_devices(rng):
    spec, devices = pair()
    image = rng.random((19, 13), dtype=np.float32)
    d_image = clkit.to_device(image)
    got = ck.convolve(d_image, np.ones((3, 3)), device=spec)
    assert isinstance(got, clkit.Array)
    assert_same(got.get(), ck.convolve(image, np.ones((3, 3))), devices)


def test_split_is_proportional_and_covers_every_row():
    assert _bands.split(10, [1, 1]) == [(0, 5), (5, 10)]
    assert _bands.split(10, [3, 1]) == [(0, 8), (8, 10)]
    assert _bands.split(1, [1, 1, 1]) == [(0, 0), (0, 1), (1, 1)]
    assert _bands.tiles(0, 10, 4) == [(0, 3), (3, 6), (6, 10)]


def test_speeds_are_measured_once_per_kernel_and_device():
    calls = []
    device = clkit.devices()[0]

    def probe(dev):
        calls.append(dev)
        return 10
    first = _bands.speed(("test-kernel", 1), device, probe)
    again = _bands.speed(("test-kernel", 1), device, probe)
    assert first == again > 0
    assert len(calls) == 2  # one warm-up run and one timed run, then remembered


def test_devices_of_pocl_4_and_5_take_turns():
    from types import SimpleNamespace

    from clkit._platform.devices import one_launch_at_a_time, turns

    def fake(platform, version):
        return SimpleNamespace(platform=platform,
                               cl_device=SimpleNamespace(platform=SimpleNamespace(version=version)))
    pocl = "Portable Computing Language"
    p5, p4 = fake(pocl, "OpenCL 3.0 PoCL 5.0+debian  Linux"), fake(pocl, "OpenCL 3.0 PoCL 4.0")
    p3, p6 = fake(pocl, "OpenCL 3.0 PoCL 3.1+debian"), fake(pocl, "OpenCL 3.0 PoCL 6.0")
    nvidia = fake("NVIDIA CUDA", "OpenCL 3.0 CUDA 13.0.88")
    assert [one_launch_at_a_time(d) for d in (p5, p4, p3, p6, nvidia)] == [True, True, False,
                                                                             False, False]
    assert hasattr(turns([p5, p4]), "acquire")  # a lock
    for alone in ([p5], [p5, nvidia], [p3, p3], [p6, p6]):
        assert not hasattr(turns(alone), "acquire"), alone


def test_bands_of_devices_that_take_turns_run_one_at_a_time(monkeypatch):
    import threading
    import time

    from _reference import reporting
    usable = [d for d in clkit.devices() if not d.simulator]
    if not usable:
        pytest.skip("needs a device that is not the simulator (its bands run in one thread)")
    device = usable[0]
    active, most = [0], [0]
    lock = threading.Lock()

    def band(rt, queue, r0, r1):
        with lock:
            active[0] += 1
            most[0] = max(most[0], active[0])
        time.sleep(0.02)
        with lock:
            active[0] -= 1

    def run(together):
        monkeypatch.setattr(_bands, "turns", lambda devices: together)
        most[0] = 0
        with reporting(device, unified_memory=False):  # two queues: two lanes
            _bands.run([(device, 0, 40)], band, lambda dev: 5)
        return most[0]

    assert run(threading.Lock()) == 1
    assert run(contextlib.nullcontext()) == 2  # the lanes overlap otherwise


def pocl_pair_env():
    """POCL_DEVICES for two PoCL CPU devices: 'pthread' before PoCL 4, 'cpu' after."""
    pocl = [d for d in clkit.devices() if d.short_platform == "pocl"]
    if not pocl:
        return None
    name = "pthread" if pocl[0].driver.split(".")[0] in ("1", "2", "3") else "cpu"
    return f"{name} {name}"


@pytest.mark.skipif(os.environ.get("CLKIT_TEST_POCL_PAIR") == "1", reason="already two devices")
def test_two_pocl_devices():
    pocl = pocl_pair_env()
    if pocl is None:
        pytest.skip("needs PoCL to make two CPU devices")
    env = dict(os.environ, POCL_DEVICES=pocl, CLKIT_VISIBLE_DEVICES="pocl",
               CLKIT_TEST_POCL_PAIR="1")
    env.pop("CLKIT_DEVICE", None)
    env.pop("CLKIT_TEST_DEVICES", None)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-k", "not two_pocl", os.path.abspath(__file__)],
                         capture_output=True, text=True, env=env,
                         cwd=CWD,
                         timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "skipped" not in run.stdout.splitlines()[-1]
