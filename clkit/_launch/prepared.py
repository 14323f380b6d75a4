"""A kernel launch made again and again with the same arguments but its buffers.

The library's plans launch the same kernel, with the same masks, row maps,
sizes and work sizes, call after call; only the image and result buffers
change.  :class:`Prepared` gives such a launch a pyopencl kernel object of its
own that keeps the fixed arguments, so that a call sets its buffers and
enqueues, as a hand-written pyopencl program does, instead of going through
:meth:`Kernel.__call__`'s checks argument by argument.

The first call, every call inside :func:`clkit.trace` or
:func:`clkit._launch.kernel.recording`, and any call whose buffers are not plain
device arrays of the declared element type go through
:meth:`Kernel.__call__`, with all its checks, hooks and messages.
"""

from __future__ import annotations

import threading

import pyopencl as cl
import pyopencl.array as cl_array

from .._platform.runtime import Runtime
from .._trace import trace as _trace
from . import kernel as _launch
from .work_sizes import launch_error, local_for, sizes

_Array = cl_array.Array
_Buffer = cl.MemoryObjectHolder


class Prepared:
    """The launch of ``program``'s kernel ``name`` on ``rt`` with ``args``; a call passes the
    buffers at the ``None`` slots.  Nothing is built before the first call.

    ``prepared(queue, *buffers)`` enqueues on ``queue`` (one of ``rt``'s
    context) and returns without waiting; a buffer is a C-contiguous device
    array (as :mod:`clkit._engine.dispatch` passes them) or a pyopencl buffer
    (scratch memory).
    """

    __slots__ = ("program", "name", "kernel", "rt", "args", "slots", "sizes", "own", "lock")

    def __init__(self, program, name: str, rt: Runtime, args, global_size, local_size):
        self.program, self.name = program, name
        self.kernel = None  # the Kernel, looked up at the first call (which may build it)
        self.rt = rt
        self.args = tuple(args)
        self.slots = tuple(i for i, a in enumerate(self.args) if a is None)
        self.sizes = dict(global_size=global_size, local_size=local_size, device=rt.device,
                          wait=False)
        # (bound kernel, own pyopencl kernel, element type of each slot, global size, local
        # size) once a call has checked the arguments; False where they cannot be kept (_own)
        self.own = None
        self.lock = threading.Lock()  # the kernel object's arguments are shared by threads

    def __call__(self, queue, *buffers):
        own = self.own
        if own and not _trace.active and _launch._recording.get() is None \
                and self.rt.lost is None:
            bound, knl, dtypes, gsize, lsize = own
            with self.lock:
                for i, dtype, b in zip(self.slots, dtypes, buffers):
                    if type(b) is _Array:  # contiguous: the dispatch layer sees to it
                        if b.offset or (b.dtype is not dtype and dtype is not None):
                            break
                        knl.set_arg(i, b.base_data)
                    elif isinstance(b, _Buffer):  # scratch memory, a pooled allocation
                        knl.set_arg(i, b)
                    else:
                        break
                else:
                    if gsize is None:
                        return None  # no work-items: nothing to enqueue
                    try:
                        return _launch._enqueue(queue, knl, gsize, lsize)
                    except cl.Error as exc:
                        raise launch_error(exc, bound, gsize, lsize) from exc
        args = list(self.args)
        for i, b in zip(self.slots, buffers):
            args[i] = b
        if self.kernel is None:
            self.kernel = self.program.kernel(self.name)
        launch = self.kernel(*args, queue=queue, **self.sizes)
        if own is None:
            self.own = self._own(launch)
        return launch.event

    def _own(self, launch):
        """This launch's kernel object with the fixed arguments set, as the checked call set
        them; False when one of them is not a device array or a number the short path takes."""
        bound = self.kernel.bound(self.rt)
        if bound is None or launch._copies:
            return False
        name = self.name
        gsize = sizes(self.sizes["global_size"], "global_size", name)
        lsize = local_for(bound, gsize, self.sizes["local_size"])
        knl = cl.Kernel(self.program.build(self.rt.device).program, name)
        dtypes = []
        for (i, how, what, pack, _), arg in zip(bound.plan, self.args):
            if arg is None:
                if how is not _launch._BUFFER:
                    return False
                dtypes.append(what)
            elif how is _launch._BUFFER and type(arg) is _Array and arg.dtype is what \
                    and not arg.offset and arg.flags.forc:
                knl.set_arg(i, arg.base_data)
            elif (how is _launch._INT and type(arg) is int and what[0] <= arg <= what[1]) or \
                    (how is _launch._FLOAT and type(arg) is float and -what <= arg <= what):
                knl.set_arg(i, pack(arg))
            else:
                return False
        return bound, knl, tuple(dtypes), None if 0 in gsize else gsize, lsize
