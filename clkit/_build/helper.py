"""A helper process for background builds on CPU drivers.

PoCL compiles one program at a time per process, the code it generates at a
kernel's first launch included: a background build of two seconds in a
thread holds up any build the caller starts meanwhile.  So on CPU drivers
the background thread hands each build to one helper process, which builds
the program and launches it once; the driver's disk caches (clkit's binaries,
PoCL's generated code) then make the same build and launch in this process
take milliseconds.  The helper runs at idle priority, one build at a time,
and ends when this process closes its pipe.  A process that ends while the
helper builds does not wait for it: the helper puts that build in the disk
cache and ends, its pipe closed by the end of this process.

A build goes to the helper when the device is a CPU (not the simulator), the
disk cache is on, and what builds and launches it pickles (a library
operation and a :class:`~clkit.Device` do); otherwise, or when the helper
fails, the thread builds in this process.  GPU drivers build in the thread:
a second process would hold a second context on the GPU.
"""

from __future__ import annotations

import atexit
import os
import pickle
import struct
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

from .build import cache_dir

#: Seconds a build may take in the helper before it is stopped (the thread then builds here).
TIMEOUT = 300.0
_HEADER = struct.Struct("<Q")
_lock = threading.Lock()
# This process's clkit, wherever the helper's working folder and path would find another one
_MAIN = (f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r}); "
         "from clkit._build.helper import main; main()")
_state = {"process": None, "cache": None, "ready": False, "failed": False, "builds": 0}


def start(device) -> None:
    """Start the helper, where it would build for ``device``, ahead of its first job: its
    start then runs beside the caller's first build.  Never waits."""
    if _usable(device) and _lock.acquire(blocking=False):  # held: a helper is at work
        try:
            _spawned()
        finally:
            _lock.release()


def takes(device, job) -> bytes | None:
    """``job`` pickled, when the helper should run it for ``device``; else None."""
    if not _usable(device):
        return None
    try:
        return pickle.dumps(job)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None


def _usable(device) -> bool:
    return getattr(device, "type", None) == "cpu" and not device.simulator \
        and not _state["failed"] and cache_dir() is not None


def run(payload: bytes) -> bool:
    """Run a pickled job (from :func:`takes`) in the helper; whether it succeeded there."""
    with _lock:
        process = _process()
        if process is None:
            return False
        try:
            _send(process.stdin, payload)
        except OSError:
            pass  # it has ended: no answer comes
        reply = _answer(process)
        if reply is None:  # it died (a driver's crash, the timeout): a new one for the next
            _stop(process)
            return False
        ok = pickle.loads(reply)[0] == "ok"
        _state["builds"] += ok
        return ok


def builds() -> int:
    """How many jobs helpers have run for this process (for tests)."""
    return _state["builds"]


def close(wait: bool = True) -> None:
    """End the helper (after the build under way: its results are cached); ``wait=False``, at
    exit, leaves a helper at work to finish (see the module's docstring) and does not wait
    for an idle one to end: its pipe closed, it ends by itself.  (At idle priority on a busy
    machine that can take seconds, which a dask nanny closing its worker does not wait for:
    it kills the worker after 4.)"""
    process = _state["process"]
    if process is not None and not wait:
        # Python warns of a child still running when its Popen goes; this one is left on purpose
        warnings.filterwarnings("ignore", f"subprocess {process.pid} is still running",
                                ResourceWarning)
    if not _lock.acquire(blocking=wait):
        return
    try:
        process = _state["process"]
        if process is not None:
            _stop(process, wait)
    finally:
        _lock.release()


def at_work() -> bool:
    """Whether a job is being handed to the helper or run there."""
    return _lock.locked()


atexit.register(close, wait=False)


def _spawned():
    """The helper for this cache folder, started if there is none (not waited for)."""
    process = _state["process"]
    if process is not None and process.poll() is None and _state["cache"] == cache_dir():
        return process
    if process is not None:  # ended, or writing another cache than this process reads
        _stop(process)
    env = dict(os.environ, CLKIT_BACKGROUND_BUILDS="0")
    try:
        # Not this process's stderr: a helper that outlives it would hold its pipe open (what
        # reads this process's output to the end, a shell's pipe or a test, would wait for it).
        # A build's errors come back in the answer; a crash shows as an answer that never came.
        process = subprocess.Popen([sys.executable, "-c", _MAIN], env=env,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL)
    except OSError:
        _state["failed"] = True
        return None
    _state.update(process=process, cache=cache_dir(), ready=False)
    return process


def _process():
    """The helper, ready for a job; None if it cannot start."""
    process = _spawned()
    if process is None or _state["ready"]:
        return process
    if _answer(process) != b"ready":
        # no Python to start it with (a frozen application): builds stay in this process
        _state["failed"] = True
        _stop(process)
        return None
    _state["ready"] = True
    return process


def _answer(process) -> bytes | None:
    """The helper's next message; None if it ends first or takes over TIMEOUT (it is
    stopped then)."""
    timer = threading.Timer(TIMEOUT, process.kill)
    timer.daemon = True  # a process that ends does not wait for the helper's answer
    timer.start()
    try:
        return _receive(process.stdout)
    except (OSError, EOFError):
        return None
    finally:
        timer.cancel()


def _stop(process, wait: bool = True) -> None:
    _state["process"] = None
    try:
        process.stdin.close()
    except OSError:
        pass
    if wait:
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    process.stdout.close()


def lower_priority() -> None:
    """Give this thread (and on Linux only it) the machine's idle cycles only."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        return
    except (AttributeError, OSError):
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except (AttributeError, OSError):
        pass


def _send(pipe, payload: bytes) -> None:
    pipe.write(_HEADER.pack(len(payload)) + payload)
    pipe.flush()


def _receive(pipe):
    head = pipe.read(_HEADER.size)
    if len(head) < _HEADER.size:
        raise EOFError
    (n,) = _HEADER.unpack(head)
    body = pipe.read(n)
    if len(body) < n:
        raise EOFError
    return body


def main() -> None:
    """The helper's loop: read a job, run it, answer ``("ok", seconds)`` or ``("error", text)``."""
    lower_priority()
    # The protocol keeps stdout's descriptor; what drivers print there goes to stderr (nowhere).
    inp, out = sys.stdin.buffer, os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    _send(out, b"ready")
    while True:
        try:
            payload = _receive(inp)
        except EOFError:
            return
        start = time.perf_counter()
        try:
            pickle.loads(payload)()
            reply = ("ok", time.perf_counter() - start)
        except Exception as exc:  # noqa: BLE001 - reported to the caller, who builds itself
            reply = ("error", f"{type(exc).__name__}: {exc}")
        try:
            _send(out, pickle.dumps(reply))
        except OSError:  # the process that asked has ended; the build is in the disk cache
            return
