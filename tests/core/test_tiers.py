"""Tiered builds: the generic and the specialised kernels of convolve and gaussian_blur.

Each tier is forced on every device and checked against scipy.ndimage; the two
tiers must give the same sums.  Where the specialised build is the CPU variant
the generic kernel reproduces its accumulation order, and on PoCL and Oclgrind
(whose compilers contract multiply-adds alike in both builds) the results are
equal to the bit; elsewhere, and for the GPU variant's tiles, both are held to
the same rounding bound against scipy.  The policy (heat, the background
queue, the settings) is tested on its own with stand-in programs.
"""

import threading
import time
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import clkit
import clkit.kernels as ck
from clkit._build import build as _build, tiers as _tiers
from clkit._platform.runtime import simulator_in_use
from clkit._engine.conv_kernels import geometry as _geometry
from clkit._engine.filter import Filter
from _reference import (MODES, assert_close_scaled, convolve_reference, filter_ulps,
                        gaussian_radius, gaussian_reference, need_fp64, random_image,
                        reporting, result_dtype)


def both_tiers(device, fn):
    """The generic and the specialised results of ``fn()``; the quick tier (the generic program
    built without optimisation) is checked on the way to give the generic tier's values: to the
    bit on CPU drivers (checked on PoCL, Oclgrind and Intel's runtime), to float rounding on
    others, whose compilers may contract multiply-adds differently without optimisation."""
    out = {}
    for name in ("quick", "generic", "specialised"):
        with _tiers.tier(name):
            out[name] = fn()
    quick, generic = out["quick"], out["generic"]
    assert quick.dtype == generic.dtype
    if device.cl_device.type & cl.device_type.GPU:
        np.testing.assert_allclose(quick, generic, rtol=1e-5, atol=1e-6, equal_nan=True)
    else:
        np.testing.assert_array_equal(quick, generic)
    return generic, out["specialised"]


# The compilers whose contraction of multiply-adds was checked to be the same in both builds.
EXACT_PLATFORMS = ("Portable Computing Language", "Oclgrind")


def cpu_variant(device, image, mask) -> bool:
    """Whether the tiers must agree to the bit: the CPU variant, on a checked compiler."""
    f = Filter.for_mask("convolve", image, mask, "reflect", 0.0)
    kh, kw = f.corr.shape
    return device.platform in EXACT_PLATFORMS and _geometry(
        device, kh, kw, f.channels, f.acc(device).itemsize, f.two_pass(device)).variant == "cpu"


def assert_same_sums(generic, specialised, exact, expected, scale, dtype, ulps, what):
    assert generic.dtype == specialised.dtype == dtype
    if exact:
        mismatch = np.flatnonzero(generic.ravel() != specialised.ravel())
        assert mismatch.size == 0, (f"{what}: the tiers differ at {mismatch.size} elements, "
                                    f"first at {np.unravel_index(mismatch[0], generic.shape)}")
    assert_close_scaled(generic, expected, scale, dtype=dtype, ulps=ulps, what=what + ", generic")
    assert_close_scaled(specialised, expected, scale, dtype=dtype, ulps=ulps,
                        what=what + ", specialised")


MASKS = {
    "5x5": lambda rng: rng.standard_normal((5, 5)),              # 2-D, every tap used
    "sobel": lambda rng: np.outer([1, 2, 1], [1, 0, -1]),         # separable, a zero column
    "1x7": lambda rng: rng.standard_normal((1, 7)),               # one row: the 2-D kernel
    "4x6 shift": lambda rng: np.eye(4, 6),                         # even sizes, zero taps
    "17x17": lambda rng: rng.standard_normal((17, 17)),            # > 256 taps: rolled loops
    "box 9": lambda rng: np.ones((9, 9)) / 81,                    # separable, two vectors
}


@pytest.mark.parametrize("mask_name", list(MASKS))
@pytest.mark.parametrize("mode", MODES)
def test_convolve_tiers_agree(device, rng, mode, mask_name):
    mask = MASKS[mask_name](rng)
    if device.simulator and mask.size > 100:
        mask = mask[:9, :9]
    shape = (13, 37) if device.simulator else (61, 203)
    image = random_image(rng, shape, np.float32)
    generic, specialised = both_tiers(device,
        lambda: ck.convolve(image, mask, mode=mode, cval=2.5, device=device))
    expected, scale = convolve_reference(image, mask, mode, 2.5)
    assert_same_sums(generic, specialised, cpu_variant(device, image, mask), expected, scale,
                     np.float32, filter_ulps(mask.size), f"convolve {mask_name} {mode}")


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.bool_, np.float64])
@pytest.mark.parametrize("channels", [1, 3])
def test_convolve_tiers_dtypes_and_channels(device, rng, dtype, channels):
    if dtype == np.float64:
        need_fp64(device)
    shape = ((9, 23) if device.simulator else (47, 131)) + ((channels,) if channels > 1 else ())
    image = random_image(rng, shape, dtype)
    for mask in (rng.standard_normal((3, 4)), np.outer([1, 4, 6, 4, 1], [1, 2, 1]) / 64.0):
        generic, specialised = both_tiers(device,
            lambda: ck.convolve(image, mask, mode="mirror", device=device))
        expected, scale = convolve_reference(image, mask, "mirror", 0.0)
        assert_same_sums(generic, specialised, cpu_variant(device, image, mask), expected,
                         scale, result_dtype(dtype), filter_ulps(mask.size),
                         f"convolve {shape} {np.dtype(dtype).name} with {mask.shape}")


@pytest.mark.parametrize("dtype, channels", [(np.float32, 1), (np.uint8, 3), (np.float64, 1)])
def test_tiers_agree_with_the_gpu_layout(device, rng, dtype, channels):
    """On GPUs the generic kernel gives each work-item one short vector of a row (neighbours
    read neighbouring memory) and the specialised build is the GPU variant: here each device
    reports itself a GPU, so that both run on the devices CI has."""
    if dtype == np.float64:
        need_fp64(device)
    shape = ((11, 29) if device.simulator else (53, 141)) + ((channels,) if channels > 1 else ())
    image = random_image(rng, shape, dtype)
    with reporting(device, type="gpu"):
        for mask in (rng.standard_normal((5, 3)), np.outer([1, 4, 6, 4, 1], [1, 2, 1]) / 64.0):
            generic, specialised = both_tiers(device,
                lambda: ck.convolve(image, mask, mode="wrap", device=device))
            expected, scale = convolve_reference(image, mask, "wrap", 0.0)
            assert_same_sums(generic, specialised, False, expected, scale, result_dtype(dtype),
                             filter_ulps(mask.size), f"convolve {shape} {np.dtype(dtype).name} "
                             f"with {mask.shape}, GPU layout")


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("mode", ["reflect", "constant"])
def test_tiers_agree_on_masks_wider_than_an_edge_span(device, rng, channels, mode):
    """The generic kernel folds the source of a row's first and last runs into private memory
    in blocks of 64 elements: masks wider than a block (70 taps; 25 of 3 channels) take
    several."""
    shape = ((7, 41) if device.simulator else (23, 157)) + ((channels,) if channels > 1 else ())
    image = random_image(rng, shape, np.float32)
    for mask in (rng.standard_normal((1, 70 if channels == 1 else 25)),
                 np.outer([1, 2, 1], np.hanning(72)[1:-1])):
        generic, specialised = both_tiers(device,
            lambda: ck.convolve(image, mask, mode=mode, cval=-1.5, device=device))
        expected, scale = convolve_reference(image, mask, mode, -1.5)
        assert_same_sums(generic, specialised, cpu_variant(device, image, mask), expected,
                         scale, np.float32, filter_ulps(mask.size),
                         f"convolve {shape} with {mask.shape} {mode}")


def test_generic_tier_of_a_device_integer_image(device, rng):
    """A device array of another dtype is converted on the device (to_acc)."""
    image = random_image(rng, (12, 40), np.int16)
    mask = rng.standard_normal((3, 3))
    with _tiers.tier("generic"):
        result = ck.convolve(clkit.to_device(image, device=device), mask, mode="wrap",
                             device=device)
    assert isinstance(result, cl_array.Array)
    expected, scale = convolve_reference(image, mask, "wrap", 0.0)
    assert_close_scaled(result.get(), expected, scale, dtype=np.float32,
                        ulps=filter_ulps(mask.size), what="generic convolve of a device int16")


@pytest.mark.parametrize("sigma", [0.7, 2.5, (1.0, 3.0)])
def test_gaussian_tiers_agree(device, rng, sigma):
    image = random_image(rng, (15, 33) if device.simulator else (90, 160), np.float32)
    generic, specialised = both_tiers(device,
        lambda: ck.gaussian_blur(image, sigma, mode="constant", cval=1.0, device=device))
    expected, scale = gaussian_reference(image, sigma, "constant", 1.0, 4.0)
    taps = 2 * gaussian_radius(max(np.atleast_1d(sigma)), 4.0) + 1
    f = Filter.for_gaussian("gaussian_blur", image, sigma, "constant", 1.0, 4.0)
    cpu = device.platform in EXACT_PLATFORMS and \
        _geometry(device, *f.corr.shape, 1, 4, f.two_pass(device)).variant == "cpu"
    assert_same_sums(generic, specialised, cpu, expected, scale, np.float32,
                     filter_ulps(taps * taps), f"gaussian_blur sigma {sigma}")


def test_a_pending_conversion_build_gives_way_to_the_quick_one(device, rng, monkeypatch):
    """While to_acc's own build is under way, an image of another dtype is converted by the
    quick build's to_acc, ready in this process, not by a build or first launch in the call."""
    if device.type != "cpu" or device.simulator:
        pytest.skip("the quick tier serves CPU drivers")
    from clkit._engine import conv_kernels as _conv_kernels
    convert = _conv_kernels.program("convolution_generic", options=(),
                                    **_conv_kernels.convert_defines(np.dtype(np.float32)))
    monkeypatch.setattr(_tiers, "pending", lambda program, dev: program is convert)
    monkeypatch.setitem(clkit.runtime(device)._held, _conv_kernels.prime_convert,
                        {np.dtype(np.float32)})
    launched = []
    call = clkit._launch.kernel.Kernel.__call__

    def spy(self, *args, **kwargs):
        launched.append((self.name, self.program.options))
        return call(self, *args, **kwargs)

    monkeypatch.setattr(clkit._launch.kernel.Kernel, "__call__", spy)
    image = random_image(rng, (20, 50), np.uint8)
    mask = rng.standard_normal((3, 3))
    with _tiers.tier("generic"):
        got = ck.convolve(image, mask, device=device)
    conversions = [options for name, options in launched if name == "to_acc"]
    assert conversions and all("-cl-opt-disable" in o and "-DWITH_CONVERT=1" in o
                               for o in conversions), launched
    expected, scale = convolve_reference(image, mask)
    assert_close_scaled(got, expected, scale, dtype=np.float32, ulps=filter_ulps(9),
                        what="generic convolve of uint8, converted by the quick build")


def test_auto_tier_builds_a_hot_variant_in_the_background(device, rng, cache_dir):
    """Calls answer with the generic kernel until the variant is hot, then it is built
    in the background and the next calls use it, with the same results.  (cache_dir drops
    what the runtime holds, its tier state included: the variant starts cold.)"""
    rt = clkit.runtime(device)
    image = random_image(rng, (20, 50), np.float32)
    mask = rng.standard_normal((3, 5))
    hot = int(_tiers.HOT_SCORE)
    results = [ck.convolve(image, mask, device=device) for _ in range(hot)]
    # No second thread while the Oclgrind simulator is in use: the call that heats it builds it
    if device.simulator or simulator_in_use():
        assert (_tiers.stats(rt)["generic"], _tiers.stats(rt)["specialised"]) == (hot - 1, 1)
    else:
        assert _tiers.stats(rt)["generic"] == hot
        assert _tiers.wait_idle(timeout=600)
    assert _tiers.stats(rt)["built"] == 1
    before = _tiers.stats(rt)["specialised"]
    results.append(ck.convolve(image, mask, device=device))
    assert _tiers.stats(rt)["specialised"] == before + 1
    expected, scale = convolve_reference(image, mask, "reflect", 0.0)
    for r in results:
        assert_close_scaled(r, expected, scale, dtype=np.float32, ulps=filter_ulps(mask.size),
                            what="convolve across the tiers")
    if cpu_variant(device, image, mask):
        assert all(np.array_equal(results[0], r) for r in results[1:])


def test_background_builds_off_waits_for_the_specialised_build(device, rng, cache_dir,
                                                                monkeypatch):
    monkeypatch.setenv("CLKIT_BACKGROUND_BUILDS", "0")
    rt = clkit.runtime(device)
    image = random_image(rng, (8, 30), np.float32)
    ck.convolve(image, rng.standard_normal((2, 3)), device=device)
    assert _tiers.stats(rt)["specialised"] == 1 and _tiers.stats(rt)["generic"] == 0


def test_warmup_builds_variants_ahead(device, rng, cache_dir):
    rt = clkit.runtime(device)
    mask = np.outer([1, 2, 1], [-1, 0, 1])
    built = clkit.kernels.warmup(masks=[mask], sigmas=[1.5], dtypes=["uint8"], modes=["nearest"],
                         device=device)
    assert [line.split(":")[0] for line in built] == [
        "generic float32", "convolve 3x3 uint8 nearest", "gaussian_blur sigma 1.5 uint8 nearest"]
    image = random_image(rng, (16, 24), np.uint8)
    before = _tiers.stats(rt)
    ck.convolve(image, mask, mode="nearest", device=device)
    ck.gaussian_blur(image, 1.5, mode="nearest", device=device)
    after = _tiers.stats(rt)
    assert after["specialised"] == before["specialised"] + 2
    assert after["generic"] == before["generic"]


# -- the policy, with stand-in programs -------------------------------------------------------

class FakeProgram:
    """What _tiers needs of a Program: a name, options and a build that can be watched."""

    def __init__(self, name, fail=False, gate=None):
        self.origin, self.options, self.source = name, (), None
        self.fail, self.gate, self.builds = fail, gate, 0

    def build(self, device):
        if self.gate is not None:
            self.gate.wait(timeout=60)
        if self.fail:
            raise clkit.BuildError("no", file=self.origin, device=device, options=(), log="")
        self.builds += 1


def start_blocking_build(gate, rt):
    """Occupy the background thread with a build that waits for ``gate``."""
    _tiers.use_specialised(FakeProgram("blocker", gate=gate), rt,
                           work=2 * _tiers.HOT_SCORE * _tiers.LARGE_WORK)
    deadline = time.monotonic() + 60
    while not _tiers._builder._busy:
        assert time.monotonic() < deadline, "the background thread never started the build"
        time.sleep(0.01)


class FakeDevice:
    def __init__(self, type="cpu", simulator=False):
        self.type, self.simulator = type, simulator


class FakeRuntime:
    """What _tiers needs of a Runtime: its device, the tier state it holds, whether its context
    was lost.  Each test has a new one, so that its variants start cold."""

    def __init__(self, device="dev"):
        self.device, self.lost, self.variants = device, None, None


@pytest.fixture
def rt(monkeypatch):
    """A stand-in runtime, and the policy's settings."""
    monkeypatch.setattr(_build, "available", lambda source, options, device: False)
    # the policy's own devices: no simulator beside them keeps the background thread away
    monkeypatch.setattr(_tiers, "simulator_in_use", lambda: False)
    monkeypatch.delenv("CLKIT_BACKGROUND_BUILDS", raising=False)
    monkeypatch.delenv("CLKIT_TIER", raising=False)
    _tiers.wait_idle()
    yield FakeRuntime()
    _tiers.wait_idle()


def test_heat_queues_a_variant_after_a_few_calls(rt):
    prg = FakeProgram("a")
    primed = []
    for _ in range(int(_tiers.HOT_SCORE) - 1):
        assert not _tiers.use_specialised(prg, rt, prime=lambda: primed.append(1))
    assert _tiers.wait_idle(timeout=10) and prg.builds == 0
    assert not _tiers.use_specialised(prg, rt, prime=lambda: primed.append(1))
    assert _tiers.wait_idle(timeout=60)
    assert prg.builds == 1 and primed == [1]
    assert _tiers.use_specialised(prg, rt)
    assert _tiers.stats(rt)["built"] == 1


def test_prebuild_builds_once_in_the_background(rt, monkeypatch):
    prg = FakeProgram("likely")
    _tiers.prebuild(prg, rt)
    _tiers.prebuild(prg, rt)  # known already: queued once
    assert _tiers.wait_idle(timeout=60) and prg.builds == 1
    assert (_tiers.stats(rt)["prebuilt"], _tiers.stats(rt)["built"]) == (1, 0)
    assert _tiers.use_specialised(prg, rt)  # built: ready for the first call that needs it
    off = FakeProgram("off")
    monkeypatch.setenv("CLKIT_BACKGROUND_BUILDS", "0")
    _tiers.prebuild(off, rt)
    assert _tiers.wait_idle(timeout=60) and off.builds == 0


def test_the_quick_tier_serves_small_calls_until_the_optimised_build_is_ready(rt,
                                                                               monkeypatch):
    prg = FakeProgram("generic")
    monkeypatch.setattr(_build, "available", lambda source, options, device: prg.builds > 0)
    cpu = FakeRuntime(FakeDevice())
    small, large = _tiers.QUICK_WORK / 2, _tiers.QUICK_WORK * 2
    assert _tiers.use_quick(prg, cpu, work=small)
    assert not _tiers.use_quick(prg, cpu, work=large)  # a large call waits for the build
    assert not _tiers.use_quick(prg, FakeRuntime(FakeDevice("gpu")), work=small)
    assert not _tiers.use_quick(prg, FakeRuntime(FakeDevice(simulator=True)),
                                 work=small)
    waited = []

    class Event:
        def wait(self):
            waited.append(prg.builds)

    _tiers.prebuild(prg, cpu, first=True, after=Event())
    assert _tiers.wait_idle(timeout=60)
    assert waited == [0] and prg.builds == 1  # the event first, then the build
    assert not _tiers.use_quick(prg, cpu, work=small)
    assert _tiers.stats(cpu)["quick"] == 1
    with _tiers.tier("quick"):
        assert _tiers.use_quick(prg, cpu, work=large)
        assert not _tiers.use_specialised(prg, cpu)


def test_the_quick_tier_serves_until_the_build_here_has_launched(rt, monkeypatch):
    # The helper process writes the disk cache when it has built, before its first launch has
    # compiled the kernels (PoCL: half a second): a call in between must not take the
    # optimised build, whose first launch would then compile them in the call.
    gate = threading.Event()
    start_blocking_build(gate, rt)
    prg = FakeProgram("generic")
    cpu = FakeRuntime(FakeDevice())
    _tiers.prebuild(prg, cpu, first=True)
    monkeypatch.setattr(_build, "available", lambda source, options, device: True)
    try:
        assert _tiers.use_quick(prg, cpu, work=1.0)  # in the disk cache, still queued here
    finally:
        gate.set()
    assert _tiers.wait_idle(timeout=60) and prg.builds == 1
    assert not _tiers.use_quick(prg, cpu, work=1.0)  # built and launched here


@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_the_first_plan_queues_to_acc_and_on_cpus_the_generic_program(device, monkeypatch,
                                                                       kind):
    # to_acc everywhere (a GPU's first image of another dtype waited for it); the generic
    # program on CPU drivers only (a GPU's first convolution builds it in the call)
    from _reference import reporting
    from clkit._engine import filter as _filter
    queued = []
    monkeypatch.setattr(_tiers, "prebuild", lambda program, dev, prime=None, first=False,
                        after=None: queued.append(program.options) or True)
    with reporting(device, type=kind):
        _filter.prebuild_generic(device)
    converts = [o for o in queued if "-DCONVERT=1" in o]
    generic = [o for o in queued if "-DCONVERT=1" not in o]
    if device.simulator:
        assert queued == []
    else:
        assert len(converts) == 1 and len(generic) == (kind == "cpu"), queued
        assert queued[-1] in converts  # after the generic program, which large calls wait for


def test_a_first_prebuild_goes_ahead_of_hot_variants(rt):
    gate = threading.Event()
    order = []
    large = 2 * _tiers.HOT_SCORE * _tiers.LARGE_WORK
    start_blocking_build(gate, rt)
    _tiers.use_specialised(FakeProgram("hot"), rt, work=large, prime=lambda: order.append("hot"))
    _tiers.prebuild(FakeProgram("later"), rt, prime=lambda: order.append("later"))
    _tiers.prebuild(FakeProgram("first"), rt, prime=lambda: order.append("first"), first=True)
    gate.set()
    assert _tiers.wait_idle(timeout=60)
    assert order == ["first", "hot", "later"]


def test_a_driver_without_threads_builds_in_the_call(rt):
    prg = FakeProgram("here")
    for _ in range(int(_tiers.HOT_SCORE) - 1):
        assert not _tiers.use_specialised(prg, rt, in_background=False)
    assert _tiers.use_specialised(prg, rt, in_background=False)
    assert prg.builds == 1 and _tiers._builder._thread is None or not _tiers._builder._busy
    assert _tiers.stats(rt)["specialised"] == 1


def test_a_lost_context_takes_its_tier_state_along(rt):
    """A variant queued for a context lost since is not built, and the tier state goes with
    the runtime that held it."""
    gate = threading.Event()
    start_blocking_build(gate, rt)
    doomed = FakeRuntime()
    prg = FakeProgram("doomed")
    assert not _tiers.use_specialised(prg, doomed, work=2 * _tiers.HOT_SCORE * _tiers.LARGE_WORK)
    assert _tiers.stats(doomed)["generic"] == 1
    doomed.lost = "lost by the test"
    gate.set()
    assert _tiers.wait_idle(timeout=60)
    assert prg.builds == 0 and _tiers.stats(doomed)["built"] == 0


def test_a_large_input_is_hot_at_once(rt):
    prg = FakeProgram("big")
    assert not _tiers.use_specialised(prg, rt, work=2 * _tiers.HOT_SCORE * _tiers.LARGE_WORK)
    assert _tiers.wait_idle(timeout=60)
    assert prg.builds == 1


def test_the_hottest_waiting_variant_is_built_first(rt):
    gate = threading.Event()
    warm, hot = FakeProgram("warm"), FakeProgram("hot")
    order = []
    large = 2 * _tiers.HOT_SCORE * _tiers.LARGE_WORK
    start_blocking_build(gate, rt)
    _tiers.use_specialised(warm, rt, work=large, prime=lambda: order.append("warm"))
    _tiers.use_specialised(hot, rt, work=large, prime=lambda: order.append("hot"))
    _tiers.use_specialised(hot, rt, work=large)  # hotter while it waits
    gate.set()
    assert _tiers.wait_idle(timeout=60)
    assert order == ["hot", "warm"]


def test_the_queue_is_bounded(rt, monkeypatch):
    monkeypatch.setattr(_tiers, "MAX_PENDING", 2)
    gate = threading.Event()
    large = 2 * _tiers.HOT_SCORE * _tiers.LARGE_WORK
    start_blocking_build(gate, rt)
    waiting = [FakeProgram(f"p{i}") for i in range(4)]
    for i, prg in enumerate(waiting):
        _tiers.use_specialised(prg, rt, work=large * (1 + i))
    gate.set()
    assert _tiers.wait_idle(timeout=60)
    assert [p.builds for p in waiting] == [0, 0, 1, 1]  # the coolest were dropped
    assert _tiers.stats(rt)["dropped"] == 2


def test_a_failed_background_build_warns_and_keeps_the_generic_tier(rt):
    prg = FakeProgram("broken", fail=True)
    with pytest.warns(RuntimeWarning, match="generic kernel keeps serving it"):
        _tiers.use_specialised(prg, rt, work=2 * _tiers.HOT_SCORE * _tiers.LARGE_WORK)
        assert _tiers.wait_idle(timeout=60)
    assert not _tiers.use_specialised(prg, rt)
    assert _tiers.stats(rt)["failed"] == 1


def test_settings(rt, monkeypatch):
    prg = FakeProgram("s")
    assert clkit.background_builds() is True
    previous = clkit.background_builds(False)
    try:
        assert _tiers.use_specialised(prg, rt)
    finally:
        clkit.background_builds(previous)
    monkeypatch.setenv("CLKIT_BACKGROUND_BUILDS", "off")
    assert clkit.background_builds() is False
    monkeypatch.setenv("CLKIT_TIER", "generic")
    assert not _tiers.use_specialised(prg, rt)
    monkeypatch.setenv("CLKIT_TIER", "fast")
    with pytest.raises(clkit.ArgumentValueError, match="CLKIT_TIER='fast' is not a tier"):
        _tiers.use_specialised(prg, rt)
    with pytest.raises(ValueError, match="unknown tier 'slow'"):
        with _tiers.tier("slow"):
            pass
    with pytest.raises(TypeError, match="takes True or False"):
        clkit.background_builds("yes")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert prg.builds == 0


# -- clkit warmup --------------------------------------------------------------------------------

def test_warmup_command(device, capsys):
    from clkit.cli import main
    assert main(["warmup", "--device", device.id, "--mask", "sobel-x", "--mode", "wrap"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{device}:"
    assert [line.split(":")[0].strip() for line in lines[1:]] == [
        "generic float32", "convolve 3x3 float32 wrap"]


def test_warmup_command_bad_input(capsys):
    from clkit.cli import main
    assert main(["warmup", "--sigma", "-1"]) == 2
    assert "sigma must be 0 or more, not -1" in capsys.readouterr().err
    with pytest.raises(TypeError, match="image dtype complex64 is not one convolve takes"):
        clkit.kernels.warmup(dtypes=["complex64"])
    with pytest.raises(ValueError, match="unknown mode 'edge'"):
        clkit.kernels.warmup(modes=["edge"])
    with pytest.raises(ValueError, match=r"a mask must be a non-empty 2-D array; got shape \(3,\)"):
        clkit.kernels.warmup(masks=[np.ones(3)])
    with pytest.raises(ValueError, match="masks must be 2-D arrays of numbers"):
        clkit.kernels.warmup(masks=["box:3"])


def test_after_launch_waits_for_the_marker_and_survives_a_dead_queue(monkeypatch):
    """A build waiting for a call's kernels waits until the call has launched them; a launch
    whose queue died (the marker cannot be enqueued) releases it, and the caller's own error
    is the one raised."""
    def dead(queue):
        raise cl.LogicError("clEnqueueMarker", cl.status_code.INVALID_COMMAND_QUEUE, "dead")

    monkeypatch.setattr(_tiers.cl, "enqueue_marker", dead)
    after = _tiers.AfterLaunch()
    waiter = threading.Thread(target=after.wait, daemon=True)
    waiter.start()
    time.sleep(0.05)
    assert waiter.is_alive()  # nothing launched yet
    after.launched(object())
    waiter.join(10)
    assert not waiter.is_alive()
