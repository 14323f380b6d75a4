"""Tiered builds: a generic program answers at once, specialised ones compile in the background.

A library operation whose fast kernels are specialised at build time (mask
size, border mode, element type as ``-D`` defines) would otherwise compile
one program per combination on its first use, each a compiler's wait.  Instead
it keeps one generic program that takes those choices as run-time arguments
(built once per device and kept in the disk cache), and asks this module,
call by call, whether the specialised build of the variant at hand may be
used:

- yes, when that build is in memory or in the disk cache;
- no, otherwise: the call runs the generic program and counts towards the
  variant's heat (each call adds one, plus its work in units of LARGE_WORK,
  so a large input counts as several calls).  Once a variant is hot
  (HOT_SCORE) its build is queued for the one background thread, hottest
  first, and used from the call after it is ready.

The background thread runs at the lowest scheduling priority the system
offers (``SCHED_IDLE`` on Linux, else the highest nice value), so that on a
machine with few cores a build uses the cycles the caller leaves idle rather
than the caller's (docs/guide/builds.md has the figures).
On CPU drivers it hands each build to a helper process (clkit/_build/helper.py):
PoCL compiles one program at a time per process, so a build in the thread
would hold up every build the caller starts meanwhile.

On CPU drivers the generic program itself takes PoCL seconds to build and
launch the first time; built without optimisation it takes a fraction of that
and runs many times slower.  So until the optimised build is at hand, a
call of small work (at most QUICK_WORK) runs that unoptimised build (the
*quick* tier, the same sums) while the optimised one is made in the
background, ahead of every hot variant; a larger call waits for it.

Settings: ``CLKIT_BACKGROUND_BUILDS=0`` or :func:`background_builds`
``(False)`` turns the background builds off: a call then waits for its
specialised build, as without tiers.  ``CLKIT_TIER=quick``, ``generic`` or
``specialised`` (or :func:`tier`) forces one tier, for tests and benchmarks.
:func:`clkit.kernels.warmup` builds chosen variants ahead of time.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
import warnings

import pyopencl as cl

from .._platform.devices import setting
from .._platform.runtime import simulator_in_use, working_runtimes
from . import build as _build, helper as _helper

#: The heat at which a variant's specialised build is queued.
HOT_SCORE = 3.0
#: Work (output elements x taps) that counts as one more call: an input this large is hot
#: twice as fast, one of 2 * HOT_SCORE times this at once.
LARGE_WORK = float(1 << 25)
#: The most builds waiting; beyond it the coolest is dropped (it is queued again if it heats up).
MAX_PENDING = 16
#: The most work (output elements x taps) a call gives the quick tier: far less time in the
#: unoptimised generic kernel on PoCL than waiting for the optimised build.
QUICK_WORK = float(1 << 26)
#: The heat of a quick tier's optimised build in the queue: it serves every variant, so it
#: goes first.
_FIRST = float("inf")

_TIERS = ("auto", "quick", "generic", "specialised")
_COUNTERS = ("generic", "specialised", "quick", "built", "prebuilt", "dropped", "failed")
# One lock for the background queue and every context's variants, whose states it changes
_lock = threading.Lock()
_forced: list = []  # tier() overrides, innermost last
_enabled: list = []  # background_builds() setting, when set by a call


class Variants:
    """The tier state of one context, held by its runtime (``rt.variants``): each variant's
    heat and build, and the calls per tier.  It goes with the runtime, so that a new context starts cold (its
    builds come back from the disk cache as they are asked for)."""

    def __init__(self, rt):
        self.rt = rt
        self.table: dict = {}  # (program origin, options) -> _Variant
        self.counts = dict.fromkeys(_COUNTERS, 0)
        self.build_seconds = 0.0

    def get(self, program):
        return self.table.get((program.origin, program.options))

    def add(self, program, counter="built"):
        """The variant of ``program``, made cold if new (called with the lock held)."""
        key = (program.origin, program.options)
        v = self.table.get(key)
        if v is None:
            v = self.table[key] = _Variant(self, counter)
        return v


def variants(rt) -> Variants:
    """The tier state of ``rt``'s context, made on first use."""
    found = rt.variants
    if found is None:
        with _lock:
            found = rt.variants
            if found is None:
                found = rt.variants = Variants(rt)
    return found


class _Variant:
    __slots__ = ("home", "heat", "state", "job", "seconds", "counter")

    def __init__(self, home, counter="built"):
        self.home = home  # the Variants of its context
        self.heat = 0.0
        self.state = "cold"  # cold, queued, building, ready, failed
        self.job = None
        self.seconds = 0.0
        self.counter = counter  # "built" for a hot variant, "prebuilt" for a prebuild()


def background_builds(enabled: bool | None = None) -> bool:
    """Turn the background builds of specialised kernels on or off; return the setting.

    With them on (the default), a library call whose specialised kernel is not
    built yet runs the generic kernel at once, and the specialised one compiles
    in a background thread once the call's variant proves hot.  Off, every
    call waits for its specialised build, as a deployment that wants no
    background work may prefer (build ahead with :func:`clkit.kernels.warmup`).  The
    environment variable ``CLKIT_BACKGROUND_BUILDS=0`` turns them off too.

    Parameters
    ----------
    enabled : bool, optional
        The new setting; ``None`` only reads it.

    Returns
    -------
    bool
        Whether background builds are on (after the change).

    Raises
    ------
    ArgumentTypeError
        Anything but True or False.

    Examples
    --------
    >>> import clkit
    >>> previous = clkit.background_builds(False)
    >>> clkit.background_builds()
    False
    >>> _ = clkit.background_builds(previous)
    """
    if enabled is not None:
        if not isinstance(enabled, (bool, int)):
            from .._errors import ArgumentTypeError
            raise ArgumentTypeError(f"background_builds takes True or False, not {enabled!r}")
        _enabled[:] = [bool(enabled)]
    if _enabled:
        return _enabled[0]
    value = setting("CLKIT_BACKGROUND_BUILDS", "1").strip().lower()
    return value not in ("0", "off", "no", "false")


def forced_tier() -> str:
    """The tier calls must use: ``"auto"``, ``"quick"``, ``"generic"`` or ``"specialised"``."""
    if _forced:
        return _forced[-1]
    value = setting("CLKIT_TIER")
    if value is None:
        return "auto"
    value = value.strip().lower() or "auto"
    if value not in _TIERS:
        from .._errors import ArgumentValueError
        raise ArgumentValueError(f"CLKIT_TIER={value!r} is not a tier; use one of "
                                 f"{', '.join(_TIERS)}")
    return value


@contextlib.contextmanager
def tier(name: str):
    """Force every library call inside the block to one tier (for tests and benchmarks)."""
    if name not in _TIERS:
        from .._errors import ArgumentValueError
        raise ArgumentValueError(f"unknown tier {name!r}; use one of {', '.join(_TIERS)}")
    _forced.append(name)
    try:
        yield
    finally:
        _forced.pop()


def use_specialised(program, rt, *, work: float = 0.0, prime=None,
                    in_background: bool = True) -> bool:
    """Whether a call may run ``program``'s specialised build on ``rt``'s device now.

    ``True`` when it is built (in memory or in the disk cache), when the
    specialised tier is forced, or when background builds are off (the
    launch then builds it, waiting).  ``False`` means: run the generic tier;
    the call heats the variant by ``1 + work / LARGE_WORK`` and a hot variant
    is queued for the background thread, which builds it and then calls
    ``prime()`` (a launch on a private queue, so that a driver's compile at
    first launch is paid there too).  ``in_background=False`` (a driver that
    is not safe to use from two threads at once, such as the Oclgrind
    simulator) builds a hot variant in the calling thread instead.
    """
    home = rt.variants or variants(rt)
    forced = forced_tier()
    if forced != "auto":
        return _count(home, forced == "specialised")
    v = home.table.get((program.origin, program.options))
    if v is not None and v.state == "ready":  # the common case, once a variant is built
        return _count(home, True)
    device = rt.device
    with _lock:
        v = home.add(program)
        if v.state in ("cold", "queued") and _build.available(program.source, program.options,
                                                              device):
            v.state = "ready"  # built by warmup, a waiting call, or another process
        if v.state == "ready" or not background_builds():
            home.counts["specialised"] += 1
            return True
        build_here = False
        if v.state in ("cold", "queued"):
            v.heat += 1.0 + work / LARGE_WORK
            if v.state == "cold" and v.heat >= HOT_SCORE:
                v.job = (program, device, prime, None)
                # Beside the Oclgrind simulator another thread's compiler crashes the process
                if in_background and not simulator_in_use():
                    v.state = "queued"
                    _builder.submit(v)
                else:
                    v.state = "building"
                    build_here = True
    if build_here:
        _run_job(v, program, device, None, None)  # without priming: this call launches it
    with _lock:
        ready = v.state == "ready"
        home.counts["specialised" if ready else "generic"] += 1
    return ready


def _count(home: Variants, specialised: bool) -> bool:
    with _lock:
        home.counts["specialised" if specialised else "generic"] += 1
    return specialised


def prebuild(program, rt, prime=None, first=False, after=None) -> bool:
    """Queue ``program``'s build on ``rt``'s device for the background thread: a build later
    calls will likely need.

    Nothing happens when background builds are off, while the simulator is in use, or when the
    program is built, queued or known already.  It waits behind every hot variant, or with
    ``first`` goes ahead of them (behind the ``first`` ones queued before it); ``prime()`` runs
    after the build, as for a hot variant.  ``after`` (an event, or :class:`AfterLaunch`) is
    what a build in this process waits for: drivers such as PoCL compile one program at a
    time, the first launch of a kernel included, so that a build started beside the caller's
    first launch would hold that launch up (the helper process of clkit/_build/helper.py starts at
    once).  Whether the build was queued.
    """
    if not background_builds() or simulator_in_use():
        return False
    home = variants(rt)
    with _lock:
        if home.get(program) is not None:
            return False
        v = home.add(program, "prebuilt")
        if _build.available(program.source, program.options, rt.device):
            v.state = "ready"
            return False
        v.state, v.job = "queued", (program, rt.device, prime, after)
        v.heat = _FIRST if first else 0.0
        _builder.submit(v)
    return True


class AfterLaunch:
    """What a background build waits for: the end of a call's kernels, enqueued after the
    build was queued (``launched(queue)`` then marks them)."""

    def __init__(self):
        self._launched = threading.Event()
        self._marker = None

    def launched(self, queue) -> None:
        try:
            self._marker = cl.enqueue_marker(queue)
        except cl.Error:  # the launch failed with its queue: the caller raises that error
            self._marker = None
        self._launched.set()

    def wait(self) -> None:
        self._launched.wait()
        if self._marker is not None:
            self._marker.wait()


def use_quick(program, rt, *, work: float) -> bool:
    """Whether a generic call runs the unoptimised build instead of ``program`` (the generic
    program, optimised); the caller then queues the optimised build with :func:`prebuild`
    (``first``, ``after`` the quick launch).

    Yes on a CPU driver, for a call of at most QUICK_WORK, while background builds are on and
    ``program`` is not built yet, or its background build is still under way; or when the
    quick tier is forced.  (The helper process puts a build in the disk cache before its first
    launch has compiled the kernels, which takes PoCL about half a second more.)
    """
    device = rt.device
    forced = forced_tier()
    if forced != "auto":
        quick = forced == "quick"
    else:
        quick = (device.type == "cpu" and not device.simulator and work <= QUICK_WORK
                 and background_builds() and not simulator_in_use()
                 and pending(program, rt))
    if quick:
        with _lock:
            variants(rt).counts["quick"] += 1
        _helper.start(device)  # the optimised build will go there: start it during this call
    return quick


def pending(program, rt) -> bool:
    """Whether ``program`` is not built yet for ``rt``'s device, or its background build (and
    first launch) is still under way."""
    v = variants(rt).get(program)
    return (v is not None and v.state in ("queued", "building")) or \
        not _build.available(program.source, program.options, rt.device)


def _run_job(v: _Variant, program, device, prime, after, helper=False) -> None:
    start = time.perf_counter()
    try:
        payload = _helper.takes(device, prime) if helper and prime is not None else None
        if payload is not None:
            # built and launched in the helper process (at once: another process holds up
            # none of this one's builds), then here both come from the disk caches
            _helper.run(payload)
        if after is not None:
            after.wait()
        program.build(device)
        if prime is not None:
            prime()
    except Exception as exc:  # noqa: BLE001 - the generic tier keeps answering
        with _lock:
            v.state = "failed"
            v.home.counts["failed"] += 1
        warnings.warn(f"clkit: the specialised build {program!r} for {device} failed; the "
                      f"generic kernel keeps serving it ({type(exc).__name__}: {exc})",
                      RuntimeWarning, stacklevel=2)
        return
    with _lock:
        v.state = "ready"
        v.job = None
        v.seconds = time.perf_counter() - start
        v.home.counts[v.counter] += 1
        v.home.build_seconds += v.seconds


class _Builder:
    """The one background thread and its queue of hot variants (of every context), hottest
    first."""

    def __init__(self):
        self._cv = threading.Condition(_lock)
        self._pending: list = []  # _Variant
        self._busy = False
        self._closed = False
        self._thread = None

    def submit(self, v: _Variant) -> None:
        """Queue a variant (called with the lock held)."""
        if self._closed:
            v.state = "cold"
            return
        self._pending.append(v)
        if len(self._pending) > MAX_PENDING:
            coolest = min(self._pending, key=lambda p: p.heat)
            self._pending.remove(coolest)
            coolest.state, coolest.heat = "cold", 0.0
            coolest.home.counts["dropped"] += 1
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="clkit-builds", daemon=True)
            self._thread.start()
        self._cv.notify()

    def _loop(self) -> None:
        _helper.lower_priority()
        while True:
            with self._cv:
                while not self._pending and not self._closed:
                    self._cv.wait()
                if self._closed:
                    return
                v = max(self._pending, key=lambda p: p.heat)
                self._pending.remove(v)
                # queued before the simulator came (the call builds it), or for a context
                # lost since (its runtime and this state are gone)
                if simulator_in_use() or v.home.rt.lost is not None:
                    v.state, v.heat, v.job = "cold", 0.0, None
                    continue
                v.state = "building"
                program, device, prime, after = v.job
                self._busy = True
            try:
                _run_job(v, program, device, prime, after, helper=True)
            finally:
                with self._cv:
                    self._busy = False
                    self._cv.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until nothing is queued or building; False on timeout."""
        with self._cv:
            return self._cv.wait_for(lambda: not self._pending and not self._busy, timeout)

    def close(self) -> None:
        """At exit: drop what waits and let the build under way finish (it is cached), here or,
        without waiting for it, in the helper process."""
        with self._cv:
            self._closed = True
            for v in self._pending:
                v.state = "cold"
            self._pending.clear()
            self._cv.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread() \
                and not _helper.at_work():
            thread.join()


# One thread for the whole process: builds of any context run one at a time, beside the caller
_builder = _Builder()
atexit.register(_builder.close)


def wait_idle(timeout: float | None = None) -> bool:
    """Wait until the background builds queued so far are done (for benchmarks and tests)."""
    return _builder.wait_idle(timeout)


def stats(rt=None) -> dict:
    """Calls per tier, builds done (of hot variants, and prebuilds), dropped and failed, and the
    seconds they took, on ``rt`` (None: summed over the working runtimes), since it was made or
    dropped what it held."""
    homes = [variants(r) for r in (working_runtimes() if rt is None else [rt])]
    with _lock:
        out = {k: sum(h.counts[k] for h in homes) for k in _COUNTERS}
        out["build_seconds"] = round(sum(h.build_seconds for h in homes), 3)
        out["queued"] = len(_builder._pending)
    return out
