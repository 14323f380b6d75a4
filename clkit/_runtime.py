"""One OpenCL context and command queue per device, created once.

Every clkit call on a device goes through its :class:`Runtime`, so that
device arrays, programs and launches on that device share one context and
one in-order queue (which orders them without explicit events).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading

import pyopencl as cl

from ._devices import Device, select


class Runtime:
    """The context and in-order profiling queue of one device.

    Attributes
    ----------
    device : Device
    context : pyopencl.Context
    queue : pyopencl.CommandQueue
        In order, with profiling enabled, so that every launch can report
        its kernel time.  Inside :func:`using_queue` (a lane of
        :func:`clkit.map`), that lane's queue instead.
    """

    def __init__(self, device: Device):
        self.device = device
        self.context = cl.Context([device.cl_device])
        self.own_queue = self.new_queue()

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

    def __repr__(self):
        return f"<clkit.Runtime {self.device}>"


_lock = threading.Lock()
_runtimes: dict[Device, Runtime] = {}
_by_queue: dict[int, Runtime] = {}  # id() of a runtime's queue -> the runtime
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
        The same object for the same device, from any thread.

    Examples
    --------
    >>> import clkit
    >>> rt = clkit.runtime("cpu")
    >>> rt is clkit.runtime(rt.device)
    True
    """
    dev = select(device)
    rt = _runtimes.get(dev)
    if rt is None:
        with _lock:
            rt = _runtimes.get(dev)
            if rt is None:
                rt = _runtimes[dev] = Runtime(dev)
                _by_queue[id(rt.own_queue)] = rt
    return rt


@contextlib.contextmanager
def using_queue(rt: Runtime, queue: cl.CommandQueue):
    """Send this thread's work on ``rt`` to ``queue`` (one of ``rt``'s, kept alive by the caller).

    Independent work on separate in-order queues overlaps: one image's upload
    beside another's kernels.
    """
    with _lock:
        _by_queue[id(queue)] = rt
    token = _lane.set((rt, queue))
    try:
        yield queue
    finally:
        _lane.reset(token)


def runtime_of_array(array) -> Runtime | None:
    """The clkit runtime a device array belongs to, if clkit made its context."""
    rt = _by_queue.get(id(array.queue))  # arrays made by clkit keep the runtime's queue
    return rt if rt is not None else _runtime_of_context(array.context)


def runtime_of_queue(queue) -> Runtime | None:
    """The clkit runtime whose context a queue belongs to."""
    rt = _by_queue.get(id(queue))
    return rt if rt is not None else _runtime_of_context(queue.context)


def _runtime_of_context(context) -> Runtime | None:
    for rt in list(_runtimes.values()):
        if rt.context == context:
            return rt
    return None
