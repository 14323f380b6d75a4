"""One OpenCL context and command queue per device, created once.

Every clkit call on a device goes through its :class:`Runtime`, so that
device arrays, programs and launches on that device share one context and
one in-order queue (which orders them without explicit events).

Two faults end a runtime:

- **A lost context.**  After a kernel faults (most often a read or write
  outside its buffers), some drivers (NVIDIA's) fail every later call in
  that context, and report it with codes that also have other meanings
  (``CL_OUT_OF_RESOURCES``, vendor codes such as -9999).  When a driver call
  fails with one of them, :func:`driver_error` checks whether the context
  still answers (a one-word write and read); if it does not, the runtime is
  marked lost and dropped, and the next call on that device starts a new one
  (or, if the driver cannot make one, says to restart the process).  What
  belongs to a context (queues, pools, builds, bound kernels, plans, masks
  on the device) is held by its runtime (:meth:`Runtime.held`,
  :meth:`Runtime.memo`) and dropped with it.
- **A fork.**  A child forked after OpenCL was used cannot use it (see
  :func:`clkit._platform.devices.check_process`); every runtime it inherited is
  marked lost, so that even a kernel launched from cached state stops with
  the same clear error.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading

import numpy as np
import pyopencl as cl

from .._errors import LaunchError, OutOfDeviceMemoryError
from .devices import Device, check_process, select


class Memo(dict):
    """A dict of at most ``limit`` entries (``None``: no limit), made on first use: the one
    bounded cache of what clkit makes once and looks up after (plans, builds, masks on the
    device), kept per context by a :class:`Runtime`.

    Lookups are plain ``dict.get`` (no lock: they are the hot path of every call); making
    and forgetting take a lock, and a value made by two threads at once is kept once, the
    first.  Past its limit it forgets the entries made first.

    Examples
    --------
    >>> from clkit._platform.runtime import Memo
    >>> squares = Memo(limit=2)
    >>> squares.make(3, lambda: 9), squares.make(4, lambda: 16), squares.make(5, lambda: 25)
    (9, 16, 25)
    >>> sorted(squares)  # the first made went first
    [4, 5]
    """

    def __init__(self, limit: int | None = None):
        super().__init__()
        self.limit = limit
        self._lock = threading.RLock()  # a finalizer (Kernel) may drop an entry while held

    def make(self, key, make):
        """The value of ``key``, made by ``make()`` (outside the lock) if it is missing."""
        found = self.get(key)
        if found is not None:
            return found
        value = make()
        with self._lock:
            found = self.setdefault(key, value)
            if self.limit is not None:
                while len(self) > self.limit:
                    del self[next(iter(self))]
        return found

    def drop(self, key) -> None:
        """Forget ``key`` if it is there."""
        with self._lock:
            self.pop(key, None)


class Runtime:
    """The context and in-order profiling queue of one device.

    Attributes
    ----------
    device : Device
    context : pyopencl.Context
    queue : pyopencl.CommandQueue
        In order, with profiling enabled, so that every launch can report
        its kernel time.  Inside ``using_queue`` (a lane of
        :func:`clkit.map`), that lane's queue instead.
    lost : str or None
        Why this runtime can no longer be used (its context was lost, or the
        process was forked); ``None`` while it works.

    Examples
    --------
    >>> import clkit
    >>> rt = clkit.runtime("cpu")
    >>> rt is clkit.runtime(rt.device), rt.lost is None
    (True, True)
    """

    def __init__(self, device: Device):
        self.device = device
        self.context = cl.Context([device.cl_device])
        self.own_queue = self.new_queue()
        self.lost: str | None = None
        self.in_use = InUse()
        self._held = Memo()  # owner -> what it keeps in this context (see held)
        #: The kernels bound in this context, by ``id`` of their :class:`clkit.Kernel` (looked
        #: up at every launch, so an attribute of its own).
        self.kernels = Memo()
        #: The tier state of the library's variants in this context (``Variants`` of
        #: clkit._build.tiers, made on first use; looked up at every library call).
        self.variants = None

    def held(self, owner, make, *args):
        """What ``owner`` keeps in this context, made by ``make(*args)`` on first use.

        ``owner`` is the function or class that uses it (its key); the object
        lives as long as this runtime works, and is dropped when its context
        is lost, so that nothing of a dead context is used again.
        """
        found = self._held.get(owner)
        return found if found is not None else self._held.make(owner, lambda: make(*args))

    def holds(self, owner):
        """What ``owner`` keeps in this context (see :meth:`held`), or None: nothing yet, or
        dropped since (the context was lost, or :meth:`drop_held` ran)."""
        return self._held.get(owner)

    def memo(self, owner, limit: int | None = None) -> Memo:
        """The ``Memo`` (this module's bounded cache) ``owner`` keeps in this context (see
        :meth:`held`): values made once per runtime, at most ``limit`` of them."""
        found = self._held.get(owner)
        return found if found is not None else self._held.make(owner, lambda: Memo(limit))

    def drop_held(self) -> None:
        """Drop everything kept in this context (pools, builds, plans...): the next calls make
        them again, builds from the disk cache.  For tests and benchmarks that start cold."""
        self._held.clear()
        self.kernels.clear()
        self.variants = None

    @property
    def queue(self) -> cl.CommandQueue:
        lane = _lane.get()
        if lane is not None and lane[0] is self:
            return lane[1]
        return self.own_queue

    def new_queue(self) -> cl.CommandQueue:
        """Another in-order profiling queue on this device (to overlap work)."""
        return cl.CommandQueue(self.context, self.device.cl_device,
                               properties=cl.command_queue_properties.PROFILING_ENABLE)

    def responds(self) -> bool:
        """Whether the context still works: one word written and read back on the queue."""
        sent = np.array([0x5EED], np.int32)
        back = np.zeros(1, np.int32)
        try:
            buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                            hostbuf=sent)
            cl.enqueue_copy(self.own_queue, back, buf, is_blocking=True)
        except cl.Error:
            return False
        return bool(back[0] == sent[0])

    def gone(self, what: str) -> LaunchError:
        """The error for ``what``, an object made in this runtime after it was lost."""
        return LaunchError(f"{what} was made in a device context of {self.device} that can no "
                           f"longer be used ({self.lost}), and its data went with it: make it "
                           "again (clkit.to_device, clkit.empty)", device=self.device,
                           context_lost=True)

    def __repr__(self):
        return f"<clkit.Runtime {self.device}{' (lost)' if self.lost else ''}>"


class _SimulatorRuntime(Runtime):
    """The Oclgrind simulator's runtime: each thread has a queue of its own.

    Oclgrind runs a queue's commands in the thread that waits for them (a
    finish, a wait, a blocking copy such as ``array.get()``): with one queue
    for all, one thread's ``get()`` would run the kernels another thread has
    just enqueued, beside that thread's own wait for them.
    """

    def __init__(self, device: Device):
        super().__init__(device)
        self._threads = threading.local()
        self._threads.queue = self.own_queue

    @property
    def queue(self) -> cl.CommandQueue:
        lane = _lane.get()
        if lane is not None and lane[0] is self:
            return lane[1]
        q = getattr(self._threads, "queue", None)
        if q is None:
            q = self.new_queue()
            self._threads.mine = _ThreadQueue(self, q)  # registered until the thread ends
            self._threads.queue = q
        return q


class _ThreadQueue:
    """A thread's queue, known to ``_by_queue`` while the thread lives."""

    def __init__(self, rt: Runtime, queue: cl.CommandQueue):
        self.key = id(queue)
        register(rt, queue)

    def __del__(self):
        _by_queue.pop(self.key, None)  # (no lock: this may run inside a locked section)


class InUse:
    """Memory that commands of another queue than its own may still use, kept until they end.

    A pooled buffer goes back to the pool of its queue when its last array is
    dropped, and that queue's next allocation may take it at once: safe for
    the queue's own commands, which run in order, but not for a kernel on
    another queue that still reads it.  Whatever clkit enqueues on a queue
    other than an array's own keeps the array's buffer here, with the
    command's event, until the event has completed (a block freed with the
    events of the queues that still use it, reused only after them).
    """

    def __init__(self):
        self._kept: list = []  # (event, objects)
        self._lock = threading.Lock()

    def keep(self, event, *objects) -> None:
        """Keep ``objects`` alive until ``event`` has completed."""
        with self._lock:
            self._sweep()
            self._kept.append((event, objects))

    def sweep(self) -> None:
        """Let go of what completed commands held."""
        if self._kept:
            with self._lock:
                self._sweep()

    def _sweep(self) -> None:
        self._kept = [item for item in self._kept if not _completed(item[0])]

    def __len__(self):
        return len(self._kept)


def _completed(event) -> bool:
    try:
        return event.command_execution_status <= cl.command_execution_status.COMPLETE
    except cl.Error:  # (a lost context: nothing of it runs any more)
        return True


def after(queue, other) -> None:
    """Commands enqueued on ``queue`` from now on start after those already on ``other`` (of
    the same context: an array of another is refused with its reason as the kernel is set).
    An array made without a queue (``queue=None``) has no order to keep."""
    if other is None or queue is None or other is queue:
        return
    if other.context == queue.context:
        cl.enqueue_barrier(queue, wait_for=[cl.enqueue_marker(other)])


# The Oclgrind simulator runs one kernel at a time in a process, in whichever thread waits for
# it (a finish, a wait, a blocking copy), and aborts when two threads run kernels at once
# (Oclgrind 21.10: "Assertion `m_kernelInvocation == NULL'"); its compiler, a clang of its
# own, crashes the process when another driver's compiler runs at the same time.  Every use of
# it takes this turn, and leaves nothing queued for another thread's wait to run.
class _Turn:
    """A re-entrant lock that tells whether this thread holds it."""

    def __init__(self):
        self._lock = threading.RLock()
        self._mine = threading.local()

    def __enter__(self):
        self._lock.acquire()
        self._mine.depth = getattr(self._mine, "depth", 0) + 1
        return self

    def __exit__(self, *exc):
        self._mine.depth -= 1
        self._lock.release()

    def held(self) -> bool:
        return getattr(self._mine, "depth", 0) > 0


_simulator_turn = _Turn()


def simulator_turn(device=None):
    """The process-wide turn on the simulator, for work on ``device`` (any device's builds when
    None, while a simulator is in use); a no-op context for others."""
    if (device.simulator if device is not None else simulator_in_use()):
        return _simulator_turn
    return contextlib.nullcontext()


_lock = threading.Lock()
_runtimes: dict[int, Runtime] = {}  # Device.key -> its working runtime
# id() of a queue clkit made -> (the queue, its runtime), lost ones too: the entry keeps the
# queue alive, so that no other object takes its id while the entry says whose it is
_by_queue: dict[int, tuple] = {}
_lost: list[Runtime] = []  # kept alive: their objects must never be released in a forked child
_losses: dict[int, str] = {}  # Device.key -> what happened to its last lost context
_dead: dict[int, str] = {}  # Device.key -> why no new context can be made
# (runtime, queue): where this thread's work on that runtime goes instead of its own queue
_lane: contextvars.ContextVar = contextvars.ContextVar("clkit_lane", default=None)


def runtime(device=None) -> Runtime:
    """The runtime of a device, created on first use and reused after.

    Parameters
    ----------
    device : Device or str, optional
        Any spec :func:`clkit.select` takes; ``None`` is the default device.

    Returns
    -------
    Runtime
        The same object for the same device, from any thread, until the
        device's context is lost; then a new one.

    Raises
    ------
    LaunchError
        The device's context was lost and the driver cannot make a new one
        (restart the process).
    ClkitError
        The process was forked after OpenCL was used in its parent.

    Examples
    --------
    >>> import clkit
    >>> rt = clkit.runtime("cpu")
    >>> rt is clkit.runtime(rt.device)
    True
    """
    check_process()
    dev = select(device)
    rt = _runtimes.get(dev.key)
    if rt is None:
        with _lock:
            rt = _runtimes.get(dev.key)
            if rt is None:
                rt = _start(dev)
    return rt


def _start(dev: Device) -> Runtime:
    if dev.key in _dead:
        raise LaunchError(_dead[dev.key], device=dev, context_lost=True)
    before = _losses.get(dev.key)
    try:
        rt = _SimulatorRuntime(dev) if dev.simulator else Runtime(dev)
        works = before is None or rt.responds()
        failure = "it does not answer"
    except cl.Error as exc:
        if before is None:
            raise
        works, failure = False, str(exc)
    if not works:
        _dead[dev.key] = (f"the device context of {dev} was lost ({before}) and the driver "
                          f"cannot make a new one ({failure}); restart the process to use this "
                          "device again (other devices still work)")
        raise LaunchError(_dead[dev.key], device=dev, context_lost=True)
    _runtimes[dev.key] = rt
    _by_queue[id(rt.own_queue)] = (rt.own_queue, rt)
    if dev.simulator:
        global _simulating
        _simulating = True
    return rt


def working_runtimes() -> list[Runtime]:
    """The runtimes in use, one per device that has one (lost ones are gone)."""
    return list(_runtimes.values())


def drop_held() -> None:
    """Every runtime drops what it keeps (see :meth:`Runtime.drop_held`): for tests and
    benchmarks that start cold."""
    for rt in working_runtimes():
        rt.drop_held()


_simulating = False  # whether a runtime on the simulator was made in this process


def simulator_in_use() -> bool:
    """Whether this process has made a runtime on the Oclgrind simulator (asked by every
    library call: a flag)."""
    return _simulating


@contextlib.contextmanager
def using_queue(rt: Runtime, queue: cl.CommandQueue):
    """Send this thread's work on ``rt`` to ``queue`` (one of ``rt``'s, kept alive by the caller).

    Independent work on separate in-order queues overlaps: one image's upload
    beside another's kernels.
    """
    register(rt, queue)
    token = _lane.set((rt, queue))
    try:
        yield queue
    finally:
        _lane.reset(token)


def register(rt: Runtime, queue: cl.CommandQueue) -> None:
    """Make ``queue``, one of ``rt``'s, known as ``rt``'s (kept alive for it: see ``_by_queue``)."""
    with _lock:
        _by_queue[id(queue)] = (queue, rt)


def registered(queue) -> Runtime | None:
    """The runtime ``queue`` was registered for (see :func:`register`), else None."""
    found = _by_queue.get(id(queue))
    return found[1] if found is not None else None


def runtime_of_array(array) -> Runtime | None:
    """The clkit runtime a device array belongs to, if clkit made its context."""
    rt = registered(array.queue)  # arrays made by clkit keep a registered queue
    return rt if rt is not None else _runtime_of_context(array.context)


def runtime_of_queue(queue) -> Runtime | None:
    """The clkit runtime whose context a queue belongs to."""
    rt = registered(queue)
    return rt if rt is not None else _runtime_of_context(queue.context)


def _runtime_of_context(context) -> Runtime | None:
    for rt in list(_runtimes.values()) + _lost:
        if rt.context == context:
            return rt
    return None


def mark_lost(rt: Runtime, why: str) -> None:
    """Stop using ``rt``: later calls on its device get a new runtime, and what it held
    (builds, pools, queues of lanes and bands, plans) goes with it."""
    with _lock:
        if rt.lost is not None:
            return
        rt.lost = why
        _lost.append(rt)
        key = rt.device.key
        if _runtimes.get(key) is rt:
            del _runtimes[key]
            _losses[key] = why
    rt.drop_held()


# Codes with which drivers report a lost context; each also has innocent meanings (a launch
# too large for the device's registers is CL_OUT_OF_RESOURCES too), so the context is asked.
_SUSPECT = {cl.status_code.OUT_OF_RESOURCES, cl.status_code.INVALID_COMMAND_QUEUE,
            cl.status_code.EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
            cl.status_code.INVALID_CONTEXT}
_NAMED = {v for k, v in vars(cl.status_code).items() if k.isupper() and isinstance(v, int)}
OOM_CODES = (cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE, cl.status_code.OUT_OF_RESOURCES,
             cl.status_code.OUT_OF_HOST_MEMORY)


def driver_error(exc: cl.Error, rt: Runtime, what: str, *, kernel: str | None = None,
                 advice: str = "") -> LaunchError:
    """The clkit error for a driver error met while doing ``what`` on ``rt``.

    A lost context (checked, see the module docstring) gives a
    :class:`LaunchError` that says so; an allocation failure an
    :class:`OutOfDeviceMemoryError` (with ``advice`` after the reason);
    anything else a :class:`LaunchError` with the driver's message.
    """
    code = getattr(exc, "code", None)
    dev = rt.device
    if rt.lost is None and (code in _SUSPECT or code not in _NAMED) and not rt.responds():
        mark_lost(rt, f"{what} failed with {exc}")
    if rt.lost is not None:
        return LaunchError(
            f"{what} on {dev}: the device's context was lost ({exc}). The driver stops a "
            "context when a kernel faults, most often by reading or writing outside its "
            "buffers: run the script under `clkit check SCRIPT.py` to find such an access. "
            "clkit drops this context; the next call on the device starts a new one (device "
            "arrays made before now are gone)", device=dev, kernel=kernel, code=code,
            context_lost=True)
    if code in OOM_CODES or isinstance(exc, cl.MemoryError):
        return OutOfDeviceMemoryError(
            f"{what} on {dev}: the device ran out of memory or resources ({exc})"
            + (f"; {advice}" if advice else ""), device=dev, kernel=kernel, code=code)
    return LaunchError(f"{what} on {dev} failed: {exc}", device=dev, kernel=kernel, code=code)


def _forked() -> None:
    # A child inherits runtimes whose driver threads did not come along: mark them lost (and
    # keep them referenced: releasing their objects in the child could hang as well).
    for rt in list(_runtimes.values()):
        rt.lost = "the process was forked after it was made"
        _lost.append(rt)


os.register_at_fork(after_in_child=_forked)
