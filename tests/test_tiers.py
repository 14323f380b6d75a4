"""Tiered builds: the policy of clkit._tiers (heat, the background queue, the settings).

Tested with stand-in programs, so that the policy is checked apart from any kernel.
"""

import threading
import time

import pytest

import clkit
from clkit import _build, _tiers

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


def start_blocking_build(gate):
    """Occupy the background thread with a build that waits for ``gate``."""
    _tiers.use_specialised(FakeProgram("blocker", gate=gate), "dev",
                           work=2 * _tiers.HOT_SCORE * _tiers.LARGE_WORK)
    deadline = time.monotonic() + 60
    while not _tiers._builder._busy:
        assert time.monotonic() < deadline, "the background thread never started the build"
        time.sleep(0.01)


@pytest.fixture
def policy(monkeypatch):
    monkeypatch.setattr(_build, "available", lambda source, options, device: False)
    monkeypatch.delenv("CLKIT_BACKGROUND_BUILDS", raising=False)
    monkeypatch.delenv("CLKIT_TIER", raising=False)
    _tiers.forget()
    yield
    _tiers.forget()


def test_heat_queues_a_variant_after_a_few_calls(policy):
    prg = FakeProgram("a")
    primed = []
    for _ in range(int(_tiers.HOT_SCORE) - 1):
        assert not _tiers.use_specialised(prg, "dev", prime=lambda: primed.append(1))
    assert _tiers.wait_idle(timeout=10) and prg.builds == 0
    assert not _tiers.use_specialised(prg, "dev", prime=lambda: primed.append(1))
    assert _tiers.wait_idle(timeout=60)
    assert prg.builds == 1 and primed == [1]
    assert _tiers.use_specialised(prg, "dev")
    assert _tiers.stats()["built"] == 1


def test_a_large_input_is_hot_at_once(policy):
    prg = FakeProgram("big")
    assert not _tiers.use_specialised(prg, "dev", work=2 * _tiers.HOT_SCORE * _tiers.LARGE_WORK)
    assert _tiers.wait_idle(timeout=60)
    assert prg.builds == 1


def test_the_hottest_waiting_variant_is_built_first(policy):
    gate = threading.Event()
    warm, hot = FakeProgram("warm"), FakeProgram("hot")
    order = []
    large = 2 * _tiers.HOT_SCORE * _tiers.LARGE_WORK
    start_blocking_build(gate)
    _tiers.use_specialised(warm, "dev", work=large, prime=lambda: order.append("warm"))
    _tiers.use_specialised(hot, "dev", work=large, prime=lambda: order.append("hot"))
    _tiers.use_specialised(hot, "dev", work=large)  # hotter while it waits
    gate.set()
    assert _tiers.wait_idle(timeout=60)
    assert order == ["hot", "warm"]


def test_the_queue_is_bounded(policy, monkeypatch):
    monkeypatch.setattr(_tiers, "MAX_PENDING", 2)
    gate = threading.Event()
    large = 2 * _tiers.HOT_SCORE * _tiers.LARGE_WORK
    start_blocking_build(gate)
    waiting = [FakeProgram(f"p{i}") for i in range(4)]
    for i, prg in enumerate(waiting):
        _tiers.use_specialised(prg, "dev", work=large * (1 + i))
    gate.set()
    assert _tiers.wait_idle(timeout=60)
    assert [p.builds for p in waiting] == [0, 0, 1, 1]  # the coolest were dropped
    assert _tiers.stats()["dropped"] == 2


def test_a_failed_background_build_warns_and_keeps_the_generic_tier(policy):
    prg = FakeProgram("broken", fail=True)
    with pytest.warns(RuntimeWarning, match="generic kernel keeps serving it"):
        _tiers.use_specialised(prg, "dev", work=2 * _tiers.HOT_SCORE * _tiers.LARGE_WORK)
        assert _tiers.wait_idle(timeout=60)
    assert not _tiers.use_specialised(prg, "dev")
    assert _tiers.stats()["failed"] == 1


def test_settings(policy, monkeypatch):
    prg = FakeProgram("s")
    assert clkit.background_builds() is True
    previous = clkit.background_builds(False)
    try:
        assert _tiers.use_specialised(prg, "dev")
    finally:
        clkit.background_builds(previous)
    monkeypatch.setenv("CLKIT_BACKGROUND_BUILDS", "off")
    assert clkit.background_builds() is False
    monkeypatch.setenv("CLKIT_TIER", "generic")
    assert not _tiers.use_specialised(prg, "dev")
    monkeypatch.setenv("CLKIT_TIER", "fast")
    with pytest.raises(clkit.ArgumentValueError, match="CLKIT_TIER='fast' is not a tier"):
        _tiers.use_specialised(prg, "dev")
    with pytest.raises(ValueError, match="unknown tier 'slow'"):
        with _tiers.tier("slow"):
            pass
    with pytest.raises(TypeError, match="takes True or False"):
        clkit.background_builds("yes")
    assert prg.builds == 0
