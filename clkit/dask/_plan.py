"""Which input pixels a block needs, one axis at a time, so that a chain of filters on it
gives exactly what the chain gives on the whole array.

A filter's output at position ``p`` of an axis of length ``n`` reads its input at
``p - lo`` to ``p + hi``; beyond the array's edges the border mode maps a position back
into it (or, in ``constant`` mode, gives ``cval``).  A block is filtered as a *window*:
along each axis a sequence of input positions, which the filter sees as one array.  Two
things make a window's result exact:

- next to a neighbour that the window holds, nothing to do: the window holds the very
  value (for ``wrap``, the window holds the positions from the other end of the array);
- at the array's true edge, in every mode but ``wrap``, the window *ends* there, and the
  filter's own border handling extends it exactly as it extends the whole array.  That is
  the only way that is exact for filters made of several passes (a Gaussian's row and column
  passes), whose second pass extends the first pass's output, not the input.

In a chain, the second filter's border mode extends the first filter's *output*.  The plan
works backwards from the block: the positions each filter must produce, then the window it
must read for them.  Running every filter on the first window is enough for most blocks
(inside the array, and at edges when no filter wraps); where it is not, the plan gathers
each filter's window from the previous filter's valid output (on the device).

Everything here is numpy on small integer arrays, computed when the graph is built.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._engine.stencil import NAMES, SCIPY_MODES, fold

#: scipy.ndimage's names for the modes, each as the planner knows it (the ``grid-`` spellings
#: are the same modes for filters): the engine's table of modes.
MODES = {mode: NAMES[border] for mode, border in SCIPY_MODES.items()}


@dataclass(frozen=True)
class Pass:
    """One filter along one axis: it reads ``lo`` positions before and ``hi`` after."""
    lo: int
    hi: int
    mode: str


def valid_after(positions: np.ndarray, valid: np.ndarray, step: Pass, n: int) -> np.ndarray:
    """Where a filter run on a window gives the whole-array result.

    ``positions[t]`` is the array position the window holds at index ``t``, ``valid[t]``
    whether its value there is right.  Output ``t`` is right when every input it reads is:
    one inside the window that holds the position the mode asks for, or one beyond the
    window's end that the filter's own border handling supplies correctly (the window's end
    is the array's, as far as that mode looks).
    """
    size = len(positions)
    t = np.arange(size)
    ok = np.ones(size, bool)
    for d in range(-step.lo, step.hi + 1):
        want = fold(positions + d, n, step.mode)
        u = t + d
        inside = (u >= 0) & (u < size)
        uc = np.clip(u, 0, size - 1)
        good = inside & (want >= 0) & valid[uc] & (positions[uc] == want)
        if step.mode == "constant":
            good |= ~inside & (want < 0)
        else:
            w = fold(u, size, step.mode)
            good |= ~inside & valid[w] & (positions[w] == want)
        ok &= good
    return ok


def _runs(positions: np.ndarray) -> list[tuple[int, int]]:
    """Sorted distinct positions as [start, stop) runs."""
    p = np.unique(positions)
    if not len(p):
        return []
    cuts = np.nonzero(np.diff(p) != 1)[0] + 1
    return [(int(r[0]), int(r[-1]) + 1) for r in np.split(p, cuts)]


def _merged(ranges):
    out = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def window(need: list[tuple[int, int]], step: Pass, n: int) -> np.ndarray:
    """The window (positions along the axis) a filter reads to produce the ``need`` runs."""
    if step.mode == "wrap":  # the neighbours across the ends, in order: positions mod n
        spans = _merged((a - step.lo, b + step.hi) for a, b in need)
        return np.concatenate([np.arange(a, b) % n for a, b in spans])
    spans = [(max(0, a - step.lo), min(n, b + step.hi)) for a, b in need]
    # A window that reaches past an edge ends there, holding what the mode reflects from
    # (reflect: 0 .. lo-1, mirror: 1 .. lo, nearest: 0), so the filter's own border is exact.
    if any(a - step.lo < 0 for a, _ in need):
        spans.append((0, min(n, step.lo + 1)))
    if any(b + step.hi > n for _, b in need):
        spans.append((max(0, n - step.hi - 1), n))
    return np.concatenate([np.arange(a, b) for a, b in _merged(spans)])


@dataclass(frozen=True)
class AxisPlan:
    """One block's plan along one axis.

    ``source``: the array positions of the first window; ``gathers[k]``: for filter k, None
    (it runs on what the previous filter produced) or the indices, into that output, of its
    own window; ``crop``: the slice of the last output that is the block; ``held[k]``: the
    array positions that filter k's input holds (what an elementwise operand must match).
    """
    source: np.ndarray
    gathers: tuple
    crop: slice
    held: tuple = ()


def plan_axis(n: int, start: int, stop: int, steps: list[Pass], *,
              rows: bool = False) -> AxisPlan:
    """The plan for the block ``[start, stop)`` of an axis of length ``n``.

    ``rows``: the axis is the last, whose windows are the rows the kernels run along; a long
    window is then widened with more of the array's own positions (computed, then cropped
    off) to a length the kernels run fastest on (:func:`row_length`).
    """
    plan = _planned(n, start, stop, steps, start, stop)
    width = len(plan.source)
    more = row_length(width) - width if rows else 0
    if more:
        # the block's neighbours on one side join the window: after the block, or before it
        for lo, hi in ((start, stop + more), (start - more, stop)):
            if 0 <= lo and hi <= n:
                wider = _planned(n, start, stop, steps, lo, hi)
                if len(wider.source) == width + more:
                    return wider
    return plan


def row_length(width: int) -> int:
    """The row length, at least ``width``, that CPU drivers' vector kernels run fastest on:
    whole runs of 32 elements (each work-item's vector loads then stay whole and aligned to
    128 bytes) that are no multiple of 1024 (rows 4 KiB apart share cache sets).  PoCL's
    filters spend clearly more CPU time per element on rows of 1046 or of 1024 float32
    elements than on rows of 1056 (``benchmarks/dask_filters.py`` shows it on the whole
    pass).  Windows under 256 elements are left as they are."""
    if width < 256:
        return width
    length = -(-width // 32) * 32
    return length + 32 if length % 1024 == 0 else length


def _planned(n, start, stop, steps, lo, hi):
    """The plan for the block ``[start, stop)`` computed as part of the positions
    ``[lo, hi)`` (which hold it)."""
    windows = []
    need = [(lo, hi)]
    for step in reversed(steps):
        win = window(need, step, n)
        windows.append(win)
        need = _runs(win)
    windows.reverse()
    if not steps:
        windows = [np.arange(lo, hi)]
    # First try: every filter on the first window (no gathers).
    plan = _simulate(n, start, stop, steps, windows, gather=False)
    return plan if plan is not None else _simulate(n, start, stop, steps, windows, gather=True)


def _simulate(n, start, stop, steps, windows, gather):
    positions = windows[0]
    valid = np.ones(len(positions), bool)
    gathers, held = [], []
    for k, step in enumerate(steps):
        index = None
        if gather and k:
            index = _lookup(positions, valid, windows[k], n)
            if index is None:
                raise AssertionError("clkit.dask: a window's positions were not computed")
            if len(index) == len(positions) and np.array_equal(index, np.arange(len(index))):
                index = None
            else:
                positions, valid = windows[k], np.ones(len(windows[k]), bool)
        gathers.append(index)
        held.append(positions)
        valid = valid_after(positions, valid, step, n)
    crop = _find(positions, valid, start, stop)
    if crop is None:
        if gather:
            raise AssertionError("clkit.dask: the block is not computed by its plan")
        return None
    return AxisPlan(windows[0], tuple(gathers), crop, tuple(held))


def _lookup(positions, valid, wanted, n):
    table = np.full(n, -1, np.int64)
    where = np.nonzero(valid)[0]
    table[positions[where][::-1]] = where[::-1]  # the first valid copy of each position
    index = table[wanted]
    return None if np.any(index < 0) else index


def _find(positions, valid, start, stop):
    length = stop - start
    for t in np.nonzero((positions == start) & valid)[0]:
        t = int(t)
        if t + length <= len(positions) and valid[t:t + length].all() and \
                np.array_equal(positions[t:t + length], np.arange(start, stop)):
            return slice(t, t + length)
    return None


def pieces(source: np.ndarray, chunks: tuple) -> list[tuple[int, int, int, int]]:
    """The first window along an axis as copies from the input's chunks:
    (window start, window stop, chunk index, start in the chunk), each a run of
    consecutive positions inside one chunk."""
    bounds = np.cumsum((0,) + tuple(chunks))
    which = np.searchsorted(bounds, source, side="right") - 1
    out = []
    t = 0
    while t < len(source):
        c = int(which[t])
        u = t + 1
        while u < len(source) and which[u] == c and source[u] == source[u - 1] + 1:
            u += 1
        out.append((t, u, c, int(source[t] - bounds[c])))
        t = u
    return out
