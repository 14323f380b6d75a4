"""vector_add: one work-item per 16-byte vector of elements, no neighbours.

One kernel serves every element type (kernels_cl/vector_add.cl), which it is
told as a number, so that a new dtype costs no compile at all.
"""

from __future__ import annotations

import math

import numpy as np

from .._engine.checks import array, check_dtype, check_out, is_device_array, require_fp64
from .._engine.dispatch import run
from .._engine.operation import CL_TYPES, TYPE_CODES, Operation, program, round_up
from .._errors import ArgumentTypeError, ArgumentValueError
from .._launch.kernel import Prepared

GROUP = 256  # work-group size of the element-wise kernels: valid everywhere, full warps on GPUs
PER_CPU = 8  # 16-byte vectors per work-item on CPUs (vector_add.cl's PER)


class _Add(Operation):
    name = "vector_add"
    elementwise = True

    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype
        self.key = ("vector_add", shape, dtype)

    def plan(self, rt, r0, r1):
        dtype = self.dtype
        if dtype == np.float64:
            require_fp64(self.name, rt.device, "float64")
        n = (r1 - r0) * math.prod(self.shape[1:])
        # Each work-item adds one 16-byte vector: a GPU thread's widest load; on PoCL as fast
        # as 64 bytes, and numpy's own 16-byte alignment lets a CPU driver use numpy memory in
        # place.
        vw = 16 // dtype.itemsize
        per = PER_CPU if rt.device.type == "cpu" else 1
        add = Prepared(program("vector_add", PER=per), "vector_add", rt,
                       (None, None, None, n, TYPE_CODES[dtype]),
                       round_up(-(-n // (vw * per)), GROUP), GROUP)

        def launch(queue, srcs, dst):
            add(queue, srcs[0], srcs[1], dst)
        return launch


def vector_add(a, b, out=None, device=None):
    """Element-wise ``a + b``.

    Parameters
    ----------
    a, b : ndarray or device array
        Equal shapes and equal dtypes: float32, float64 (where the device has
        fp64), int8 to int64 or uint8 to uint64.  Integers wrap as in numpy.
    out : ndarray or device array, optional
        Where to write the result (same shape and dtype; the same kind as ``a``).
    device : Device or str, optional
        Where to run: a spec, ``"all"`` or a list of specs.

    Returns
    -------
    ndarray or device array
        Numpy in gives numpy out; device arrays in give a device array.

    Raises
    ------
    ArgumentTypeError
        ``a`` and ``b`` of different dtypes, or a dtype the device cannot hold (complex,
        float64 without fp64).
    ArgumentValueError
        ``a`` and ``b`` of different shapes (clkit does not broadcast), or an ``out`` of
        another shape or dtype.
    DeviceNotFoundError
        ``device`` names no visible device.

    Examples
    --------
    >>> import numpy as np
    >>> from clkit.kernels import vector_add
    >>> vector_add(np.arange(3, dtype=np.float32), np.ones(3, np.float32), device="cpu")
    array([1., 2., 3.], dtype=float32)
    """
    name = "vector_add"
    a, b = array(a, name, "a"), array(b, name, "b")
    if a.dtype != b.dtype:
        raise ArgumentTypeError(f"{name}: a has dtype {a.dtype} and b {b.dtype}; convert one "
                                f"(e.g. b.astype(a.dtype)) so that both match")
    if tuple(a.shape) != tuple(b.shape):
        raise ArgumentValueError(f"{name}: a has shape {tuple(a.shape)} and b {tuple(b.shape)}; "
                                 "clkit does not broadcast: pass arrays of equal shape")
    dtype = check_dtype(name, "a", a.dtype, CL_TYPES)
    if is_device_array(a):
        return run(_Add(tuple(a.shape), dtype), [a, b], out, device)
    # Numpy arrays go flat, so that bands (for several devices, or arrays larger than a
    # device) are runs of elements whatever the shape.
    check_out(name, out, a.shape, dtype, on_device=False)
    flat_out = out.reshape(-1) if out is not None and out.flags.c_contiguous else None
    result = run(_Add((a.size,), dtype), [np.ravel(a), np.ravel(b)], flat_out, device)
    if out is not None and flat_out is None:
        out[...] = result.reshape(a.shape)
    return out if out is not None else result.reshape(a.shape)
