"""A chain of filters on a dask array: one task per output block, reading the input chunks
its window touches (see ``_plan``), and for an elementwise operation with another array
(``vector_add``) the chunks of that array that the step's window touches, with the declared
dtype and meta of the last filter."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
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
    ``drop_last``: the result lacks the input's last axis (which must be one chunk);
    ``operands``: how many more arrays of the same shape an elementwise step takes (halo 0),
    called as ``function(image, *operands, *args, device=..., **kwargs)``.
    """
    function: Callable
    args: tuple
    kwargs: dict
    halo: tuple
    modes: tuple
    dtype: np.dtype
    drop_last: bool = False
    name: str = field(default="")
    operands: int = 0

    def __dask_tokenize__(self):
        from dask.base import tokenize
        # (dask tokenizes a function by its name where it is importable, else by its code)
        return ("clkit.dask.Filter", tokenize(self.function, self.args,
                                              sorted(self.kwargs.items())),
                self.halo, self.modes, str(self.dtype), self.drop_last, self.operands)


#: The attribute of a clkit.dask result that remembers how it was made, so that a filter
#: applied to it joins the same pass.
CHAIN = "_clkit_chain"


def filtered(image, new: Filter, device, operands=()):
    """``new`` applied to the dask array ``image`` (and the dask arrays ``operands``, for an
    elementwise step): a dask array.  When ``image`` is itself a clkit.dask result for the
    same device spec, the filters run as one chain from its input."""
    source, filters, before = image, (), ()
    made = getattr(image, CHAIN, None)
    if made is not None and made[2] == device:
        source, filters, _, before = made
    filters, operands = filters + (new,), before + tuple(operands)
    result = build(source, filters, device, operands)
    setattr(result, CHAIN, (source, filters, device, operands))
    return result


def chained(x, device) -> bool:
    """Whether the dask array ``x`` is a clkit.dask result that a step for ``device`` joins."""
    made = getattr(x, CHAIN, None)
    return made is not None and made[2] == device


def build(source, filters: tuple, device, operands: tuple = ()):
    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    ndim = source.ndim
    steps = [[] for _ in range(ndim)]
    kept = ndim
    takes = []  # (step, axes it has) of each operand, in order
    for k, f in enumerate(filters):
        takes += [(k, kept)] * f.operands
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
            plans.append(plan_axis(n, int(start), int(stop), steps[axis],
                                   rows=axis == ndim - 1 and kept == ndim))
        per_axis.append(plans)

    label = "-".join(f.name or f.function.__name__ for f in filters)
    name = f"clkit-{label}-{tokenize(source, operands, filters, device)}"
    inputs = (source,) + tuple(operands)
    # each input's window along each axis, for each block there, as copies from its chunks
    per_input = [[[pieces(p.source, c) for p in plans]
                  for plans, c in zip(per_axis, source.chunks)]]
    for x, (k, axes) in zip(operands, takes):
        per_input.append([[pieces(p.held[k], c) for p in plans]
                          for plans, c in zip(per_axis[:axes], x.chunks)])
    # (what a task needs of the plans: not the positions its operands' windows came from)
    per_axis = [[replace(p, held=()) for p in plans] for plans in per_axis]
    dsk = {}
    for index in itertools.product(*(range(len(c)) for c in out_chunks)):
        at = [index[axis] if axis < kept else 0 for axis in range(ndim)]
        plans = tuple(per_axis[axis][b] for axis, b in enumerate(at))
        windows = [tuple(axes[b] for axes, b in zip(w, at)) for w in per_input]
        keys = tuple(list(itertools.product(*(sorted({p[2] for p in pcs}) for pcs in w)))
                     for w in windows)
        block = Block(filters, device, plans, windows, keys)
        dsk[(name,) + index] = (run_block, block) + tuple(
            (x.name,) + k for x, ks in zip(inputs, keys) for k in ks)
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=list(inputs))
    return da.Array(graph, name, out_chunks, meta=meta)


def check_mode(function: str, mode, ndim: int, modes=tuple(MODES)) -> tuple:
    """A mode, or one per axis, as the planner's per-axis tuple of ``ndim`` names."""
    given = (mode,) * ndim if isinstance(mode, str) else tuple(mode)
    if len(given) != ndim or not all(isinstance(m, str) and m in modes for m in given):
        raise ValueError(f"{function}: mode must be one of {', '.join(modes)} (or one per "
                         f"axis, {ndim} in all), not {mode!r}")
    return given
