"""Prepared launches: the library's repeated calls set their buffers and enqueue, on every device."""

import threading

import cv2
import numpy as np
import pyopencl as cl
import pytest

import clkit
from clkit._launch import kernel as _launch
from clkit._launch.kernel import Prepared
from clkit.kernels import convolve, gaussian_blur, grayscale, vector_add

from _reference import (SAXPY, assert_close_scaled, convolve_reference, filter_ulps,
                        gaussian_radius, gaussian_reference)


@pytest.fixture
def checked_calls(monkeypatch):
    """How many launches of this thread went through Kernel.__call__ (its checks, hooks and
    messages); a background build's first launch, in another thread, does not count."""
    count = [0]
    call = _launch.Kernel.__call__
    caller = threading.get_ident()

    def counting(self, *args, **kwargs):
        count[0] += threading.get_ident() == caller
        return call(self, *args, **kwargs)

    monkeypatch.setattr(_launch.Kernel, "__call__", counting)
    return count


def saxpy(device, alpha):
    rt = clkit.runtime(device)
    prg = clkit.Program.from_source(SAXPY)
    return rt, Prepared(prg, "saxpy", rt, (alpha, None, None), 1000, None)


def test_each_call_sets_its_own_buffers(device, rng, checked_calls):
    rt, prepared = saxpy(device, 2.0)
    for _ in range(3):  # new arrays each time: no call may reuse the last one's buffers
        x = rng.standard_normal(1000).astype(np.float32)
        y = rng.standard_normal(1000).astype(np.float32)
        dx, dy = clkit.to_device(x, device=device), clkit.to_device(y, device=device)
        prepared(rt.queue, dx, dy)
        np.testing.assert_array_equal(dy.get(), np.float32(2.0) * x + y)
    assert checked_calls[0] == 1  # the first call alone


def test_recorded_and_unusual_calls_take_the_checked_path(device, rng, checked_calls):
    rt, prepared = saxpy(device, 1.0)
    x = clkit.to_device(np.ones(1000, np.float32), device=device)
    y = clkit.to_device(np.zeros(1000, np.float32), device=device)
    prepared(rt.queue, x, y)
    with _launch.recording() as launches:
        prepared(rt.queue, x, y)
    assert len(launches) == 1 and launches[0].kernel.name == "saxpy"
    assert checked_calls[0] == 2
    # a buffer the short path does not take goes to the kernel's checks and their message
    with pytest.raises(clkit.ArgumentTypeError, match="saxpy"):
        prepared(rt.queue, x, clkit.to_device(np.zeros(1000, np.int32), device=device))
    np.testing.assert_array_equal(y.get(), 2.0)


def test_a_refused_enqueue_is_reported_as_the_checked_path_reports_it(device, monkeypatch):
    rt, prepared = saxpy(device, 1.0)
    x = clkit.to_device(np.ones(1000, np.float32), device=device)
    prepared(rt.queue, x, x)

    def refusing(queue, *args):
        raise cl.RuntimeError(cl._cl._ErrorRecord("clEnqueueNDRangeKernel", -5, "refused"))

    monkeypatch.setattr(_launch, "_enqueue", refusing)
    with pytest.raises(clkit.OutOfDeviceMemoryError, match="kernel saxpy"):
        prepared(rt.queue, x, x)
    monkeypatch.undo()
    prepared(rt.queue, x, x)  # the device still works
    np.testing.assert_array_equal(x.get(), 4.0)  # x + x twice: the refused call ran nothing


def test_library_calls_after_the_first_skip_the_checks(device, rng, checked_calls):
    # shapes no other test uses, so that the plans are new here
    image = rng.random((23, 61), dtype=np.float32)
    rgb = rng.integers(0, 256, (23, 61, 3), np.uint8)
    mask = rng.standard_normal((3, 3)).astype(np.float32)
    d_image, d_rgb = clkit.to_device(image, device=device), clkit.to_device(rgb, device=device)
    outs = [clkit.empty(image.shape, np.float32, device=device) for _ in range(2)]
    calls = [lambda: vector_add(d_image, d_image, out=outs[0]), lambda: grayscale(d_rgb),
             lambda: convolve(d_image, mask, out=outs[1]), lambda: gaussian_blur(d_image, 1.5)]
    with clkit._build.tiers.tier("specialised"):
        for call in calls:
            call()
        first = checked_calls[0]
        added, gray, convolved, blurred = [call().get() for call in calls]
    assert checked_calls[0] == first  # every kernel of the second round took its own object
    np.testing.assert_array_equal(added, image + image)
    np.testing.assert_array_equal(gray, cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY))
    for got, (expected, scale), taps in [
            (convolved, convolve_reference(image, mask), mask.size),
            (blurred, gaussian_reference(image, 1.5), 2 * (2 * gaussian_radius(1.5) + 1))]:
        assert_close_scaled(got, expected, scale, dtype=np.float32, ulps=filter_ulps(taps),
                            what="prepared")
