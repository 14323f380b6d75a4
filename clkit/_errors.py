"""The exceptions clkit raises.

Every error derives from :class:`ClkitError`; errors about a caller's arguments
also derive from the built-in ``TypeError`` or ``ValueError``::

    ClkitError
     +-- NoOpenCLError            (RuntimeError)  no OpenCL platform at all
     +-- DeviceNotFoundError      (LookupError)   a device spec matches nothing
     +-- BuildError               (RuntimeError)  a kernel failed to compile
     +-- LaunchError              (RuntimeError)  the driver refused a launch
     |    +-- OutOfDeviceMemoryError (MemoryError) an allocation does not fit
     +-- ArgumentTypeError        (TypeError)     wrong type, dtype or count
     +-- ArgumentValueError       (ValueError)    wrong size, range or shape

pyopencl's own exceptions are converted where clkit calls it, with
``raise ... from exc`` so that the driver's error stays in the traceback.

Every one of them pickles, so that an error raised in a worker process
(``multiprocessing``, ``concurrent.futures``, Dask) reaches the parent whole:
type, message and attributes.  A device travels as a :class:`DeviceRef` (its
id and name) and a driver error as a :class:`DriverError` (its code and
text), since neither an OpenCL device nor a pyopencl error can leave its
process as it is.  Where tblib's pickling support is installed (Dask's
distributed scheduler and its multiprocessing scheduler install it), every
exception also pickles its ``__cause__`` and ``__context__`` as they are: for
that, pyopencl's errors are made to pickle too (:func:`_driver_errors_pickle`).
"""

from __future__ import annotations

import copyreg
import pickle
import sys
from pathlib import Path


class DeviceRef:
    """A device as an error carries it out of its process: ``id`` and ``name``."""

    __slots__ = ("id", "name")

    def __init__(self, id: str, name: str):
        self.id = id
        self.name = name

    def __reduce__(self):
        return DeviceRef, (self.id, self.name)

    def __eq__(self, other):
        return (getattr(other, "id", None), getattr(other, "name", None)) == (self.id, self.name)

    def __hash__(self):
        return hash((self.id, self.name))

    def __str__(self):
        return f"{self.id} {self.name}"

    def __repr__(self):
        return f"<clkit device {self}>"


class DriverError(Exception):
    """An OpenCL driver's error as it crosses a process boundary.

    ``code`` is the OpenCL status code (``-5`` is ``CL_OUT_OF_RESOURCES``),
    ``str()`` the text pyopencl gave it.
    """

    def __init__(self, text: str, code: int | None = None):
        super().__init__(text)
        self.code = code

    def __reduce__(self):
        return DriverError, (str(self), self.code)


def _portable(value):
    """``value`` in a form that pickles: devices and driver errors as records."""
    if hasattr(value, "cl_device"):  # a clkit Device, which holds a driver handle
        return DeviceRef(value.id, value.name)
    if isinstance(value, (str, int, float, bool, type(None), DeviceRef)):
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_portable(v) for v in value)
    if isinstance(value, BaseException) and type(value).__module__.startswith("pyopencl"):
        return DriverError(str(value), getattr(value, "code", None))
    try:
        pickle.dumps(value)
    except Exception:  # noqa: BLE001 - anything that cannot travel travels as text
        if isinstance(value, BaseException):
            return DriverError(str(value), getattr(value, "code", None))
        return repr(value)
    return value


def _driver_errors_pickle() -> None:
    """Let pyopencl's errors pickle, as pyopencl errors with their routine, code and text.

    Their record of the error does not pickle; a clkit error raised from one carries it as its
    ``__cause__`` and ``__context__``, which tblib pickles as they are.  (A pyopencl build
    error's program stays behind.)
    """
    try:
        from pyopencl._cl import _ErrorRecord
    except ImportError:  # (a pyopencl that names it otherwise: its errors as they were)
        return
    copyreg.pickle(_ErrorRecord, lambda r: (_ErrorRecord, (r.routine(), r.code(), r.what())))


_driver_errors_pickle()


def _restore(cls, args, state):
    error = cls.__new__(cls, *args)
    error.args = args
    for name, value in state.items():
        setattr(error, name, value)
    return error


class ClkitError(Exception):
    """Base of every exception clkit raises.

    Examples
    --------
    >>> import clkit
    >>> try:
    ...     clkit.select("no such device")
    ... except clkit.ClkitError as error:
    ...     print(type(error).__name__)
    DeviceNotFoundError
    """

    def __reduce__(self):
        # The default rebuilds an exception by calling its class with ``args``, which fails
        # for keyword-only attributes; the state is set afterwards here instead.
        state = {name: _portable(value) for name, value in vars(self).items()}
        if self.__cause__ is not None:
            state["__cause__"] = _portable(self.__cause__)
        return _restore, (type(self), self.args, state)


class NoOpenCLError(ClkitError, RuntimeError):
    """The OpenCL ICD loader finds no platform at all.

    Its message says how to install a CPU driver (Debian's ``pocl-opencl-icd``) and, where
    NVIDIA's OpenCL library exists without an ICD file, the file to write; ``clkit doctor``
    says more.

    Examples
    --------
    >>> import clkit
    >>> issubclass(clkit.NoOpenCLError, RuntimeError)
    True
    """


class DeviceNotFoundError(ClkitError, LookupError):
    """A device spec matches none of the visible devices; the message lists those that exist.

    Examples
    --------
    >>> import clkit
    >>> try:
    ...     clkit.select("no such device")
    ... except LookupError as error:
    ...     print(str(error).split(";")[0])
    no OpenCL device matches device spec 'no such device'
    """


class BuildError(ClkitError, RuntimeError):
    """An OpenCL program failed to compile.

    The message names the file, the device and the options, and shows the compiler's
    messages with the offending lines of the original files.

    Attributes
    ----------
    file : str
        The source's path, or ``"<string>"`` for :meth:`Program.from_source`.
    device : Device
    options : tuple of str
    log : str
        The compiler's log, its line numbers mapped to the original files.

    Examples
    --------
    >>> import numpy as np, clkit
    >>> program = clkit.Program.from_source(
    ...     "__kernel void broken(__global float* a) { a[0] = b; }")
    >>> try:
    ...     program.broken(np.zeros(1, np.float32), device="cpu")
    ... except clkit.BuildError as error:
    ...     print(error.file, "undeclared identifier 'b'" in error.log)
    <string> True
    """

    def __init__(self, message, *, file, device, options, log):
        super().__init__(message)
        self.file = file
        self.device = device
        self.options = options
        self.log = log


class LaunchError(ClkitError, RuntimeError):
    """The OpenCL driver refused to run a kernel or a transfer.

    Attributes
    ----------
    device : Device or None
        Where it ran.
    kernel : str or None
        The kernel's name, or None for a transfer.
    code : int or None
        The driver's status code, or None when clkit refused before asking the driver.
    context_lost : bool
        The device's context no longer works (most often after a kernel wrote far outside
        its buffer): clkit drops it, and the next call on that device gets a new one.

    Examples
    --------
    >>> import clkit
    >>> error = clkit.LaunchError("the device's context was lost", kernel="k", code=-9999,
    ...                           context_lost=True)
    >>> error.context_lost, isinstance(error, RuntimeError)
    (True, True)
    """

    def __init__(self, message, *, device=None, kernel=None, code=None, context_lost=False):
        super().__init__(message)
        self.device = device
        self.kernel = kernel
        self.code = code
        self.context_lost = context_lost


class OutOfDeviceMemoryError(LaunchError, MemoryError):
    """An allocation does not fit in the device's memory or max allocation.

    The message says how large the allocation was, what fits, and what to do.

    Examples
    --------
    >>> import numpy as np, clkit
    >>> try:
    ...     clkit.empty((2**40,), np.float32, device="cpu")
    ... except MemoryError as error:
    ...     print(type(error).__name__, "4.00 TiB" in str(error))
    OutOfDeviceMemoryError True
    """


class ArgumentTypeError(ClkitError, TypeError):
    """An argument has the wrong type or dtype, or the count is wrong.

    Examples
    --------
    >>> import numpy as np
    >>> from clkit.kernels import vector_add
    >>> try:
    ...     vector_add(np.ones(3, np.float32), np.ones(3, np.float64), device="cpu")
    ... except TypeError as error:
    ...     print(error)
    vector_add: a has dtype float32 and b float64; convert one (e.g. b.astype(a.dtype)) so that both match
    """


class ArgumentValueError(ClkitError, ValueError):
    """An argument has the right type but a wrong size, shape or value.

    Examples
    --------
    >>> import numpy as np
    >>> from clkit.kernels import vector_add
    >>> try:
    ...     vector_add(np.ones(3, np.float32), np.ones(4, np.float32), device="cpu")
    ... except ValueError as error:
    ...     print(error)
    vector_add: a has shape (3,) and b (4,); clkit does not broadcast: ...equal shape
    """


def caller_outside_clkit() -> int:
    """The ``stacklevel`` that points a warning at the first caller outside the package."""
    package = str(Path(__file__).parent)
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level
