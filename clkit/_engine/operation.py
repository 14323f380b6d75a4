"""What a library function describes to the dispatch layer: an :class:`Operation`, and the
library's programs (``kernels_cl/<name>.cl`` built with defines) and element types."""

from __future__ import annotations

import functools

import numpy as np

from .._launch.program import Program, load
from .._memory.transfer import INPUT_ALIGN
from .._platform.runtime import Runtime

CL_TYPES = {
    np.dtype(np.int8): "char", np.dtype(np.uint8): "uchar", np.dtype(np.int16): "short",
    np.dtype(np.uint16): "ushort", np.dtype(np.int32): "int", np.dtype(np.uint32): "uint",
    np.dtype(np.int64): "long", np.dtype(np.uint64): "ulong", np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
}
#: The numbers of the element types in kernels that take one at run time (vector_add.cl,
#: convolution_generic.cl's to_acc): CL_TYPES's order.
TYPE_CODES = {dtype: i for i, dtype in enumerate(CL_TYPES)}


@functools.lru_cache(maxsize=None)
def _program(name: str, defines: tuple, options: tuple) -> Program:
    return load(name, defines=dict(defines), options=options)


def program(name: str, options: tuple = (), **defines) -> Program:
    """The library program ``kernels_cl/<name>.cl`` built with these defines (one object each)."""
    return _program(name, tuple(sorted(defines.items())), tuple(options))


def round_up(n: int, m: int) -> int:
    """The smallest multiple of ``m`` that is at least ``n`` (and at least ``m``)."""
    return max(m, -(-n // m) * m)


class Operation:
    """One library call's work, as :func:`run` needs it described.

    Subclasses set ``name`` (the function's, for messages), ``shape`` and
    ``dtype`` (the result's; rows are the first axis), ``key`` (hashable:
    everything beside the device and the band that decides the kernels and
    their arguments, shapes and dtypes included) and implement :meth:`plan`.
    An operation holds no data, so it can be sent to MPI ranks.
    """

    name = ""
    shape: tuple = ()
    dtype = np.dtype(np.float32)
    key: tuple = ()
    #: Input rows a band reads beyond its own (tiles leave room for them).
    halo = 0
    #: Device bytes of temporaries per input row.
    scratch_row_bytes = 0
    #: Device bytes of result per output row, for operations whose result size varies.
    result_row_bytes = 0
    #: The widest load or store of the kernels: numpy memory aligned to it is used in place
    #: on devices that share memory with the host.
    align = INPUT_ALIGN
    #: What the tiles cut, for messages.
    what = "input"
    #: Whether each output element is computed from the inputs' elements at its own place
    #: only, so that ``out=`` may be one of the inputs itself (not another view of it).
    elementwise = False
    #: Whether each band makes results of its own size (a tuple of device arrays), which
    #: are joined along the first axis, instead of filling its rows of one result.
    gathers = False

    @property
    def speed_key(self):
        """What the speed of a device for this work depends on (not the number of rows)."""
        return (self.name, self.key)

    def rows(self, r0: int, r1: int):
        """The input rows output rows ``[r0, r1)`` read: ``(lo, hi)`` or a sorted index array."""
        return r0, r1

    def plan(self, rt: Runtime, r0: int, r1: int):
        """``launch(queue, srcs, dst)`` for output rows ``[r0, r1)`` on a device.

        ``launch`` enqueues the kernels that compute the band into ``dst``
        from ``srcs`` (one device array per input, holding the rows
        :meth:`rows` names) and returns without waiting; when the operation
        gathers, ``dst`` is None and it returns the band's results.  A plan
        whose kernels come in tiers is instead an object whose ``choose()``
        gives the launch of the tier a call runs, asked once per call.
        """
        raise NotImplementedError

    def probe_band(self, rows: int) -> tuple[int, int]:
        """The output rows a speed probe of ``rows`` rows computes."""
        return 0, rows

    def empty(self) -> tuple:
        """A gathering operation's results for an input of no rows."""
        raise NotImplementedError
