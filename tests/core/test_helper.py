"""The helper process that makes background builds on CPU drivers (clkit/_build/helper.py).

Its protocol is tested with jobs from the standard library (one that answers, one that raises,
one that ends the helper, one that hangs). A whole cold start, whose background builds go
through the helper, runs in a new process on each device (with empty caches, so that the
builds are real) and is checked against scipy.
"""

import functools
import gc
import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
import types
import warnings

import numpy as np
import pytest

from clkit._platform import devices as _devices
from clkit._build import helper as _helper, tiers as _tiers
from clkit._errors import DeviceNotFoundError
from _reference import (assert_close_scaled, convolve_reference, filter_ulps, gaussian_radius,
                        gaussian_reference)

CPU = types.SimpleNamespace(type="cpu", simulator=False)


@pytest.fixture
def helper(monkeypatch, tmp_path):
    """A helper of this test's own, ended after it; no background build uses it meanwhile."""
    monkeypatch.setenv("CLKIT_BACKGROUND_BUILDS", "0")
    assert _tiers.wait_idle(600)
    monkeypatch.setenv("CLKIT_CACHE_DIR", str(tmp_path / "cache"))
    _helper.close()
    monkeypatch.setitem(_helper._state, "failed", False)
    yield _helper
    _helper.close()


def test_a_device_pickles_by_reference(device):
    assert pickle.loads(pickle.dumps(device)) is device
    with pytest.raises(DeviceNotFoundError, match="no device 99:0"):
        _devices._by_reference("99:0", device.name)
    with pytest.raises(DeviceNotFoundError):
        _devices._by_reference(device.id, device.name + " of another make")


def test_what_the_helper_takes(helper, monkeypatch):
    job = functools.partial(int, "3")
    assert pickle.loads(helper.takes(CPU, job))() == 3
    assert helper.takes(types.SimpleNamespace(type="gpu", simulator=False), job) is None
    assert helper.takes(types.SimpleNamespace(type="cpu", simulator=True), job) is None
    assert helper.takes(CPU, lambda: 3) is None  # not picklable: built in this process
    monkeypatch.setenv("CLKIT_CACHE", "0")  # nothing the helper builds would reach this process
    assert helper.takes(CPU, job) is None


def test_jobs_that_answer_fail_or_end_the_helper(helper):
    assert helper.run(helper.takes(CPU, functools.partial(int, "3")))
    first = helper._state["process"]
    assert not helper.run(helper.takes(CPU, functools.partial(int, "x")))  # raises there
    assert helper._state["process"] is first and first.poll() is None
    assert not helper.run(helper.takes(CPU, functools.partial(os._exit, 3)))  # a driver's crash
    assert first.wait(10) == 3 and helper._state["process"] is None
    assert helper.run(helper.takes(CPU, functools.partial(int, "4")))  # a new helper
    assert helper._state["process"] is not first and not helper._state["failed"]


def test_a_build_past_the_timeout_stops_the_helper(helper, monkeypatch):
    monkeypatch.setattr(helper, "TIMEOUT", 1.0)
    start = time.perf_counter()
    assert not helper.run(helper.takes(CPU, functools.partial(time.sleep, 60)))
    assert time.perf_counter() - start < 30
    assert helper.run(helper.takes(CPU, functools.partial(int, "5")))


def test_a_helper_that_cannot_start_leaves_the_builds_here(helper, monkeypatch):
    monkeypatch.setattr(helper, "_MAIN", "raise SystemExit(1)")
    assert not helper.run(helper.takes(CPU, functools.partial(int, "3")))
    assert helper._state["failed"] and helper.takes(CPU, functools.partial(int, "3")) is None


def test_a_new_cache_folder_gets_a_new_helper(helper, monkeypatch, tmp_path):
    assert helper.run(helper.takes(CPU, functools.partial(int, "3")))
    first = helper._state["process"]
    monkeypatch.setenv("CLKIT_CACHE_DIR", str(tmp_path / "another"))
    assert helper.run(helper.takes(CPU, functools.partial(int, "3")))
    assert helper._state["process"] is not first and first.wait(10) == 0


EXIT_WHILE_BUILDING = textwrap.dedent("""
    import functools, subprocess, sys, time, types
    from clkit._build import helper as _helper, tiers as _tiers
    # a background build that takes 20 s in the helper and then leaves a file, as a build
    # leaves its binary in the disk cache
    job = functools.partial(subprocess.run, ["sh", "-c", f"sleep 20; touch {sys.argv[1]}"])
    device = types.SimpleNamespace(type="cpu", simulator=False)
    program = types.SimpleNamespace(build=lambda device: None, origin="a slow build",
                                    options=())
    home = _tiers.Variants(types.SimpleNamespace(device=device, lost=None, variants=None))
    with _tiers._lock:
        variant = home.add(program)
        variant.job, variant.state = (program, device, job, None), "queued"
        _tiers._builder.submit(variant)
    while not _helper.at_work():
        time.sleep(0.01)
    time.sleep(1)
    print(_helper._state["process"].pid, flush=True)
""")


def test_a_process_that_ends_leaves_the_helper_to_finish_its_build(tmp_path):
    marker = tmp_path / "built"
    env = dict(os.environ, CLKIT_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("CLKIT_BACKGROUND_BUILDS", None)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", EXIT_WHILE_BUILDING, str(marker)], env=env,
                         capture_output=True, text=True, timeout=120)
    ended = time.perf_counter() - start
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert ended < 15, f"the process waited for its helper's build: {ended:.1f} s"
    assert not marker.exists()
    pid = int(out.stdout.split()[-1])
    # the helper finishes the build, then ends; at idle priority it can wait minutes for a core
    # while a parallel test run keeps every core busy
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if marker.exists() and not os.path.exists(f"/proc/{pid}"):
            break
        time.sleep(0.1)
    assert marker.exists() and not os.path.exists(f"/proc/{pid}")


COLD_START = textwrap.dedent("""
    import json, sys
    import numpy as np
    import clkit, clkit.kernels as ck
    from clkit._build import helper as _helper, tiers as _tiers
    device = clkit.select(sys.argv[1])
    rng = np.random.default_rng(5)
    image = rng.random((40, 70), dtype=np.float32)
    mask = rng.standard_normal((5, 5))
    results = [ck.convolve(image, mask, device=device) for _ in range(int(_tiers.HOT_SCORE))]
    results.append(ck.convolve(image.astype(np.uint8), mask, device=device))
    assert _tiers.wait_idle(600)
    results.append(ck.convolve(image, mask, device=device))
    np.savez(sys.argv[2], image=image, mask=mask, *results)
    print(json.dumps(dict(_tiers.stats(), helper=_helper.builds())))
""")


def cold_process(script, device, result):
    """The tier counts printed by ``script`` run in a new process on ``device`` alone, with
    empty driver and clkit caches beside ``result`` (the file it writes its results to)."""
    if device.simulator:
        pytest.skip("beside the simulator background builds are off")
    folder = result.parent
    env = dict(os.environ, CLKIT_VISIBLE_DEVICES=device.id, CLKIT_CACHE_DIR=str(folder / "c"),
               POCL_CACHE_DIR=str(folder / "p"), CUDA_CACHE_PATH=str(folder / "n"))
    env.pop("CLKIT_TIER", None), env.pop("CLKIT_BACKGROUND_BUILDS", None)
    out = subprocess.run([sys.executable, "-c", script, device.id, str(result)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def test_a_cold_start_builds_through_the_helper_on_cpu_drivers(device, tmp_path):
    stats = cold_process(COLD_START, device, tmp_path / "r.npz")
    # the hot variant, and the generic programs queued by the first call
    assert stats["built"] == 1 and stats["prebuilt"] >= 1 and stats["failed"] == 0, stats
    background = stats["built"] + stats["prebuilt"]
    assert stats["helper"] == (background if device.type == "cpu" else 0), stats
    assert stats["specialised"] == 1, stats  # the last call
    saved = np.load(tmp_path / "r.npz")
    image, mask = saved["image"], saved["mask"]
    *results, last = [saved[f"arr_{i}"] for i in range(len(saved.files) - 2)]
    for got, source in [(r, image) for r in results[:-1]] + [(results[-1], image.astype(
            np.uint8)), (last, image)]:
        expected, scale = convolve_reference(source, mask, "reflect", 0.0)
        assert_close_scaled(got, expected, scale, dtype=np.float32, ulps=filter_ulps(mask.size),
                            what="convolve, cold")
    if device.platform == "Portable Computing Language":  # the tiers' sums agree to the bit
        assert all(np.array_equal(r, last) for r in results[:-1])


AHEAD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import clkit, clkit.kernels as ck
    from clkit._build import tiers as _tiers
    device = clkit.select(sys.argv[1])
    x = np.arange(1000, dtype=np.float32)
    ck.vector_add(x, x, device=device)  # the process's first library call on the device
    assert _tiers.wait_idle(600)
    ahead = _tiers.stats()["prebuilt"]
    image = np.random.default_rng(2).random((40, 70), dtype=np.float32)
    np.save(sys.argv[2], ck.gaussian_blur(image, 1.5, device=device))
    print(json.dumps(dict(_tiers.stats(), ahead=ahead)))
""")


def test_the_generic_convolution_is_built_ahead_on_cpu_drivers(device, tmp_path):
    """At the first library call on a CPU driver the optimised generic program (and to_acc) is
    built in the background, so that the first blur runs it rather than the quick tier; on a
    GPU only to_acc, for the first image of another dtype."""
    stats = cold_process(AHEAD, device, tmp_path / "r.npy")
    # the generic program and its conversion of other dtypes
    assert stats["ahead"] == (2 if device.type == "cpu" else 1) and stats["failed"] == 0, stats
    assert stats["quick"] == 0 and stats["generic"] == 1, stats  # the optimised build ran
    image = np.random.default_rng(2).random((40, 70), dtype=np.float32)
    expected, scale = gaussian_reference(image, 1.5)
    assert_close_scaled(np.load(tmp_path / "r.npy"), expected, scale,
                        ulps=filter_ulps(2 * (2 * gaussian_radius(1.5) + 1)), what="blur")


class _IdleHelper:
    """Stands for an idle helper process: records whether it was told to end and waited for."""

    def __init__(self):
        self.stdin = types.SimpleNamespace(closed=False)
        self.stdin.close = lambda: setattr(self.stdin, "closed", True)
        self.stdout = types.SimpleNamespace(close=lambda: None)
        self.waited, self.pid = [], -1

    def wait(self, timeout=None):
        self.waited.append(timeout)
        return 0


def test_closing_at_exit_ends_an_idle_helper_without_waiting_for_it(helper, monkeypatch):
    """At exit a process closes its idle helper's pipe and goes (a dask worker closed by its
    nanny must not wait for an idle-priority process on a busy machine); ``close()`` itself
    still waits for the helper to end."""
    idle = _IdleHelper()
    monkeypatch.setitem(helper._state, "process", idle)
    helper.close(wait=False)
    assert idle.stdin.closed and idle.waited == [] and helper._state["process"] is None
    idle = _IdleHelper()
    monkeypatch.setitem(helper._state, "process", idle)
    helper.close()
    assert idle.stdin.closed and idle.waited == [5] and helper._state["process"] is None



def test_closing_at_exit_leaves_a_running_helper_without_a_warning(helper):
    # Python warns of a child still running when its Popen goes (printed as the process ends,
    # an error under -W error); at exit the helper is left running on purpose.
    assert helper.run(helper.takes(CPU, functools.partial(int, "3")))
    pid = helper._state["process"].pid
    os.kill(pid, signal.SIGSTOP)  # still running whenever Python looks
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            helper.close(wait=False)
            gc.collect()
    finally:
        os.kill(pid, signal.SIGCONT)
    assert helper._state["process"] is None
    assert [str(w.message) for w in caught if w.category is ResourceWarning] == []
