"""Tracing: a timeline of every kernel launch and transfer clkit makes.

``with clkit.trace() as t:`` records, from every thread, each command clkit
enqueues (library functions and users' kernels alike): its device start and
end from the profiling event, the bytes it moves or touches, its queue and
device, and the host time clkit spent before the enqueue.  The recording
places call the hooks below (:func:`kernel`, :func:`transfer`,
:func:`host_transfer`) only after checking ``_trace.active``, a global that
is empty when no trace is active, so that an untraced launch pays one check.

Device times are read from the events lazily (when the trace is first
inspected), and in batches of thousands while recording, so that the events
of finished commands are released as the trace grows.  A trace keeps at most ``limit``
records; later commands are counted in :attr:`Trace.dropped`, not kept.

Times are stored in nanoseconds of the host's ``perf_counter_ns`` clock;
each device's profiling clock is mapped onto it with the offset that agrees
with every recorded enqueue (the event's ``queued`` time lies between the
host times taken before and after the enqueue).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from .._errors import ArgumentValueError, ClkitError
from .._platform.runtime import runtime_of_queue
from . import export as _trace_export

LIMIT = 100_000
# Records between two readings of finished events: rare, so that reading device times (a few
# driver calls per command) happens when the trace is inspected, not in the traced code.
_SWEEP = 4096

active: tuple = ()  # the traces being recorded; the only thing an untraced call looks at
_active_lock = threading.Lock()
clock = time.perf_counter_ns
_STATUS = cl.event_info.COMMAND_EXECUTION_STATUS
_QUEUED, _START, _END = (cl.profiling_info.QUEUED, cl.profiling_info.START,
                         cl.profiling_info.END)


class _Record:
    """One enqueued command (or one host copy at buffer creation, ``event`` None)."""

    __slots__ = ("kind", "name", "nbytes", "device", "queue", "thread", "t0", "t1", "event",
                 "blocking", "queued", "start", "end")

    def __init__(self, kind, name, nbytes, device, queue, event, t0, blocking):
        self.kind = kind  # "kernel", "h2d" or "d2h"
        self.name = name
        self.nbytes = nbytes  # None where unknown
        self.device = device
        self.queue = queue  # None for a copy made outside any queue
        self.thread = threading.current_thread()
        self.t1 = clock()  # host ns: the enqueue returned
        self.t0 = t0 or self.t1  # host ns: entry into the clkit code that enqueued the command
        if isinstance(event, cl.NannyEvent):
            # Keep the event, not the host array pyopencl ties to it: the caller's copy of
            # the event still waits for the copy when dropped, as without a trace.
            event = cl.Event.from_int_ptr(event.int_ptr)
        self.event = event
        self.blocking = blocking  # the enqueue returned only once the command had finished
        self.queued = self.start = self.end = None  # device ns, once resolved

    def resolve(self, wait: bool) -> bool:
        """Read the event's times; False if it has not finished and ``wait`` is false."""
        if self.device is None:
            self.device = runtime_of_queue(self.queue).device
        ev = self.event
        if ev is None:
            return True
        try:
            if wait:
                ev.wait()
            elif ev.get_info(_STATUS) != cl.command_execution_status.COMPLETE:
                return False
            get = ev.get_profiling_info
            self.queued, self.start, self.end = get(_QUEUED), get(_START), get(_END)
        except cl.Error:  # a queue without profiling, or a failed command: no device time
            pass
        self.event = None
        return True


# -- hooks (called only when ``active`` is not empty) ---------------------------------------------

def _add(rec: _Record) -> None:
    for t in active:
        t._add(rec)


def kernel(t0: int, launch, queue, args) -> None:
    """A kernel was enqueued by ``Kernel.__call__`` (entered at host time ``t0``)."""
    nbytes = 0
    for a in args:  # the arrays it reads or writes, each counted once
        if isinstance(a, (np.ndarray, cl_array.Array)):
            nbytes += a.nbytes
        elif isinstance(a, cl.MemoryObjectHolder):
            nbytes += a.size
    _add(_Record("kernel", launch.kernel.name, nbytes or None, launch.device, queue,
                 launch.event, t0, False))


def transfer(t0: int, kind: str, event, queue, nbytes: int, blocking=False, name=None) -> None:
    """A copy between host and device (``kind`` "h2d" or "d2h") was enqueued on ``queue``.

    ``t0`` is when the clkit code that enqueued it started (0: just now);
    ``nbytes`` is None where nothing is copied (mapping memory the device shares);
    ``blocking`` says that the enqueue returned only once the copy was done.
    """
    _add(_Record(kind, name or kind, nbytes, None, queue, event, t0, blocking))


def host_transfer(t0: int, kind: str, device, nbytes: int) -> None:
    """A copy made by the driver outside any queue (a buffer created from host memory)."""
    _add(_Record(kind, f"{kind} (buffer creation)", nbytes, device, None, None, t0, True))


# -- the trace ------------------------------------------------------------------------------------

class Trace:
    """The kernels and transfers clkit enqueued while the trace was active.

    Made by :func:`trace`; see there.  ``events`` (a list of dicts, one per
    command, in the order enqueued), :meth:`summary`, :meth:`save` and
    :meth:`plot` wait for the recorded commands to finish.

    Examples
    --------
    >>> import numpy as np, clkit
    >>> from clkit.kernels import vector_add
    >>> with clkit.trace() as t:
    ...     _ = vector_add(np.ones(4, np.float32), np.ones(4, np.float32), device="cpu")
    >>> [e["name"] for e in t.events if e["kind"] == "kernel"]
    ['vector_add']
    """

    def __init__(self, limit: int = LIMIT):
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ArgumentValueError(f"trace: limit must be a positive number of records, "
                                     f"got {limit!r}")
        self.limit = limit
        self.dropped = 0
        self._records: list[_Record] = []
        self._unresolved = 0  # records from this index on may hold events
        self._next_sweep = _SWEEP
        self._lock = threading.Lock()
        self._t_start = self._t_stop = None
        self._tracks = None

    # recording

    def _add(self, rec: _Record) -> None:
        with self._lock:
            if len(self._records) >= self.limit:
                self.dropped += 1
                return
            self._records.append(rec)
            if len(self._records) >= self._next_sweep:
                self._sweep(wait=False)
                self._next_sweep = len(self._records) + _SWEEP

    def _sweep(self, wait: bool) -> None:
        """Read the times of finished commands and release their events (lock held)."""
        recs = self._records
        i = self._unresolved
        while i < len(recs) and recs[i].resolve(wait):
            i += 1
        self._unresolved = i
        for rec in recs[i:]:  # commands of other queues may have finished meanwhile
            rec.resolve(False)

    def _begin(self):
        global active
        if self._t_start is not None:
            raise ClkitError("this trace has already recorded a block; start another with "
                             "clkit.trace()")
        self._t_start = clock()
        with _active_lock:
            active = active + (self,)

    def _end(self):
        global active
        with _active_lock:
            active = tuple(t for t in active if t is not self)
        self._t_stop = clock()

    def __enter__(self) -> "Trace":
        self._begin()
        return self

    def __exit__(self, *exc):
        self._end()
        return False

    # reading

    def _resolved(self) -> list[_Record]:
        with self._lock:
            self._sweep(wait=True)
            if self._tracks is None or self._tracks[0] != len(self._records):
                self._tracks = (len(self._records), _Tracks(self._records))
            return list(self._records)

    @property
    def wall_ns(self) -> int:
        """Host time from entering the block to leaving it (or to now, inside it)."""
        if self._t_start is None:
            raise ClkitError("this trace has not run: use it as `with clkit.trace() as t:`")
        stop = self._t_stop if self._t_stop is not None else clock()
        return stop - self._t_start

    @property
    def events(self) -> list[dict]:
        """One dict per recorded command, in the order enqueued.

        Keys: ``kind`` ("kernel", "h2d", "d2h"), ``name``, ``bytes`` (None
        where unknown), ``device`` (its id), ``queue`` (0 for the device's
        clkit queue, then 1, 2... in order of first use), ``thread`` (its
        name), ``host_ms`` (host time in clkit before the enqueue),
        ``start_ms`` and ``end_ms`` (device times mapped to the host's clock,
        from the start of the trace; None for a copy made outside any queue).
        """
        recs = self._resolved()
        tracks = self._tracks[1]
        out = []
        for rec in recs:
            start, end = tracks.device_span(rec)
            out.append({
                "kind": rec.kind, "name": rec.name, "bytes": rec.nbytes,
                "device": rec.device.id, "queue": tracks.queue(rec), "thread": rec.thread.name,
                "host_ms": tracks.host_before(rec) / 1e6,
                "start_ms": None if start is None else (start - self._t_start) / 1e6,
                "end_ms": None if end is None else (end - self._t_start) / 1e6,
            })
        return out

    def summary(self) -> str:
        """A table per kernel and per transfer direction, with the device's idle time.

        Columns: calls; total and mean device time; GB/s (bytes moved by a
        transfer, or a kernel's array arguments counted once each, over its
        device time); the share of the trace's wall time; the host time clkit
        spent before the enqueues.  Below it, for each device queue, how long
        the device sat idle between two commands waiting for the host to
        enqueue the next.

        Examples
        --------
        >>> import numpy as np, clkit
        >>> with clkit.trace() as t:
        ...     d = clkit.to_device(np.ones(1000, np.float32), device="cpu")
        >>> print(t.summary().splitlines()[2].split()[1:4])
        ['h2d', 'h2d', '1']
        """
        recs = self._resolved()
        tracks = self._tracks[1]
        wall = self.wall_ns
        rows: dict = {}
        for rec in recs:
            key = (rec.device.id, rec.kind, rec.name)
            row = rows.setdefault(key, [0, 0, 0, 0, 0])  # calls, device ns, bytes, timed, host ns
            row[0] += 1
            span = tracks.duration(rec)
            if span is not None:
                row[1] += span
                row[3] += 1
                if rec.nbytes:
                    row[2] += rec.nbytes
            row[4] += tracks.host_before(rec)
        table = [("device", "kind", "name", "calls", "total ms", "mean ms", "GB/s", "% wall",
                  "host ms")]
        for (dev, kind, name), (calls, dev_ns, nbytes, timed, host_ns) in sorted(
                rows.items(), key=lambda item: -item[1][1]):
            table.append((
                dev, kind, name, str(calls), f"{dev_ns / 1e6:.3f}",
                f"{dev_ns / timed / 1e6:.4f}" if timed else "-",
                f"{nbytes / dev_ns:.2f}" if nbytes and dev_ns else "-",
                f"{100 * dev_ns / wall:.1f}" if wall else "-", f"{host_ns / 1e6:.3f}"))
        widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
        lines = [f"clkit trace: {len(recs)} commands in {wall / 1e6:.3f} ms of wall time"]
        for r in table:
            lines.append("  ".join(c.ljust(w) if i < 3 else c.rjust(w)
                                   for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        for (dev, queue), (busy, idle) in sorted(tracks.idle().items()):
            lines.append(f"device {dev} queue {queue}: busy {busy / 1e6:.3f} ms, idle waiting "
                         f"for the host {idle / 1e6:.3f} ms")
        if any(rec.queue is None for rec in recs):
            lines.append("(buffer creation): copied by the driver outside any queue; "
                         "its time is the host's")
        if self.dropped:
            lines.append(f"{self.dropped} later commands were not recorded (the trace keeps "
                         f"{self.limit}; pass clkit.trace(limit=...) for more)")
        return "\n".join(lines)

    def to_json(self) -> dict:
        """The trace in Chrome's trace-event format: ``{"traceEvents": [...]}``.

        One process per device with one thread per queue, and one process
        "host" with one thread per Python thread; each command is a complete
        (``"ph": "X"``) event, timed in microseconds from the trace's start.
        """
        recs = self._resolved()
        events = _trace_export.trace_events(recs, self._tracks[1], self._t_start)
        return {"traceEvents": events, "displayTimeUnit": "ms",
                "otherData": {"wall_ms": self.wall_ns / 1e6, "dropped": self.dropped,
                              "limit": self.limit}}

    def save(self, path) -> None:
        """Write the trace as Chrome trace-event JSON (for Perfetto or chrome://tracing).

        The file is written whole or not at all.

        Examples
        --------
        >>> import numpy as np, clkit, json, os, tempfile
        >>> from clkit.kernels import vector_add
        >>> with clkit.trace() as t:
        ...     _ = vector_add(np.ones(8, np.float32), np.ones(8, np.float32), device="cpu")
        >>> path = os.path.join(tempfile.mkdtemp(), "trace.json")
        >>> t.save(path)
        >>> "traceEvents" in json.load(open(path))
        True
        """
        _trace_export.write_json(path, self.to_json())

    def plot(self, path) -> None:
        """Draw the timeline (one row per device queue and per host thread) with matplotlib.

        Needs matplotlib (``pip install 'clkit[plot]'``).  The file's type
        follows its extension (``.png``, ``.svg``, ``.pdf``...).

        Examples
        --------
        >>> import numpy as np, clkit, os, tempfile
        >>> from clkit.kernels import vector_add
        >>> with clkit.trace() as t:
        ...     _ = vector_add(np.ones(8, np.float32), np.ones(8, np.float32), device="cpu")
        >>> t.plot(os.path.join(tempfile.mkdtemp(), "timeline.png"))
        """
        _trace_export.plot(path, self.to_json())

    def __repr__(self):
        state = ("recording" if self in active else "not run" if self._t_start is None else
                 f"{self.wall_ns / 1e6:.3f} ms")
        return f"<clkit.Trace {len(self._records)} commands, {state}>"


class _Tracks:
    """What the records say together: track numbers, clock offsets, idle times."""

    def __init__(self, records):
        self.threads: dict = {}
        self.pids: dict = {}
        self.queues: dict = {}  # (device, queue) -> 0 for the runtime's queue, then 1, 2...
        bounds: dict = {}  # device -> [lowest, highest] offset host - device clock
        for rec in records:
            if rec.queue is not None and (rec.device, rec.queue) not in self.queues:
                rt = runtime_of_queue(rec.queue)
                own = rt is not None and rt.own_queue is rec.queue
                taken = [n for (d, _), n in self.queues.items() if d == rec.device]
                self.queues[rec.device, rec.queue] = 0 if own else max(taken + [0]) + 1
            if rec.queued is not None:
                # queued lies between t0 and t1; a blocking copy also ended before t1.
                lo, hi = rec.t0 - rec.queued, rec.t1 - (rec.end if rec.blocking else rec.queued)
                b = bounds.setdefault(rec.device, [lo, hi])
                b[0], b[1] = max(b[0], lo), min(b[1], hi)
        # The latest lower bound and the earliest upper bound bracket the offset (drivers
        # whose clocks disagree with that get the middle).
        self.offsets = {d: (hi if lo <= hi else (lo + hi) // 2) for d, (lo, hi) in bounds.items()}
        # How late a mapped time may be: the bracket's width (or half the disagreement).
        self.spread = {d: hi - lo if lo <= hi else (lo - hi) // 2 for d, (lo, hi) in bounds.items()}
        self.records = records

    def queue(self, rec):
        return None if rec.queue is None else self.queues[rec.device, rec.queue]

    def thread(self, rec) -> int:
        return self.threads.setdefault(rec.thread, len(self.threads) + 1)

    def device_pid(self, device) -> int:
        return self.pids.setdefault(device, len(self.pids) + 1)

    def device_span(self, rec):
        if rec.start is None:
            return None, None
        off = self.offsets[rec.device]
        return rec.start + off, rec.end + off

    def duration(self, rec):
        if rec.start is None:
            return rec.t1 - rec.t0 if rec.queue is None else None  # host-timed copy
        return rec.end - rec.start

    def host_before(self, rec) -> int:
        """Host ns in clkit before the enqueue (for a blocking copy, less the copy itself)."""
        if rec.blocking and rec.queued is not None:
            return max(0, rec.t1 - rec.t0 - (rec.end - rec.queued))
        if rec.blocking:
            return 0
        return rec.t1 - rec.t0

    def idle(self) -> dict:
        """(device id, queue) -> (busy ns, ns idle between commands waiting for the host)."""
        by_queue: dict = {}
        for rec in self.records:
            if rec.start is not None:
                by_queue.setdefault((rec.device.id, self.queue(rec)), []).append(rec)
        out = {}
        for key, recs in by_queue.items():
            recs.sort(key=lambda r: r.start)
            busy = idle = 0
            done = recs[0].start
            for rec in recs:
                # Idle for the host: from the end of the work before until the host enqueued
                # this command (or the device started it, if that came first).
                idle += max(0, min(rec.start, rec.queued) - done)
                busy += max(0, rec.end - max(rec.start, done))
                done = max(done, rec.end)
            out[key] = (busy, idle)
        return out


def trace(limit: int = LIMIT) -> Trace:
    """Record every kernel launch and host-device transfer clkit makes in a ``with`` block.

    Launches of library functions and of users' kernels count alike, on
    every device and queue, from every thread of the process.  Outside a
    trace nothing is recorded.

    Parameters
    ----------
    limit : int
        The most commands kept; later ones are counted in ``dropped`` and
        mentioned by :meth:`Trace.summary`, not kept (about 300 bytes each).

    Returns
    -------
    Trace
        Use it as a context manager; then ``summary()``, ``save(path)``,
        ``plot(path)`` or ``events``.

    Raises
    ------
    ArgumentValueError
        A ``limit`` that is not a positive number of records.

    Examples
    --------
    >>> import numpy as np, clkit
    >>> from clkit.kernels import vector_add
    >>> with clkit.trace() as t:
    ...     _ = vector_add(np.ones(8, np.float32), np.ones(8, np.float32), device="cpu")
    >>> [e["kind"] for e in t.events if e["kind"] == "kernel"]
    ['kernel']
    """
    return Trace(limit)


def from_environment() -> None:
    """Trace the whole process when ``CLKIT_TRACE`` names a file, written at exit."""
    path = os.environ.get("CLKIT_TRACE")
    if not path:
        return
    t = Trace()
    t._begin()

    def write():
        t._end()
        try:
            t.save(path)
        except (OSError, ClkitError) as exc:
            print(f"clkit: CLKIT_TRACE={path}: the trace could not be written: {exc}",
                  file=sys.stderr)

    atexit.register(write)
