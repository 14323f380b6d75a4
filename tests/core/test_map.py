"""clkit.map: one library function over a batch of images, several in flight."""

import sys
import threading
import tracemalloc
import weakref

import numpy as np
import pytest
import scipy.ndimage

import clkit
from clkit import kernels as ck

from _reference import (assert_close_scaled, convolve_reference, filter_ulps, gray_reference,
                        random_image, raises_argument_error)


def small(device, n):
    """An image side: ``n`` pixels, a few on the simulator."""
    return max(3, n // 8) if device.simulator else n


def mixed_rgb_batch(rng, device, count=9):
    """RGB images whose shapes and dtypes differ from one to the next."""
    images = []
    for i in range(count):
        shape = (small(device, 40) + i, small(device, 56) + 3 * i % 7, 3 + i % 2)
        images.append(random_image(rng, shape, np.uint8) if i % 3 else
                      rng.random(shape, dtype=np.float32))
    return images


def test_results_equal_single_calls_in_input_order(device, rng):
    images = mixed_rgb_batch(rng, device)
    got = list(clkit.map(ck.grayscale, images, device=device))
    assert len(got) == len(images)
    for image, result in zip(images, got):
        assert result.shape == image.shape[:2] and result.dtype == image.dtype
        np.testing.assert_array_equal(result, ck.grayscale(image, device=device))
        expected = gray_reference(image, "bt601")
        if image.dtype == np.uint8:
            assert np.abs(result - expected).max() <= 1
        else:
            assert_close_scaled(result, expected, gray_reference(np.abs(image), "bt601"))


def test_args_and_kwargs_reach_every_call(device, rng):
    mask = rng.standard_normal((3, 5)).astype(np.float32)
    images = (rng.random((small(device, 30) + i, small(device, 20)), dtype=np.float32)
              for i in range(6))  # a generator: read as the batch goes
    kept = []

    def remember(image, *args, **kwargs):
        kept.append(image)
        return ck.convolve(image, *args, **kwargs)

    got = list(clkit.map(remember, images, mask, mode="wrap", device=device))
    assert len(got) == 6
    for image, result in zip(kept, got):
        expected, scale = convolve_reference(image, mask, mode="wrap")
        assert_close_scaled(result, expected, scale, ulps=filter_ulps(15), what="convolve")
        np.testing.assert_array_equal(result, ck.convolve(image, mask, mode="wrap",
                                                          device=device))


def test_pinned_images_give_the_same_results(device, rng):
    images = [clkit.pinned_like(rng.random((small(device, 33), small(device, 47)),
                                           dtype=np.float32), device=device) for _ in range(5)]
    got = list(clkit.map(ck.gaussian_blur, images, 1.5, device=device))
    for image, result in zip(images, got):
        np.testing.assert_array_equal(result, ck.gaussian_blur(np.array(image), 1.5,
                                                               device=device))


def test_device_arrays_give_device_arrays_on_the_runtime_queue(device, rng):
    hosts = [rng.random((small(device, 24), small(device, 32)), dtype=np.float32)
             for _ in range(4)]
    mask = np.ones((3, 3), np.float32) / 9
    on_device = [clkit.to_device(h, device=device) for h in hosts]
    got = list(clkit.map(ck.convolve, on_device, mask, device=device))
    rt = clkit.runtime(device)
    for host, result in zip(hosts, got):
        assert isinstance(result, clkit.Array) and result.queue is rt.queue
        expected, scale = convolve_reference(host, mask)
        assert_close_scaled((result * 2).get() / 2, expected, scale, ulps=filter_ulps(9))


def test_an_error_names_the_image_and_leaves_earlier_results_whole(device, rng):
    images = mixed_rgb_batch(rng, device, 8)
    images[5] = images[5][..., 0]  # 2-D: not an RGB image
    done = []
    with pytest.raises(ValueError, match=r"image 5 of the batch .*HxWx3") as caught:
        for result in clkit.map(ck.grayscale, images, device=device):
            done.append(result)
    assert isinstance(caught.value, clkit.ClkitError)
    assert len(done) == 5
    for image, result in zip(images, done):
        np.testing.assert_array_equal(result, ck.grayscale(image, device=device))


def test_an_input_that_fails_ends_the_batch_after_the_images_before_it(device):
    def frames():
        for i in range(4):
            yield np.full((small(device, 16), small(device, 16)), i, np.float32)
        raise OSError("frame 4 is unreadable")

    done = []
    with pytest.raises(OSError, match="image 4 of the batch .*frame 4 is unreadable"):
        for result in clkit.map(ck.gaussian_blur, frames(), 1.0, device=device):
            done.append(result)
    assert [float(np.median(r)) for r in done] == pytest.approx([0, 1, 2, 3], abs=1e-5)


class FrameError(Exception):
    def __init__(self, code, detail):
        super().__init__(f"code {code}: {detail}")
        self.code = code


@pytest.mark.parametrize("make", [lambda: FrameError(42, "bad frame"),
                                  lambda: FileNotFoundError(2, "No such file", "frame.png")],
                         ids=["own type", "errno"])
def test_an_error_keeps_its_type_and_attributes(device, make):
    error = make()

    def fails_on_the_third(image, device):
        if image[0] == 2:
            raise error
        return image

    images = [np.full(4, i, np.float32) for i in range(5)]
    with pytest.raises(type(error)) as caught:
        list(clkit.map(fails_on_the_third, images, device=device))
    assert caught.value is error and caught.value.args[-1] == error.args[-1]
    if isinstance(error, FrameError):
        assert error.code == 42 and str(error) == "image 2 of the batch (counting from 0): " \
                                                  "code 42: bad frame"
    else:
        assert (error.errno, error.filename) == (2, "frame.png")
        if sys.version_info >= (3, 11):
            assert error.__notes__ == ["image 2 of the batch (counting from 0)"]


def test_a_batch_of_200_keeps_only_a_few_images_alive(device, rng):
    side = small(device, 64)
    alive = {"now": 0, "most": 0, "made": 0}
    lock = threading.Lock()

    def gone():
        with lock:
            alive["now"] -= 1

    def track(array):
        with lock:
            alive["now"] += 1
            alive["most"] = max(alive["most"], alive["now"])
        weakref.finalize(array, gone)
        return array

    def images():
        for i in range(200):
            alive["made"] += 1
            yield track(np.full((side, side, 3), i % 256, np.uint8))

    def gray(image, device):
        return track(ck.grayscale(image, device=device))

    seen = 0
    for i, result in enumerate(clkit.map(gray, images(), device=device)):
        assert alive["made"] - i <= 13  # images read ahead of the one consumed
        assert int(result[0, 0]) == i % 256
        seen += 1
        del result
    assert seen == 200
    assert alive["most"] <= 2 * 14  # inputs and results of the images in flight


def test_a_batch_of_200_large_images_runs_in_bounded_memory(device):
    if device.simulator:
        pytest.skip("megabytes per image are too slow on the simulator")
    image_bytes = 512 * 512 * 3

    def images():
        for i in range(200):
            yield np.full((512, 512, 3), i % 256, np.uint8)

    tracemalloc.start()
    try:
        for i, result in enumerate(clkit.map(ck.grayscale, images(), device=device)):
            assert int(result[-1, -1]) == i % 256
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * image_bytes  # a few images in flight; all 200 would be 150 MiB


def test_all_spreads_images_over_devices_with_equal_results(rng):
    targets = [d for d in clkit.devices() if not d.simulator]
    used = []

    def gray(image, device):
        used.append(device)
        return ck.grayscale(image, device=device)

    images = [random_image(rng, (30 + i, 41, 3), np.uint8) for i in range(12)]
    got = list(clkit.map(gray, images, device="all"))
    assert set(used) <= set(targets) and len(used) == 12
    for image, result in zip(images, got):
        np.testing.assert_array_equal(result, ck.grayscale(image, device=targets[0]))


def test_a_list_of_devices_uses_each(rng):
    targets = clkit.devices()
    if len(targets) < 2:
        pytest.skip("one device only")
    used = set()

    def blur(image, sigma, device):
        used.add(device)
        return ck.gaussian_blur(image, sigma, device=device)

    images = [rng.random((9, 11), dtype=np.float32) for _ in range(2 * len(targets))]
    got = list(clkit.map(blur, images, 0.8, device=targets))
    assert used == set(targets)
    for image, result in zip(images, got):
        np.testing.assert_allclose(result, ck.gaussian_blur(image, 0.8, device=targets[0]),
                                   rtol=0, atol=1e-6)


def test_lanes_run_on_queues_of_their_own(device, rng):
    if device.simulator:
        pytest.skip("the simulator runs a batch one image at a time")
    queues = set()

    def gray(image, device):
        queues.add(id(clkit.runtime(device).queue))
        return ck.grayscale(image, device=device)

    images = [random_image(rng, (64, 64, 3), np.uint8) for _ in range(24)]
    list(clkit.map(gray, images, device=device))
    assert id(clkit.runtime(device).queue) not in queues and len(queues) >= 1


@pytest.mark.parametrize("one_queue", [True, False], ids=["one queue", "a queue each"])
def test_lanes_on_one_queue_give_the_same_results(device, rng, monkeypatch, one_queue):
    """Where the driver cannot run one kernel on two queues at once (PoCL 4 and 5), lanes
    take turns on one queue: images of several sizes, so that the grids differ."""
    if device.simulator:
        pytest.skip("the simulator runs a batch one image at a time")
    monkeypatch.setattr(clkit._launch.map, "one_launch_at_a_time", lambda d: one_queue)
    monkeypatch.setitem(clkit.runtime(device)._held, clkit._launch.map._queues, [])
    queues = set()

    def blur(image, device):
        queues.add(id(clkit.runtime(device).queue))
        return ck.gaussian_blur(image, 1.2, device=device)

    images = [rng.random((12 + 7 * i, 30 + 5 * i), dtype=np.float32) for i in range(10)]
    for image, result in zip(images, clkit.map(blur, images, device=device)):
        assert_close_scaled(result, scipy.ndimage.gaussian_filter(image.astype(np.float64), 1.2),
                            1.0, ulps=64, what=f"image of shape {image.shape}")
    assert len(queues) == 1 if one_queue else 1 <= len(queues) <= clkit._launch.map.LANES["gpu"], queues


def test_leaving_the_loop_early_stops_the_batch(device, rng):
    images = [random_image(rng, (small(device, 20), small(device, 20), 3), np.uint8)
              for _ in range(50)]
    batch = clkit.map(ck.grayscale, images, device=device)
    first = next(batch)
    batch.close()
    np.testing.assert_array_equal(first, ck.grayscale(images[0], device=device))
    assert not [t for t in threading.enumerate() if t.name.startswith("clkit-map")]


def test_bad_arguments_say_what_to_pass():
    with raises_argument_error("function must be callable"):
        clkit.map("grayscale", [])
    with raises_argument_error("images must be an iterable"):
        clkit.map(ck.grayscale, 3)
    assert list(clkit.map(ck.grayscale, [])) == []


def test_on_a_gpu_each_image_stays_on_its_lane(discrete, rng, monkeypatch):
    """A lane's image is not cut into tiles on the device's shared queues: the lane's queue only."""
    from clkit._memory import transfer as _transfer
    device, staged = discrete
    lane_queues = {id(q) for q in clkit._launch.map._queues(clkit.runtime(device), 8)}
    used = []
    staged_upload = _transfer.Staging.upload

    def upload(self, queue, *args, **kwargs):
        used.append(id(queue))
        return staged_upload(self, queue, *args, **kwargs)

    monkeypatch.setattr(_transfer.Staging, "upload", upload)
    mask = rng.standard_normal((3, 3)).astype(np.float32)
    images = [rng.random((1000 + i, 600), dtype=np.float32) for i in range(6)]  # 2.4 MB each
    for image, result in zip(images, clkit.map(ck.convolve, images, mask, device=device)):
        expected, scale = convolve_reference(image, mask)
        assert_close_scaled(result, expected, scale, ulps=filter_ulps(9), what="convolve")
    assert len(used) == 6 and set(used) <= lane_queues
    assert staged["upload"] == 6
