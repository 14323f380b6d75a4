"""The work sizes of a kernel launch, checked before the driver sees them, and its errors.

A driver may abort the process rather than refuse a launch it cannot run (PoCL with more
work-items than its ``size_t`` counts, or more local memory than it has), so every size is
checked here first, with a message that says what to pass instead.
"""

from __future__ import annotations

import math

import numpy as np
import pyopencl as cl

from .._errors import ArgumentValueError
from .._memory.array import _size
from .._platform.runtime import driver_error
from .convert import LocalMemory


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
