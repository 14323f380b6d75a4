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
"""

from __future__ import annotations


class ClkitError(Exception):
    """Base of every exception clkit raises."""


class NoOpenCLError(ClkitError, RuntimeError):
    """The OpenCL ICD loader finds no platform at all."""


class DeviceNotFoundError(ClkitError, LookupError):
    """A device spec matches none of the visible devices."""


class BuildError(ClkitError, RuntimeError):
    """An OpenCL program failed to compile.

    Attributes: ``file`` (the source's path or name), ``device``, ``options``
    and ``log`` (the compiler's log with line numbers mapped to the original
    files).
    """

    def __init__(self, message, *, file, device, options, log):
        super().__init__(message)
        self.file = file
        self.device = device
        self.options = options
        self.log = log


class LaunchError(ClkitError, RuntimeError):
    """The OpenCL driver refused to run a kernel or a transfer."""


class OutOfDeviceMemoryError(LaunchError, MemoryError):
    """An allocation does not fit in the device's memory or max allocation."""


class ArgumentTypeError(ClkitError, TypeError):
    """An argument has the wrong type or dtype, or the count is wrong."""


class ArgumentValueError(ClkitError, ValueError):
    """An argument has the right type but a wrong size, shape or value."""
