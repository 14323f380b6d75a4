"""The uniform launch API: calling a kernel like a Python function.

A :class:`Kernel` is bound once per device runtime (the pyopencl kernel, a
converter per parameter from :mod:`clkit._launch.convert`, the work-group limits);
a call then checks and converts its arguments, sets them on the kernel and
enqueues it.  Device arrays and plain numbers take a short path that skips
the general converters; by-value arguments equal to the previous call's are
not set again (the kernel keeps them), since on CPU drivers setting an
argument can cost as much as the enqueue itself.

Every work size is checked before the driver sees it (a driver may abort the
process rather than refuse a launch it cannot run: PoCL with more work-items
than its ``size_t`` counts, or more local memory than it has), with a
message that says what to pass instead.

The library's plans launch the same kernel with the same masks, row maps and
work sizes call after call, only the buffers changing: a :class:`Prepared`
launch runs its first call through :meth:`Kernel.__call__`, with every
check, and then, from a kernel object of its own that the bound kernel set
up with the fixed arguments (:meth:`_Bound.prepare`), only sets the buffers
and enqueues, as a hand-written pyopencl program does.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import struct
import threading
import weakref
from weakref import ref as _weakref

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from .._build.source import Param
from .._errors import ArgumentTypeError, ArgumentValueError
from .._memory import transfer as _transfer
from .._memory.array import _size
from .._platform.devices import Device, check_process, debug_mode, default_device
from .._platform.runtime import (Runtime, _runtimes, _simulator_turn, after, driver_error,
                                 registered, runtime, runtime_of_array, runtime_of_queue)
from .._trace import trace as _trace
from .convert import STAGE, LocalMemory, converter, copy_back

_Array = cl_array.Array
_Buffer = cl.MemoryObjectHolder
_enqueue = cl.enqueue_nd_range_kernel  # the one place kernels are enqueued (Kernel.__call__)

_recording: contextvars.ContextVar = contextvars.ContextVar("clkit_recording", default=None)


@contextlib.contextmanager
def recording():
    """Collect the :class:`Launch` of every kernel call made in the block, in this thread.

    A library function enqueues its kernels without waiting and returns no
    launch; this is how a benchmark gets their device times: once the queue
    has finished, ``sum(l.kernel_ms for l in launches)``.

    Examples
    --------
    >>> import numpy as np, clkit
    >>> from clkit._launch.kernel import recording
    >>> from clkit.kernels import vector_add
    >>> a = clkit.to_device(np.ones(4, np.float32), device="cpu")
    >>> with recording() as launches:
    ...     _ = vector_add(a, a)
    >>> len(launches), launches[0].kernel.name
    (1, 'vector_add')
    """
    launches: list = []
    token = _recording.set(launches)
    try:
        yield launches
    finally:
        _recording.reset(token)


class Launch:
    """One kernel launch: its event, and its kernel time once finished.

    Returned by a :class:`Kernel` call.  ``kernel_ms`` waits for the launch (and the copies
    back) if needed, then reads the kernel's start and end from the profiling event.

    Examples
    --------
    >>> import numpy as np, clkit
    >>> program = clkit.Program.from_source(
    ...     "__kernel void fill(__global int* a) { a[get_global_id(0)] = 7; }")
    >>> a = np.zeros(3, np.int32)
    >>> launch = program.fill(a, device="cpu", wait=False)
    >>> launch.wait().done, a
    (True, array([7, 7, 7], dtype=int32))
    >>> launch.kernel_ms >= 0
    True
    """

    __slots__ = ("kernel", "_rt", "_queue", "event", "_last", "_pending", "_ms", "_count",
                 "_copies", "_in_place", "_foreign")

    def __init__(self, kernel, rt, queue):
        self.kernel = kernel
        self._rt = rt
        self._queue = queue  # the queue it is enqueued on
        self.event = None  # the kernel's event; None when nothing ran (an empty global size)
        self._last = None  # the last command of the launch: the kernel or its last copy back
        self._pending = False
        self._ms = None
        self._count = None  # while converting arguments: element count of the first array
        # (buffer, target array, contiguous staging array, how: _convert.COPY, MAP or STAGE) of
        # each written numpy argument
        self._copies = None
        # while converting the arguments of a call that waits for its kernel: the numpy arrays
        # the kernel uses in place, and whether it writes them (see _convert); None for a call
        # that returns before its kernel finishes
        self._in_place = None
        # (device array, whether the kernel writes it) of each argument on another queue
        self._foreign = None

    @property
    def device(self) -> Device:
        """The device the kernel ran on."""
        return self._rt.device

    def wait(self) -> "Launch":
        """Block until the kernel and its copies back have finished."""
        if self._pending:
            self._pending = False
            try:
                self._last.wait()
            except cl.Error as exc:
                name = self.kernel.name
                raise driver_error(exc, self._rt, f"kernel {name}", kernel=name) from exc
            for buf, target, staging, how in self._copies or ():
                if how == STAGE:
                    try:
                        _transfer.staging(self._rt, self._queue).download(self._queue, buf,
                                                                           staging)
                    except cl.Error as exc:
                        raise driver_error(exc, self._rt, f"copying {_size(staging.nbytes)} "
                                           "from the device") from exc
                if staging is not target:  # a target that could not be copied into directly
                    target[...] = staging
        return self

    @property
    def done(self) -> bool:
        """Whether the launch has finished, its numpy outputs written, without waiting for the
        device: once its work there is over, what is left on the host (copies into numpy
        arrays) is done now."""
        if self._pending:
            self._queue.flush()  # (a driver may not start what was enqueued until then)
            if self._last.command_execution_status != cl.command_execution_status.COMPLETE:
                return False
        self.wait()
        return True

    @property
    def kernel_ms(self) -> float:
        """Device time of the kernel alone, in milliseconds."""
        if self._ms is None:
            self.wait()
            if self.event is None:
                self._ms = 0.0
            else:
                self._ms = (self.event.profile.end - self.event.profile.start) * 1e-6
        return self._ms

    def __repr__(self):
        state = f"{self.kernel_ms:.3f} ms" if self.done else "running"
        return f"<Launch {self.kernel} on {self.device.id}: {state}>"


# How each parameter's argument is checked on the short path of a call.
_SLOW, _BUFFER, _INT, _FLOAT = range(4)


class _Bound:
    """A kernel's state on one device runtime: the pyopencl kernel and how to set its arguments.

    ``plan`` has one ``(index, how, what, pack, convert)`` per parameter: how
    the short path of a call checks its argument (a ``__global`` pointer of
    one scalar type, ``_BUFFER``, takes a device array of dtype ``what``;
    ``_INT`` a Python int within the range ``what``; ``_FLOAT`` a Python
    float of magnitude at most ``what``; ``_SLOW``, nothing: the converter
    does), ``pack`` turning a by-value scalar into its bytes (``None`` for
    the rest), and the parameter's converter.  ``sent[i]`` is what the
    kernel holds from the last call: the scalar, or for a device array a
    weak reference to it, with its queue and size (a live array keeps its
    buffer, so the same array need not be checked or set again; a weak
    reference keeps no memory alive).
    """

    __slots__ = ("name", "device", "rt", "program", "knl", "lock", "params", "plan", "sent",
                 "max_group", "required", "max_items", "local_args", "local_room", "sizes",
                 "kernel")

    def __init__(self, name: str, rt: Runtime, built):
        self.name = name
        self.device = rt.device
        self.rt = rt
        self.program = built.program
        self.knl = cl.Kernel(built.program, name)
        self.kernel = None  # the finalizer that drops this when its Kernel goes
        self.lock = threading.Lock()  # clSetKernelArg is not thread-safe on one kernel object
        self.params = built.signatures[name]
        self.plan = [(i, *_short_path(p),
                      struct.Struct(p.dtype.char).pack
                      if not p.pointer and p.width == 1 and p.dtype is not None else None,
                      converter(self, p))
                     for i, p in enumerate(self.params)]
        self.sent = [_UNSET] * len(self.params)
        # The last (global_size, local_size) given and checked, and what they became: a
        # library plan passes the same objects call after call
        self.sizes = (_UNSET, _UNSET, None, None)
        info = cl.kernel_work_group_info
        cl_device = rt.device.cl_device
        self.max_group = self.knl.get_work_group_info(info.WORK_GROUP_SIZE, cl_device)
        # reqd_work_group_size(X, Y, Z) in the source: the local size of every launch
        required = tuple(self.knl.get_work_group_info(info.COMPILE_WORK_GROUP_SIZE, cl_device))
        self.required = required if any(required) else None
        self.max_items = 2 ** cl_device.address_bits  # what the device's size_t counts
        if not rt.device.simulator and debug_mode() == "oclgrind":
            from .._platform.oclgrind import not_checked  # (only a process in debug mode)
            not_checked(name, rt.device)
        # __local arguments share what the kernel's own __local variables leave (asked before
        # any argument is set, the driver reports those alone); a driver may abort rather than
        # refuse a launch that asks for more.
        self.local_args = [i for i, p in enumerate(self.params) if p.address == "local"]
        if self.local_args:
            self.local_room = rt.device.local_mem - self.knl.get_work_group_info(
                info.LOCAL_MEM_SIZE, rt.device.cl_device)

    def where(self, param: Param) -> str:
        return f"kernel {self.name}, parameter {param.name!r} ({param.declared})"

    def prepare(self, args, global_size, local_size):
        """A launch of ``args`` made again and again, only the ``None`` slots changing (buffers):
        ``(a kernel object of its own with the other arguments set, the element type of each
        slot, global size, local size)``; None where an argument is not a device array or a
        number the short path takes.  Called after a checked call of the same arguments."""
        gsize = sizes(global_size, "global_size", self.name)
        lsize = local_for(self, gsize, local_size)
        knl = cl.Kernel(self.program, self.name)
        dtypes = []
        for (i, how, what, pack, _), arg in zip(self.plan, args):
            if arg is None:
                if how is not _BUFFER:
                    return None
                dtypes.append(what)
            elif how is _BUFFER and type(arg) is _Array and arg.dtype is what \
                    and not arg.offset and arg.flags.forc:
                knl.set_arg(i, arg.base_data)
            elif (how is _INT and type(arg) is int and what[0] <= arg <= what[1]) or \
                    (how is _FLOAT and type(arg) is float and -what <= arg <= what):
                knl.set_arg(i, pack(arg))
            else:
                return None
        return knl, tuple(dtypes), None if 0 in gsize else gsize, lsize


_UNSET = object()


#: Work sizes of these types cannot change under the same object, so a check of them holds
#: for the next call that passes the same objects (a list could be changed in between).
_IMMUTABLE_SIZES = (int, tuple)


def _short_path(p: Param) -> tuple:
    if p.pointer and p.address == "global" and p.type_name == "void":
        return _BUFFER, None  # void*: a buffer of any element type (the converter checks it)
    if p.dtype is None or p.width != 1 or p.address == "local":
        return _SLOW, None
    if p.pointer:
        return _BUFFER, p.dtype
    if p.dtype.kind in "iu":
        info = np.iinfo(p.dtype)
        return _INT, (int(info.min), int(info.max))
    return _FLOAT, float(np.finfo(p.dtype).max)


class Kernel:
    """A kernel of a :class:`Program`, callable like a function.

    Get it as ``program.name`` or ``program["name"]``; the same object is
    returned each time.  Calling it launches the kernel (see :meth:`__call__`).

    Examples
    --------
    >>> import numpy as np, clkit
    >>> program = clkit.Program.from_source(
    ...     "__kernel void twice(__global float* a) { a[get_global_id(0)] *= 2; }")
    >>> a = np.arange(4, dtype=np.float32)
    >>> launch = program.twice(a, device="cpu")
    >>> a
    array([0., 2., 4., 6.], dtype=float32)
    >>> program.twice is program["twice"]
    True
    """

    def __init__(self, program, name: str):
        self.program = program
        self.name = name

    def __repr__(self):
        return f"<clkit.Kernel {self.name} of {self.program.origin}>"

    def __str__(self):
        return self.name

    def params(self, device=None) -> list[Param]:
        """The kernel's parameters as the device's compiler reports them."""
        rt = self._runtime(device, (), None)
        return self.bound(rt).params

    def __call__(self, *args, global_size=None, local_size=None, device=None, wait=True,
                 queue=None):
        """Launch the kernel.

        Parameters
        ----------
        *args
            One argument per kernel parameter: a numpy array or a device array for a
            ``__global`` pointer (checked against its element type), a Python or numpy
            scalar for a value (converted to its declared type, range-checked),
            :class:`LocalMemory` for a ``__local`` pointer.
        global_size : int or tuple of int, optional
            Work-items per dimension; default: the element count of the first
            array argument, counted in its declared element type.
        local_size : int or tuple of int, optional
            Work-group size; it must divide ``global_size``.  ``None`` lets
            the driver choose a valid one.
        device : Device or str, optional
            Where to run.  Default: the program's device, else the device of
            the first device-array argument, else :func:`clkit.select`.
        wait : bool
            Wait for the kernel and the copies back (default).  With
            ``False``, call ``.wait()`` on the returned launch before reading
            numpy outputs; numpy arguments are then always copied, where a
            waited-for call on a CPU driver uses them in place.
        queue : pyopencl.CommandQueue, optional
            Enqueue on this queue of the device's runtime context (from
            ``clkit.runtime(device).new_queue()``) instead of the runtime's
            own, to overlap independent work.

        Returns
        -------
        Launch

        Raises
        ------
        ArgumentTypeError
            A wrong number of arguments, an array of another element type than the
            parameter's, a value of a type the parameter cannot take.
        ArgumentValueError
            A scalar out of its type's range, a ``global_size`` that ``local_size`` does
            not divide, ``__local`` memory beyond the device's.
        BuildError
            The program does not compile for the device (at its first launch there).
        LaunchError
            The driver refused the launch; ``context_lost`` says whether the device's
            context went with it.

        Examples
        --------
        >>> import numpy as np, clkit
        >>> prg = clkit.Program.from_source(
        ...     "__kernel void add(__global float* x, float y) { x[get_global_id(0)] += y; }")
        >>> x = clkit.to_device(np.zeros(4, np.float32), device="cpu")
        >>> launch = prg.add(x, 2.5)
        >>> x.get(), launch.kernel_ms >= 0
        (array([2.5, 2.5, 2.5, 2.5], dtype=float32), True)
        """
        t0 = _trace.active and _trace.clock()
        rt = None  # the common cases first, the rest (and every error) in _runtime
        if device is None:
            if queue is None:
                spec = self.program.device
                if spec is None:
                    for arg in args:
                        if isinstance(arg, _Array):
                            rt = registered(arg.queue)
                            break
                elif type(spec) is Device:
                    rt = _runtimes.get(spec.key)
        elif type(device) is Device:
            rt = _runtimes.get(device.key)
        if rt is None or rt.lost is not None:
            rt = self._runtime(device, args, queue)
        if rt.device.simulator and not _simulator_turn.held():
            with _simulator_turn:  # (see clkit._platform.runtime.simulator_turn)
                launch = _call(self, *args, global_size=global_size, local_size=local_size,
                               device=rt.device, wait=True, queue=queue)
                (queue or rt.queue).finish()
            return launch
        bound = rt.kernels.get(id(self)) or self._bind(rt)
        if len(args) != len(bound.plan):
            names = ", ".join(p.declared for p in bound.params)
            raise ArgumentTypeError(f"kernel {self.name} takes {len(bound.plan)} arguments "
                                    f"({names}); got {len(args)}")
        own = rt.queue
        if queue is None:
            queue = own
        elif queue is not own and (queue.context != rt.context or not queue.properties
                                   & cl.command_queue_properties.PROFILING_ENABLE):
            raise ArgumentValueError(f"kernel {self.name}: the queue belongs to another context "
                                     "or keeps no timings; make it with "
                                     "clkit.runtime(device).new_queue()")
        if bound.local_args:
            check_local_memory(bound, args)
        launch = Launch(self, rt, queue)
        if wait:
            launch._in_place = []
        count = None
        made = None  # what the converters made (buffers of numpy arguments), alive until enqueued
        knl = bound.knl
        with bound.lock:  # the arguments set on the kernel object are shared by every thread
            sent = bound.sent
            for i, how, what, pack, convert in bound.plan:
                # The short path takes what needs no conversion; anything else, and every
                # mistake, goes to the parameter's converter.
                arg = args[i]
                if how is _BUFFER:
                    last = sent[i]
                    if last is not _UNSET and last[0]() is arg and last[1] is queue:
                        if count is None:  # the array set last time, still alive: its buffer
                            count = last[2]  # is too, and the kernel holds it
                        continue
                    sent[i] = _UNSET
                    if (type(arg) is _Array and arg.queue is queue and arg.dtype is what
                            and not arg.offset and arg.flags.forc):
                        size = arg.size
                        if count is None:
                            count = size
                        knl.set_arg(i, arg.base_data)
                        sent[i] = (_weakref(arg), queue, size)
                        continue
                if how is _INT and type(arg) is int and what[0] <= arg <= what[1]:
                    if arg == sent[i]:
                        continue  # the kernel still holds it
                    value = arg
                elif how is _FLOAT and type(arg) is float and -what <= arg <= what:
                    if arg is sent[i]:
                        continue
                    value = arg
                else:
                    value = convert(arg, launch)
                    made = [value] if made is None else made + [value]
                    if count is None:
                        count = launch._count
                if pack is None:
                    try:
                        knl.set_arg(i, value)
                    except cl.Error as exc:  # e.g. a record of another size than the struct's
                        what = (f"a {value.dtype} value of {value.nbytes} bytes"
                                if isinstance(value, np.generic) else "the value")
                        raise ArgumentTypeError(f"{bound.where(bound.params[i])}: the driver "
                                                f"refuses {what} ({exc})") from exc
                else:
                    sent[i] = _UNSET  # until the driver has it
                    knl.set_arg(i, pack(value))
                    sent[i] = value
            last = bound.sizes
            if global_size is last[0] and local_size is last[1]:
                gsize, lsize = last[2], last[3]
            else:
                if global_size is not None:
                    gsize = global_for(bound, global_size)
                elif count is not None:
                    gsize = (count,)
                else:
                    raise ArgumentTypeError(f"kernel {self.name}: no array argument to take "
                                            "the global size from; pass global_size=")
                lsize = local_for(bound, gsize, local_size)
                if type(global_size) in _IMMUTABLE_SIZES and (
                        local_size is None or type(local_size) in _IMMUTABLE_SIZES):
                    bound.sizes = (global_size, local_size, gsize, lsize)
            if 0 in gsize:
                return launch  # nothing to run: not pending, so nothing to wait for or copy back
            foreign = launch._foreign
            if foreign:  # after the work already on those arrays' queues
                for q in {id(a.queue): a.queue for a, _ in foreign}.values():
                    after(queue, q)
            try:
                launch.event = launch._last = _enqueue(queue, knl, gsize, lsize)
            except cl.Error as exc:
                raise launch_error(exc, bound, gsize, lsize) from exc
        if foreign:
            _order_after(rt, queue, launch.event, foreign)
        launch._in_place = None
        if t0:
            _trace.kernel(t0, launch, queue, args)
        if launch._copies:
            try:
                launch._last = copy_back(queue, launch._copies, t0) or launch._last
            except cl.Error as exc:
                raise launch_error(exc, bound, gsize, lsize) from exc
        launch._pending = True
        collect = _recording.get()
        if collect is not None:
            collect.append(launch)
        if wait:
            launch.wait()
        return launch

    def _runtime(self, device, args, queue) -> Runtime:
        """The runtime to launch on: see ``device`` in :meth:`__call__`."""
        if device is None:
            if queue is not None:
                rt = runtime_of_queue(queue)
                if rt is not None:
                    return _working(rt)
            device = self.program.device
            if device is None:
                for arg in args:
                    if isinstance(arg, _Array):
                        rt = runtime_of_array(arg)
                        if rt is not None:
                            return _working(rt, "the device array")
                device = default_device()
        return runtime(device)

    def bound(self, rt: Runtime) -> _Bound:
        """This kernel's state in ``rt``'s context, made on first use and kept by the runtime."""
        return rt.kernels.get(id(self)) or self._bind(rt)

    def _bind(self, rt: Runtime) -> _Bound:
        built = self.program.build(rt.device)
        if self.name not in built.signatures:
            raise AttributeError(f"{self.program.origin} has no kernel {self.name!r}; "
                                 f"its kernels are: {', '.join(built.kernel_names)}")
        bounds = rt.kernels  # by id: a kernel that goes leaves its runtimes' state too
        bound = bounds.make(id(self), lambda: _Bound(self.name, rt, built))
        if bound.kernel is None:
            bound.kernel = weakref.finalize(self, bounds.drop, id(self))
        return bound


_call = Kernel.__call__  # (the launch itself, inside the simulator's turn)


def _order_after(rt: Runtime, queue, event, foreign) -> None:
    """After a kernel on ``queue`` that uses device arrays of other queues: what is enqueued
    later on the queue of an array it writes runs after it, as after a library call into
    ``out=``, and each array's buffer stays alive until the kernel has ended (a pooled one
    goes back to the pool of its own queue only then)."""
    written = {id(a.queue): a.queue for a, writes in foreign if writes}
    for q in written.values():
        after(q, queue)
    rt.in_use.keep(event, *(a.base_data for a, _ in foreign))


def _working(rt: Runtime, what: str = "the queue") -> Runtime:
    """``rt`` if it can still be used, else the error that says why not."""
    if rt.lost is not None:
        check_process()  # a forked child: say so rather than blame the context
        raise rt.gone(what)
    return rt


class Prepared:
    """The launch of ``program``'s kernel ``name`` on ``rt`` with ``args``; a call passes the
    buffers at the ``None`` slots.  Nothing is built before the first call.

    ``prepared(queue, *buffers)`` enqueues on ``queue`` (one of ``rt``'s
    context) and returns without waiting; a buffer is a C-contiguous device
    array (as :mod:`clkit._engine.dispatch` passes them) or a pyopencl buffer
    (scratch memory).  The first call, every call inside :func:`clkit.trace`
    or :func:`recording`, and any call whose buffers are not plain device
    arrays of the declared element type go through :meth:`Kernel.__call__`,
    with all its checks, hooks and messages.
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
        # (bound kernel, _Bound.prepare's kernel object, element types, global size, local
        # size) once a call has checked the arguments; False where they cannot be kept
        self.own = None
        self.lock = threading.Lock()  # the kernel object's arguments are shared by threads

    def __call__(self, queue, *buffers):
        own = self.own
        if own and not _trace.active and _recording.get() is None and self.rt.lost is None:
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
                        return _enqueue(queue, knl, gsize, lsize)
                    except cl.Error as exc:
                        raise launch_error(exc, bound, gsize, lsize) from exc
        args = list(self.args)
        for i, b in zip(self.slots, buffers):
            args[i] = b
        if self.kernel is None:
            self.kernel = self.program.kernel(self.name)
        launch = self.kernel(*args, queue=queue, **self.sizes)
        if own is None:
            bound = self.kernel.bound(self.rt)
            fixed = None if launch._copies else bound.prepare(
                self.args, self.sizes["global_size"], self.sizes["local_size"])
            self.own = (bound, *fixed) if fixed else False
        return launch.event


# -- work sizes ------------------------------------------------------------------------------

def global_for(bound, global_size) -> tuple:
    """``global_size`` checked: 1 to 3 sizes whose work-items the device's ``size_t`` counts."""
    gsize = sizes(global_size, "global_size", bound.name)
    if math.prod(gsize) >= bound.max_items:
        raise ArgumentValueError(
            f"kernel {bound.name}: global_size {gsize} is {math.prod(gsize):,} work-items, more "
            f"than {bound.device} counts (its size_t has {bound.max_items.bit_length() - 1} "
            "bits)")
    return gsize


def sizes(value, what: str, kernel: str) -> tuple:
    if isinstance(value, (int, np.integer)):
        sizes = (value,)
    else:
        try:
            sizes = tuple(value)
        except TypeError:
            sizes = ()
    if not 1 <= len(sizes) <= 3 or not all(
            isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 0
            for s in sizes):
        raise ArgumentValueError(f"kernel {kernel}: {what} must be a non-negative int or a tuple "
                                 f"of 1 to 3 of them, got {value!r}")
    return tuple(int(s) for s in sizes)


def local_for(bound, gsize: tuple, local_size) -> tuple | None:
    """The checked local size of a launch: ``local_size``, else the kernel's required one, else
    None (the driver's choice)."""
    if local_size is None and bound.required:
        local_size = _required_local(bound.required, len(gsize))
    return None if local_size is None else _check_local(bound, gsize, local_size)


def _required_local(required: tuple, dims: int) -> tuple:
    """A ``reqd_work_group_size`` as the local size of a launch of ``dims`` dimensions (all
    three when a dimension beyond them is not 1, which the launch then refuses)."""
    return required[:dims] if all(n == 1 for n in required[dims:]) else required


def _check_local(bound, gsize: tuple, local_size) -> tuple:
    lsize = sizes(local_size, "local_size", bound.name)
    if bound.required and lsize != _required_local(bound.required, len(lsize)):
        raise ArgumentValueError(f"kernel {bound.name}: its reqd_work_group_size "
                                 f"{bound.required} is the only local_size it runs with; pass "
                                 f"that, or none, not {lsize}")
    if len(lsize) != len(gsize):
        raise ArgumentValueError(f"kernel {bound.name}: local_size {lsize} and global_size "
                                 f"{gsize} have different numbers of dimensions")
    for dim, (g, l, most) in enumerate(zip(gsize, lsize, bound.device.max_work_item_sizes)):
        if l == 0:
            raise ArgumentValueError(f"kernel {bound.name}: local_size {lsize} has a 0 in "
                                     f"dimension {dim}; every size must be at least 1")
        if g % l:
            up = -(-g // l) * l
            raise ArgumentValueError(
                f"kernel {bound.name}: global_size {g} is not a multiple of local_size {l} in "
                f"dimension {dim}; round global_size up (to {up}) and skip the extra work-items "
                "in the kernel")
        if l > most:
            raise ArgumentValueError(f"kernel {bound.name}: local_size {l} in dimension {dim} is "
                                     f"over the device's limit {most} ({bound.device})")
    if math.prod(lsize) > bound.max_group:
        raise ArgumentValueError(
            f"kernel {bound.name}: a work-group of {math.prod(lsize)} work-items is over this "
            f"kernel's limit of {bound.max_group} on {bound.device}")
    return lsize


def check_local_memory(bound, args: tuple):
    # Before any argument is set: PoCL aborts setting one beyond the device's local memory.
    asked = sum(a.nbytes if isinstance(a, LocalMemory) else a.size
                for a in (args[i] for i in bound.local_args)
                if isinstance(a, (LocalMemory, cl.LocalMemory)))
    if asked > bound.local_room:
        raise ArgumentValueError(
            f"kernel {bound.name}: its __local arguments ask for {_size(asked)} per work-group, "
            f"and {bound.device} has {_size(max(bound.local_room, 0))} of local memory left for "
            "them (beside the kernel's own __local variables); pass smaller LocalMemory sizes")


def launch_error(exc, bound, gsize, lsize) -> Exception:
    code = getattr(exc, "code", None)
    if code in (cl.status_code.INVALID_WORK_GROUP_SIZE, cl.status_code.INVALID_WORK_ITEM_SIZE,
                cl.status_code.INVALID_GLOBAL_WORK_SIZE):
        return ArgumentValueError(f"kernel {bound.name} on {bound.device}: the driver refuses "
                                  f"global_size {gsize} with local_size {lsize} ({exc})")
    return driver_error(exc, bound.rt, f"kernel {bound.name}", kernel=bound.name,
                        advice="use smaller inputs or fewer work-items per group")
