"""clkit: run OpenCL kernels on any device from Python.

Find devices (:func:`devices`, :func:`select`), load a ``.cl`` source
(:func:`load`), call its kernels like functions with numpy or device arrays,
or use the ready kernels of :mod:`clkit.kernels`.
"""

from ._build.tiers import background_builds
from ._errors import (ArgumentTypeError, ArgumentValueError, BuildError, ClkitError,
                      DeviceNotFoundError, LaunchError, NoOpenCLError, OutOfDeviceMemoryError)
from ._launch.convert import LocalMemory
from ._launch.kernel import Kernel, Launch
from ._launch.map import map
from ._launch.program import Program, load
from ._memory.array import Array, empty
from ._memory.pinned import is_pinned, pinned_empty, pinned_like
from ._memory.transfer import to_device
from ._platform.devices import Device, devices, select
from ._platform.runtime import Runtime, runtime
from ._trace.trace import Trace, trace
from ._trace.trace import from_environment as _trace_from_environment

__version__ = "0.1.0"

__all__ = [
    "ArgumentTypeError", "ArgumentValueError", "Array", "BuildError", "ClkitError", "Device",
    "DeviceNotFoundError", "Kernel", "Launch", "LaunchError", "LocalMemory", "NoOpenCLError",
    "OutOfDeviceMemoryError", "Program", "Runtime", "Trace", "__version__", "background_builds",
    "devices", "empty", "is_pinned", "load", "map", "pinned_empty", "pinned_like", "runtime",
    "select", "to_device", "trace",
]

_trace_from_environment()  # CLKIT_TRACE=FILE traces the whole process
