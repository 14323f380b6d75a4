"""Arguments as scipy.ndimage reads them: modes, origins, axes, sizes, footprints, outputs.

Each helper raises the exception type scipy.ndimage raises for the same mistake (its tests
and its users catch those), with a message that says what to pass.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Iterable

import numpy as np

from .._engine.stencil import SCIPY_MODES as MODES

#: The element types the kernels read and write (float16 through vload_half / vstore_half).
DTYPES = tuple(np.dtype(t) for t in (np.bool_, np.int8, np.uint8, np.int16, np.uint16,
                                     np.int32, np.uint32, np.int64, np.uint64, np.float16,
                                     np.float32, np.float64))


def mode_of(mode) -> str:
    """The kernels' name of a border mode; RuntimeError for an unknown one, as scipy."""
    if not isinstance(mode, str) or mode not in MODES:
        raise RuntimeError(f"boundary mode not supported: {mode!r}; use one of "
                           f"{', '.join(MODES)}")
    return MODES[mode]


def sequence(value, n: int, what: str = "argument") -> list:
    """``value`` once per axis: a scalar repeated, or a sequence of exactly ``n`` (else
    RuntimeError, as scipy)."""
    if not isinstance(value, str) and np.iterable(value):
        values = list(value)
        if len(values) != n:
            raise RuntimeError(f"sequence argument must have length equal to input rank: "
                               f"{what} has {len(values)} values for {n} filtered axes")
        return values
    return [value] * n


def check_axes(axes, ndim: int) -> tuple:
    """``axes`` as a tuple of distinct non-negative axes (None: all of them)."""
    if axes is None:
        return tuple(range(ndim))
    if np.isscalar(axes):
        axes = (operator.index(axes),)
    elif isinstance(axes, Iterable):
        axes = tuple(operator.index(a) for a in axes)
    else:
        raise ValueError("axes must be an integer, an iterable of integers, or None")
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of range for an array of {ndim} dimensions")
    axes = tuple(a % ndim for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"axes must be unique; got {axes}")
    return axes


def check_axis(axis, ndim: int) -> int:
    """One axis (negative counts from the end); numpy's AxisError when out of range."""
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim


def check_origin(origin, size: int) -> int:
    """An origin that keeps the window's centre inside it (ValueError otherwise, as scipy)."""
    origin = operator.index(origin)
    if not -(size // 2) <= origin <= (size - 1) // 2:
        raise ValueError(f"invalid origin {origin} for a window of {size}: it must lie in "
                         f"[{-(size // 2)}, {(size - 1) // 2}]")
    return origin


def per_axis(value, ndim: int, axes: tuple, fill, what: str) -> list:
    """A per-filtered-axis argument spread over all ``ndim`` axes, ``fill`` elsewhere."""
    values = sequence(value, len(axes), what)
    full = [fill] * ndim
    for a, v in zip(axes, values):
        full[a] = v
    return full


def expand_to(ndim: int, axes: tuple, array: np.ndarray, what: str) -> np.ndarray:
    """A weights or footprint array of ``len(axes)`` dimensions with unit axes elsewhere."""
    if len(axes) < ndim:
        if array.ndim != len(axes):
            raise RuntimeError(f"{what}.ndim ({array.ndim}) must match len(axes) "
                               f"({len(axes)})")
        array = np.expand_dims(array, tuple(a for a in range(ndim) if a not in axes))
    if array.ndim != ndim:
        raise RuntimeError(f"{what}.ndim ({array.ndim}) must match len(axes) ({len(axes)})")
    return array


def footprint_of(name: str, size, footprint, ndim: int, axes: tuple) -> np.ndarray:
    """The boolean footprint of a rank filter over all axes, from ``size`` or ``footprint``."""
    if footprint is None:
        if size is None:
            raise RuntimeError(f"{name}: pass size or footprint")
        sizes = sequence(size, len(axes), "size")
        footprint = np.ones([operator.index(s) for s in sizes], dtype=bool)
    else:
        if size is not None:
            warnings.warn("ignoring size because footprint is set", UserWarning, stacklevel=4)
        footprint = np.asarray(footprint, dtype=bool)
    return expand_to(ndim, axes, footprint, "footprint")


def check_float(name: str, what: str, value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: {what} must be a real number, not {value!r}") from None


def check_cval(name: str, cval) -> float:
    if not isinstance(cval, (int, float)) and np.iscomplexobj(cval):
        raise NotImplementedError(f"{name}: a complex cval is not supported by clkit.ndimage")
    return check_float(name, "cval", cval)


def output_dtype(name: str, output, input_dtype, shape) -> tuple:
    """(the result's dtype, the caller's output array or None) as scipy reads ``output``.

    ``output`` is None (the input's dtype), a dtype, a type, a dtype's name, or an
    array of the input's shape.
    """
    if output is None:
        dtype, target = np.dtype(input_dtype), None
    elif isinstance(output, (type, np.dtype)):
        dtype, target = np.dtype(output), None
    elif isinstance(output, str):
        dtype, target = np.dtype(output), None
        if not issubclass(dtype.type, np.number):
            raise RuntimeError(f"{name}: output must have a numeric dtype; got {output!r}")
    else:
        target = output
        if tuple(output.shape) != tuple(shape):
            raise RuntimeError(f"{name}: output has shape {tuple(output.shape)}; the result "
                               f"has shape {tuple(shape)}")
        dtype = np.dtype(output.dtype)
    if dtype.kind == "c":
        raise NotImplementedError(f"{name}: complex output ({dtype}) is not supported by "
                                  "clkit.ndimage; filter the real and imaginary parts apart")
    if dtype not in DTYPES:
        raise RuntimeError(f"{name}: output dtype {dtype} not supported; use bool, an integer "
                           "type or float16/32/64")
    return dtype, target
