"""Timing one variant: a call, its clock, a warm-up and the median of the runs."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .._build.tiers import tier
from .._launch.kernel import recording
from .._platform.devices import Device
from ._optional import optional

MIN_RUNS = 3
BUDGET_S = 3.0  # per variant, after the warm-up: fewer runs than asked when one is slow


@dataclass
class Variant:
    """One way of computing a case, as one call.

    ``clock`` says how a call is timed: ``wall`` (perf_counter around the
    call, ``sync`` before and after it if given), ``cuda`` (CUDA events of
    torch or cupy around it), ``events`` (the sum of the device times of the
    clkit kernels it launched) or ``event`` (the call returns one OpenCL
    event, e.g. a copy, and its device time counts).
    """

    key: str
    label: str
    run: Callable[[], Any]
    clock: str = "wall"
    sync: Callable[[], Any] | None = None
    device: Device | None = None
    scale: float = 1.0  # serial: full size / subset size
    nbytes: float | None = None  # bytes counted for GB/s, when they differ from the case's
    note: str = ""

    def warm_up(self) -> tuple[float, Any, float]:
        """The first call, which builds what the later ones use: :meth:`time_once`.

        A library call of a new variant runs the generic convolution kernel
        until its specialised build is ready; this call waits for that build,
        so that the timed calls measure the kernels a loop of calls settles on.
        """
        with tier("specialised"):
            return self.time_once()

    def time_once(self) -> tuple[float, Any, float]:
        """One call: (milliseconds by this variant's clock, result, wall milliseconds)."""
        if self.sync is not None:
            self.sync()
        if self.clock == "cuda":
            return self._cuda()
        start = time.perf_counter()
        if self.clock == "events":
            with recording() as launches:
                result = self.run()
            self.sync()
            wall = (time.perf_counter() - start) * 1e3
            return sum(launch.kernel_ms for launch in launches), result, wall
        result = self.run()
        if self.sync is not None:
            self.sync()
        wall = (time.perf_counter() - start) * 1e3
        if self.clock == "event":
            result.wait()
            return (result.profile.end - result.profile.start) * 1e-6, None, wall
        return wall, result, wall

    def _cuda(self):
        if self.key.startswith("cupy"):
            cupy = optional("cupy")
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            wall0 = time.perf_counter()
            start.record()
            result = self.run()
            end.record()
            end.synchronize()
            ms = cupy.cuda.get_elapsed_time(start, end)
        else:
            torch = optional("torch")
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            wall0 = time.perf_counter()
            start.record()
            result = self.run()
            end.record()
            end.synchronize()
            ms = start.elapsed_time(end)
        return ms, result, (time.perf_counter() - wall0) * 1e3


@dataclass
class Timing:
    """The runs of one variant."""

    times_ms: list
    warmup_ms: float
    wall_ms: list = field(default_factory=list)
    result: Any = None

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms)


def measure(variant: Variant, repeat: int, budget_s: float = BUDGET_S) -> Timing:
    """Warm up once, then time ``repeat`` calls (fewer when they would exceed the budget).

    The calls of one variant run back to back, as in a user's loop.  Taking turns with the
    other variants would spread a changing load over all of them, but on a CPU it times
    something else: each library then starts with cold caches and its thread pool asleep or
    still spinning from the other's call (2 cores, PoCL: cv2.cvtColor of 3840x2160 took 3.4-3.7
    ms taking turns with clkit's grayscale, 3.0 ms back to back; clkit 3.8-6.0 against 2.8).
    """
    warm, result, _ = variant.warm_up()
    estimate = warm
    if warm * repeat > budget_s * 1e3:
        # The first call may have compiled or tuned (OpenCL builds, cuDNN, cupy kernels):
        # judge the cost of a call by a second one.
        estimate = min(warm, variant.time_once()[0])
    runs = min(repeat, max(MIN_RUNS, int(budget_s * 1e3 / max(estimate, 1e-3))))
    timing = Timing([], warm, [], result)
    for _ in range(runs):
        ms, _, wall = variant.time_once()
        timing.times_ms.append(ms)
        timing.wall_ms.append(wall)
    return timing
