"""Border modes: where an image row or column outside the image is read from.

The convolution kernels read image rows through a *row map*: for each padded
row a band reads, its row in the band's source rows, already folded by the
border mode (or -1 for a row of cval), so that one kernel serves every band
of every mode; columns are folded in the kernel itself (``clkit.h``).
"""

from __future__ import annotations

import functools

import numpy as np

#: The border modes, as scipy.ndimage names them, and their names in the kernels.
MODES = {"reflect": "BORDER_REFLECT", "mirror": "BORDER_MIRROR", "nearest": "BORDER_NEAREST",
         "wrap": "BORDER_WRAP", "constant": "BORDER_CONSTANT"}
#: The same with scipy.ndimage's ``grid-*`` spellings, which its filters take as aliases.
SCIPY_MODES = {**MODES, "grid-mirror": "BORDER_REFLECT", "grid-wrap": "BORDER_WRAP",
               "grid-constant": "BORDER_CONSTANT"}
#: A mode's name from its name in the kernels.
NAMES = {border: mode for mode, border in MODES.items()}
#: clkit.h's numbers of the modes, which the generic builds take as a kernel argument.
NUMBERS = {border: i for i, border in enumerate(MODES.values())}


def fold(i, n: int, mode: str) -> np.ndarray:
    """Image coordinates ``i`` mapped into ``[0, n)`` as scipy.ndimage extends; -1 is cval."""
    i = np.asarray(i, dtype=np.int64)
    if mode == "reflect":
        m = np.mod(i, 2 * n)
        return np.where(m < n, m, 2 * n - 1 - m)
    if mode == "mirror":
        if n == 1:
            return np.zeros_like(i)
        m = np.mod(i, 2 * n - 2)
        return np.where(m < n, m, 2 * n - 2 - m)
    if mode == "nearest":
        return np.clip(i, 0, n - 1)
    if mode == "wrap":
        return np.mod(i, n)
    return np.where((i >= 0) & (i < n), i, -1)


@functools.lru_cache(maxsize=64)
def band_rows(height: int, r0: int, r1: int, kh: int, anchor_y: int, mode: str):
    """The image rows that output rows ``[r0, r1)`` read, and the band's row map.

    ``rows`` is a contiguous range when that is exactly what is needed, else
    the distinct rows, sorted (wrap mode at the edges, masks taller than the
    image); ``rowmap[p]`` is the index in ``rows`` of padded row ``p``, or -1.
    Cached: callers must not modify the arrays.
    """
    folded = fold(np.arange(r0 - anchor_y, r1 + kh - 1 - anchor_y), height, mode)
    inside = folded >= 0
    used = np.zeros(height, bool)
    used[folded[inside]] = True
    needed = np.flatnonzero(used)
    if needed.size == 0:  # every tap reads cval; the kernel never reads the source
        rows, rowmap = np.zeros(1, np.int64), folded.astype(np.int32)
    elif needed[-1] - needed[0] + 1 == needed.size:
        rows = np.arange(needed[0], needed[-1] + 1)
        rowmap = np.where(inside, folded - needed[0], -1).astype(np.int32)
    else:
        rows = needed
        rowmap = np.where(inside, np.searchsorted(needed, folded), -1).astype(np.int32)
    rows.flags.writeable = rowmap.flags.writeable = False
    return rows, rowmap
