"""A chain of filters on a dask array: one task per output block, reading the input chunks
its window touches (see ``_plan``), with the declared dtype and meta of the last filter."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ._blocks import Block, run_block
from ._plan import MODES, Pass, pieces, plan_axis


@dataclass(frozen=True, eq=False)
class Filter:
    """A clkit filter bound to its arguments, with what clkit.dask must know of it.

    ``function(image, *args, device=..., **kwargs)`` takes and returns device arrays;
    ``halo[i]`` is ``(lo, hi)``: output ``p`` along input axis ``i`` reads ``p - lo`` to
    ``p + hi``; ``modes[i]`` the border mode there; ``dtype`` the result's dtype;
    ``drop_last``: the result lacks the input's last axis (which must be one chunk).
    """
    function: Callable
    args: tuple
    kwargs: dict
    halo: tuple
    modes: tuple
    dtype: np.dtype
    drop_last: bool = False
    name: str = field(default="")

    def __dask_tokenize__(self):
        from dask.base import tokenize
        # (dask tokenizes a function by its name where it is importable, else by its code)
        return ("clkit.dask.Filter", tokenize(self.function, self.args,
                                              sorted(self.kwargs.items())),
                self.halo, self.modes, str(self.dtype), self.drop_last)


#: The attribute of a clkit.dask result that remembers how it was made, so that a filter
#: applied to it joins the same pass.
CHAIN = "_clkit_chain"


def filtered(image, new: Filter, device):
    """``new`` applied to the dask array ``image``: a dask array.  When ``image`` is itself a
    clkit.dask result for the same device spec, the filters run as one chain from its input."""
    source, filters = image, ()
    made = getattr(image, CHAIN, None)
    if made is not None and made[2] == device:
        source, filters = made[0], made[1]
    filters = filters + (new,)
    result = build(source, filters, device)
    setattr(result, CHAIN, (source, filters, device))
    return result


def build(source, filters: tuple, device):
    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    ndim = source.ndim
    steps = [[] for _ in range(ndim)]
    kept = ndim
    for f in filters:
        for axis in range(kept):
            lo, hi = f.halo[axis]
            steps[axis].append(Pass(lo, hi, MODES[f.modes[axis]]))
        kept -= f.drop_last
    if kept < ndim:  # a dropped axis is read whole
        source = source.rechunk({axis: -1 for axis in range(kept, ndim)})
    out_chunks = source.chunks[:kept]
    dtype = np.dtype(filters[-1].dtype)
    meta = np.empty((0,) * kept, dtype)
    if any(n == 0 for n in source.shape):
        return da.zeros(tuple(sum(c) for c in out_chunks), dtype=dtype, chunks=out_chunks)

    per_axis = []
    for axis, chunks in enumerate(source.chunks):
        n = sum(chunks)
        bounds = np.cumsum((0,) + chunks)
        blocks = range(len(chunks)) if axis < kept else [None]
        plans = []
        for b in blocks:
            start, stop = (bounds[b], bounds[b + 1]) if b is not None else (0, n)
            plan = plan_axis(n, int(start), int(stop), steps[axis])
            plans.append((plan, pieces(plan.source, chunks)))
        per_axis.append(plans)

    label = "-".join(f.name or f.function.__name__ for f in filters)
    name = f"clkit-{label}-{tokenize(source, filters, device)}"
    dsk = {}
    for index in itertools.product(*(range(len(c)) for c in out_chunks)):
        axes = tuple(per_axis[axis][index[axis]] if axis < kept else per_axis[axis][0]
                     for axis in range(ndim))
        keys = list(itertools.product(*(sorted({p[2] for p in pcs}) for _, pcs in axes)))
        block = Block(filters, device, axes, keys)
        dsk[(name,) + index] = (run_block, block) + tuple((source.name,) + k for k in keys)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[source])
    return da.Array(graph, name, out_chunks, meta=meta)


def check_mode(function: str, mode, ndim: int, modes=tuple(MODES)) -> tuple:
    """A mode, or one per axis, as the planner's per-axis tuple of ``ndim`` names."""
    given = (mode,) * ndim if isinstance(mode, str) else tuple(mode)
    if len(given) != ndim or not all(isinstance(m, str) and m in modes for m in given):
        raise ValueError(f"{function}: mode must be one of {', '.join(modes)} (or one per "
                         f"axis, {ndim} in all), not {mode!r}")
    return given
