"""Argument checks shared by the library functions.

Each check names the function and the argument, says what is wrong and what
to pass instead, and raises an error that is also a ``TypeError`` or a
``ValueError``.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from pyopencl.array import Array

from .._errors import ArgumentTypeError, ArgumentValueError
from .._platform.devices import Device


def is_device_array(x) -> bool:
    return isinstance(x, Array)


def host_array(x, name: str, arg: str) -> np.ndarray:
    """``x`` as a numpy array (device arrays are not accepted here)."""
    if isinstance(x, np.ndarray):
        arr = x
    else:
        try:
            arr = np.asarray(x)
        except (TypeError, ValueError) as exc:
            raise ArgumentTypeError(f"{name}: {arg} must be an array, not "
                                    f"{type(x).__name__}") from exc
    if arr.dtype == object:
        raise ArgumentTypeError(f"{name}: {arg} holds Python objects; pass a numeric array")
    if not arr.dtype.isnative:  # big-endian data (FITS files, network formats): kernels read native
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


def array(x, name: str, arg: str):
    """A device array as it is, anything else as a numpy array."""
    return x if is_device_array(x) else host_array(x, name, arg)


def check_dtype(name: str, arg: str, dtype, allowed) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype not in allowed:  # a dtype equals its scalar type: no conversion per call
        names = ", ".join(np.dtype(a).name for a in allowed)
        raise ArgumentTypeError(f"{name}: {arg} has dtype {dtype}; use one of {names} "
                                f"(e.g. {arg}.astype(np.float32))")
    return dtype


def check_ndim(name: str, arg: str, shape, allowed, what: str):
    if len(shape) not in allowed:
        raise ArgumentValueError(f"{name}: {arg} must be {what}; got an array of shape "
                                 f"{tuple(shape)}")


def check_number(name: str, arg: str, value, *, positive=False, non_negative=False,
                 integer=False, finite=True) -> float:
    """A real number argument (a Python or numpy scalar), checked; finite unless told."""
    kinds = numbers.Integral if integer else numbers.Real
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, kinds):
        kind = "an integer" if integer else "a number"
        raise ArgumentTypeError(f"{name}: {arg} must be {kind}, not {value!r}")
    if finite and not math.isfinite(value):
        raise ArgumentValueError(f"{name}: {arg} must be finite, got {value!r}")
    if positive and value <= 0:
        raise ArgumentValueError(f"{name}: {arg} must be positive, got {value!r}")
    if non_negative and value < 0:
        raise ArgumentValueError(f"{name}: {arg} must not be negative, got {value!r}")
    return int(value) if integer else float(value)


def require_fp64(name: str, device: Device, what: str):
    if not device.fp64:
        raise ArgumentTypeError(f"{name}: {what} needs double precision, which {device} lacks "
                                "(no cl_khr_fp64); use float32 or another device")


def check_same_kind(name: str, inputs) -> bool:
    """Whether the inputs are device arrays (all of them) or numpy arrays (all of them)."""
    on_device = isinstance(inputs[0], Array)
    for x in inputs:
        if isinstance(x, Array) is not on_device:
            raise ArgumentTypeError(f"{name}: pass all arrays as numpy arrays or all as "
                                    "device arrays, not a mix")
    return on_device


def check_out(name: str, out, shape, dtype, on_device: bool):
    """Check a caller's ``out=`` against the result's shape, dtype and kind."""
    if out is None:
        return None
    if not (is_device_array(out) if on_device else isinstance(out, np.ndarray)):
        want = "a device array" if on_device else "a numpy array"
        raise ArgumentTypeError(f"{name}: out must be {want} like the input, not "
                                f"{type(out).__name__}")
    if tuple(out.shape) != tuple(shape) or out.dtype != dtype:
        raise ArgumentValueError(f"{name}: out has shape {tuple(out.shape)} and dtype {out.dtype}; "
                                 f"the result needs shape {tuple(shape)} and dtype "
                                 f"{np.dtype(dtype)}")
    if not on_device and not out.flags.writeable:
        raise ArgumentValueError(f"{name}: out is read-only")
    if on_device and not out.flags.c_contiguous:
        raise ArgumentValueError(f"{name}: out is a strided view of a device array (strides "
                                 f"{out.strides}), which pyopencl cannot write through; pass a "
                                 "contiguous device array")
    return out
