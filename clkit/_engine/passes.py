"""The N-D passes of clkit.ndimage: kernels over a whole C-contiguous array on one device.

- :func:`correlate_axis`, :func:`mean_axis`, :func:`min_or_max_axis`: a 1-D window along
  any axis of an N-D array (``convolution_axis.cl``, ``rank_filter_axis.cl``); separable
  filters are one of these per axis, each writing the result's dtype, as scipy's passes do
  (so that integer results truncate where scipy's do);
- :func:`correlate_nd`, :func:`rank_nd`: any N-D weights or footprint, one work-item per
  element reading the footprint's taps (``convolution_nd.cl``, ``rank_filter.cl``);
- :func:`add_into`, :func:`square`, :func:`add_square`, :func:`sqrt_into`: the elementwise
  steps that combine derivatives (``gradient_magnitude.cl``).

Each takes a :class:`Work` (the device, its queue, the array's shape and the element types)
and device arrays, and enqueues without waiting. Arrays of fewer than SPECIALISE_FROM
elements run generic builds (the window and border mode as kernel arguments: one build per
element type); larger ones builds specialised for the window.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pyopencl.array as cl_array

from .._launch.kernel import Prepared
from .._memory import pools as _memory
from .stencil import NUMBERS, weights_as
from .operation import CL_TYPES, program

_CL = dict(CL_TYPES)
_CL[np.dtype(np.bool_)] = "uchar"
_CL[np.dtype(np.float16)] = "half"

#: How the kernels convert a computed value to each output type (see ndimage.h).
_OUT_KIND = {np.dtype(t): k for t, k in (
    (np.float16, 0), (np.float32, 0), (np.float64, 0), (np.bool_, 1), (np.int8, 2),
    (np.uint8, 2), (np.int16, 2), (np.uint16, 2), (np.int32, 2), (np.uint32, 3),
    (np.int64, 4), (np.uint64, 5))}

#: The most taps of a footprint that the rank kernels gather per work-item.
MAX_RANK_TAPS = 4096
#: Arrays of fewer elements run the generic builds; larger ones a specialised build.
SPECIALISE_FROM = 1 << 16
#: The most values a generic rank build keeps (ranks beyond take a specialised build).
GENERIC_KEEP = 64
#: The largest footprint whose rank is selected by a sorting network; larger ones sort by
#: insertion per work-item.
MAX_NETWORK = 128
#: The same on Intel's OpenCL CPU runtime, whose compiler crashed (a segmentation fault in the
#: build) on networks of 64 four- and eight-byte elements; 27 built for every type.
MAX_NETWORK_INTEL = 27
#: The most bytes of a sorting network's values per work-item on CPUs (VW elements at once).
NETWORK_BYTES = 1024
#: Prepared launches kept per runtime.
MAX_LAUNCHES = 512


class Work:
    """What the passes of one call share: ``name`` (for messages), ``rt`` and ``queue``,
    ``device``, ``shape``, ``in_dtype`` (the input's) and ``dtype`` (the result's)."""

    name = ""
    shape: tuple = ()

    def acc(self, *dtypes) -> np.dtype:
        """The type a pass computes in: double (scipy's) where the device has fp64, except
        for float32 and float16 data, which is filtered in float."""
        if all(np.dtype(d).kind == "f" and np.dtype(d).itemsize <= 4 for d in dtypes) or \
                not self.device.fp64:
            return np.dtype(np.float32)
        return np.dtype(np.float64)

    def types(self, src_dtype, dst_dtype, acc=None) -> dict:
        """The build defines of a pass from ``src_dtype`` to ``dst_dtype`` (see ndimage.h)."""
        acc = self.acc(src_dtype, dst_dtype) if acc is None else acc
        src, dst = np.dtype(src_dtype), np.dtype(dst_dtype)
        defines = dict(SRC_T=_CL[src], DST_T=_CL[dst], ACC_T=_CL[acc],
                       SRC_HALF=int(src == np.float16), DST_HALF=int(dst == np.float16),
                       OUT_KIND=_OUT_KIND[dst])
        if acc == np.float64:
            defines["ACC_DOUBLE"] = 1
        return defines


def raw(a):
    """A bool device array as the uint8 bytes the kernels read and write."""
    return a.view(np.uint8) if a.dtype == np.bool_ else a


def _dtype_of(a) -> np.dtype:
    return np.dtype(a.dtype)


def _logical_dtype(job: Work, a) -> np.dtype:
    """The dtype of a pass's array, bool for the bytes of a bool array: the input's dtype for
    the job's uploaded input, else the result's (every other array of a job has it)."""
    dtype = _dtype_of(a)
    if dtype == np.uint8:
        of = job.in_dtype if a is getattr(job, "_source", None) else job.dtype
        return np.dtype(of) if of == np.bool_ else dtype
    return dtype


def _launch(job: Work, file: str, kernel: str, defines: dict, args: tuple, gsize: tuple,
            *buffers) -> None:
    """Enqueue ``kernel`` of ``kernels_cl/<file>.cl`` on ``buffers`` (its first parameters);
    ``args`` are the launch's other arguments (constant device arrays and numbers), kept with
    the launch."""
    if 0 in gsize:
        return
    key = (file, kernel, len(buffers), tuple(sorted(defines.items())),
           tuple(id(a) if isinstance(a, cl_array.Array) else a for a in args), gsize)
    job.rt.memo(_launch, MAX_LAUNCHES).make(
        key, lambda: _prepare(job, file, kernel, defines, args, gsize, len(buffers)))(
        job.queue, *buffers)


def _prepare(job: Work, file: str, kernel: str, defines: dict, args: tuple, gsize: tuple,
             buffers: int) -> Prepared:
    # (the mean's division correctly rounded, as scipy's is)
    prg = program(file, options=("-cl-fp32-correctly-rounded-divide-sqrt",), **defines)
    return Prepared(prg, kernel, job.rt, (None,) * buffers + tuple(args), gsize, None)


def _planned(job: Work, key: tuple, plan, *buffers) -> None:
    """Enqueue the launch that ``plan()`` gives as (file, kernel, defines, args, global
    size), made once per runtime for ``key`` (all that the plan depends on)."""
    def make():
        file, kernel, defines, args, gsize = plan()
        if 0 in gsize:
            return lambda *_: None
        return _prepare(job, file, kernel, defines, args, gsize, len(buffers))
    job.rt.memo(_planned, MAX_LAUNCHES).make(key, make)(job.queue, *buffers)


def _constant(job: Work, host: np.ndarray):
    return _memory.constant(job.rt, np.ascontiguousarray(host))


#: Elements per work-item of the 1-D kernels on CPUs (one vector); GPUs take one.
CPU_VECTOR = 8
#: Lines per work-item of a specialised correlation along an axis other than the last, on
#: CPUs (convolution_axis.cl's RPI): their windows' span is converted once.
CPU_LINES = 8
#: The most taps of a specialised correlation along the last axis whose loops are unrolled
#: over permutes of aligned blocks on CPUs (convolution_axis.cl's BLOCKS; not for means,
#: whose sums are slower unrolled).
MAX_BLOCK_TAPS = 32
#: Vectors per work-item of those correlations (convolution_axis.cl's RUNS): neighbouring
#: vectors share their blocks (more take more registers than AVX-512 has).
CPU_RUNS = 2


def _axis_geometry(job: Work, axis: int, defines: dict, taps: int = 0,
                   vw: int = CPU_VECTOR, blocks: bool = True):
    """(len, inner, global size) of a pass along ``axis``; sets LAST and VW (see ndimage.h),
    ``vw`` on CPUs, and for a correlation of ``taps`` taps (0: other passes) in a
    specialised build on a CPU RPI or (with ``blocks``) BLOCKS (see convolution_axis.cl)."""
    shape = job.shape
    length = shape[axis]
    inner = math.prod(shape[axis + 1:])
    outer = math.prod(shape[:axis])
    cpu = job.device.type == "cpu"
    vw = vw if cpu else 1
    defines.update(LAST=int(inner == 1), VW=vw)
    lines = cpu and taps and _specialised(job)
    if inner == 1:
        if lines and blocks and taps <= MAX_BLOCK_TAPS and vw in (4, 8, 16):
            defines.update(BLOCKS=1, RUNS=CPU_RUNS)
            return length, 1, (-(-length // (vw * CPU_RUNS)), outer)
        return length, 1, (-(-length // vw), outer)
    rpi = CPU_LINES if lines else 1
    if rpi > 1:
        defines["RPI"] = rpi
    return length, inner, (-(-inner // vw), -(-length // rpi), outer)


def symmetry(weights: np.ndarray) -> int:
    """1 for symmetric weights, -1 antisymmetric, 0 neither (odd sizes only), as scipy tests
    them (to DBL_EPSILON); each has its own order of summation."""
    n = weights.size
    if n % 2 == 0 or n == 1:
        return 0 if n % 2 == 0 else 1
    left, right = weights[:n // 2], weights[n // 2 + 1:][::-1]
    eps = np.finfo(np.float64).eps
    if np.all(np.abs(left - right) <= eps):
        return 1
    if np.all(np.abs(left + right) <= eps):
        return -1
    return 0


def _specialised(job: Work) -> bool:
    return math.prod(job.shape) >= SPECIALISE_FROM


def _window(job: Work, defines: dict, **window) -> tuple:
    """The window's parameters as the build's defines (specialised) or as the launch's
    arguments (generic, GENERIC=1), in the kernels' order; returns the arguments."""
    if _specialised(job):
        defines.update({k.upper(): v for k, v in window.items()})
        defines["BORDER"] = window.pop("border")
        return tuple(0 for _ in window) + (0,)
    defines["GENERIC"] = 1
    border = NUMBERS[window.pop("border")]
    return tuple(window.values()) + (border,)


def _in_int_range(defines: dict, src_dtype: np.dtype, weight: float, cval: float,
                  border: str) -> None:
    """Sets IN_RANGE for a specialised pass over integers of ``src_dtype`` (or cval in
    constant mode) none of whose sums, with weights of ``weight`` in magnitude altogether,
    reaches 2**30: its conversion to an integer result needs no test of int's range
    (convolution_axis.cl)."""
    if "GENERIC" in defines or src_dtype.kind not in "biu" or not math.isfinite(cval):
        return
    info = np.iinfo(np.uint8 if src_dtype.kind == "b" else src_dtype)
    largest = max(abs(int(info.min)), int(info.max))
    if border == "BORDER_CONSTANT":
        largest = max(largest, abs(cval))
    if largest * weight < 2.0 ** 30:
        defines["IN_RANGE"] = 1


def correlate_axis(job: Work, src, dst, axis: int, weights: np.ndarray, origin: int,
                   border: str, cval: float) -> None:
    """``dst`` = scipy.ndimage.correlate1d(src, weights, axis, origin) (weights float64)."""
    key = _axis_key(job, src, dst, axis, (weights.dtype.str, weights.tobytes()), origin,
                    border, cval)
    _planned(job, key, lambda: _axis_plan(job, src, dst, axis, weights, origin, border, cval),
             src, dst)


def mean_axis(job: Work, src, dst, axis: int, size: int, origin: int, border: str,
              cval: float) -> None:
    """``dst`` = the mean of each window of ``size`` along ``axis`` (uniform_filter1d)."""
    key = _axis_key(job, src, dst, axis, size, origin, border, cval)
    _planned(job, key, lambda: _axis_plan(job, src, dst, axis, None, origin, border, cval,
                                          size), src, dst)


def _axis_key(job: Work, src, dst, axis: int, window, origin: int, border: str,
              cval: float) -> tuple:
    """What a pass along an axis depends on (cval by its bytes: a NaN equals itself so)."""
    return ("axis", job.shape, _dtype_of(src), _dtype_of(dst), axis, window, origin, border,
            np.float64(cval).tobytes())


def _axis_plan(job: Work, src, dst, axis: int, weights, origin: int, border: str,
               cval: float, size: int = 0) -> tuple:
    """The launch of correlate_axis: of ``weights`` (float64), or without (None) the mean of
    windows of ``size``."""
    acc = job.acc(_dtype_of(src), _dtype_of(dst))
    defines = job.types(_dtype_of(src), _dtype_of(dst), acc)
    mean = weights is None
    taps = size if mean else weights.size
    length, inner, gsize = _axis_geometry(job, axis, defines, taps, blocks=not mean)
    if mean:
        defines["MEAN"] = 1
    window = _window(job, defines, taps=taps, shift=taps // 2 + origin,
                     symmetric=0 if mean else symmetry(weights), border=border)
    _in_int_range(defines, _dtype_of(src), 1.0 if mean else np.abs(weights).sum(), cval,
                  border)
    w = _constant(job, np.zeros(1, acc) if mean else weights_as(weights, acc))  # (means: unread)
    return ("convolution_axis", "correlate_axis", defines,
            (w, length, inner, float(acc.type(cval))) + window, gsize)


#: Window sizes from which a minimum or maximum along an axis takes van Herk and
#: Gil-Werman's method (min_or_max_axis_blocks), whose cost does not grow with the window:
#: along the last axis, where it runs element by element, and along the others, where it
#: runs on vectors of neighbouring lines (by the compared type's size in bytes: the direct
#: comparisons of 16 one-byte lanes at once stay cheaper up to longer windows).
BLOCKS_FROM_LAST = 40
BLOCKS_FROM = {1: 16, 2: 8}
BLOCKS_FROM_WIDE = 5


def min_or_max_axis(job: Work, src, dst, axis: int, size: int, origin: int, border: str,
                    cval: float, maximum: bool) -> None:
    """``dst`` = minimum_filter1d or maximum_filter1d of ``src`` along ``axis``: compared in
    the input's type where that gives scipy's result (see rank_filter_axis.cl), else in
    double (or float on devices without fp64)."""
    acc = np.dtype(np.float64) if job.device.fp64 else np.dtype(np.float32)
    src_dtype, dst_dtype = _logical_dtype(job, src), _logical_dtype(job, dst)
    defines = job.types(src_dtype, dst_dtype, acc)
    cmp = np.dtype(np.float32) if src_dtype == np.float16 else src_dtype
    exact = border != "BORDER_CONSTANT" or c_cast(cval, cmp) == cval
    if not exact:
        cmp = acc
    defines.update(MAXIMUM=int(maximum), CMP_ACC=int(not exact),
                   SAME=int(exact and src_dtype == dst_dtype and src_dtype != np.float16
                            and src_dtype not in (np.int64, np.uint64)))
    vw = min(16, 64 // cmp.itemsize)
    length, inner, gsize = _axis_geometry(job, axis, defines, vw=vw)
    blocks = size >= (BLOCKS_FROM_LAST if inner == 1 else
                      BLOCKS_FROM.get(cmp.itemsize, BLOCKS_FROM_WIDE))
    window = _window(job, defines, taps=size, shift=size // 2 + origin, border=border)
    args = (length, inner, float(acc.type(cval))) + window
    if not blocks:
        _launch(job, "rank_filter_axis", "min_or_max_axis", defines, args, gsize, src, dst)
        return
    # one work-item per block of `size` outputs along the axis
    if inner == 1:
        gsize = (-(-length // size), gsize[1])
    else:
        gsize = (gsize[0], -(-length // size), gsize[2])
    scratch = dst if defines["SAME"] else job.empty(cmp)
    _launch(job, "rank_filter_axis", "min_or_max_axis_blocks", defines, args, gsize, src, dst,
            scratch)


def _taps(shape: tuple, footprint: np.ndarray, origins) -> tuple:
    """The used taps of an N-D footprint: (offsets (taps x ndim, int32), flat offsets in a
    C-contiguous array of ``shape`` (int64), the margins (lo, hi) per axis inside which every
    tap reads the array itself)."""
    idx = np.argwhere(footprint)  # C order, as scipy visits them
    centre = np.array([s // 2 + o for s, o in zip(footprint.shape, origins)])
    offs = (idx - centre).astype(np.int32)
    strides = np.array([math.prod(shape[d + 1:]) for d in range(len(shape))], np.int64)
    flat = (offs.astype(np.int64) * strides).sum(axis=1)
    lo = np.maximum(0, -offs.min(axis=0)).astype(np.int32)
    hi = np.maximum(0, offs.max(axis=0)).astype(np.int32)
    return offs, flat, lo, hi


def _nd_size(job: Work) -> tuple:
    """The global size of the N-D kernels: (the last axis, the product of the others)."""
    rows = math.prod(job.shape[:-1])
    if rows >= 2 ** 31 or job.shape[-1] >= 2 ** 31:
        raise NotImplementedError(f"{job.name}: arrays of 2**31 rows or columns and more")
    return job.shape[-1], rows


def correlate_nd(job: Work, src, dst, weights: np.ndarray, origins, border: str,
                 cval: float) -> None:
    """``dst`` = scipy.ndimage.correlate(src, weights, origin=origins): taps of weight above
    DBL_EPSILON in magnitude, summed in C order from 0, as scipy sums them."""
    used = np.abs(weights) > np.finfo(np.float64).eps
    acc = job.acc(_dtype_of(src), _dtype_of(dst))
    defines = job.types(_dtype_of(src), _dtype_of(dst), acc)
    if not used.any():  # scipy's sum of no taps
        used = np.zeros(weights.shape, bool)
        used.flat[0] = True
        weights = np.zeros(weights.shape)
    offs, flat, lo, hi = _taps(job.shape, used, origins)
    defines["NDIM"] = len(job.shape)
    window = _window(job, defines, ntaps=len(flat), border=border)
    shape = np.array(job.shape, np.int32)
    args = (_constant(job, weights_as(weights[used], acc)), _constant(job, offs),
            _constant(job, flat), _constant(job, shape), _constant(job, lo), _constant(job, hi),
            float(acc.type(cval))) + window
    _launch(job, "convolution_nd", "correlate_nd", defines, args, _nd_size(job), src, dst)


def rank_nd(job: Work, src, dst, footprint: np.ndarray, origins, border: str, cval: float,
            rank: int) -> None:
    """``dst`` = the ``rank``-th smallest of each footprint's values (0 the minimum), cval
    as the input's type gives it (scipy's conversion)."""
    raw = raw_value(cval, job.in_dtype)
    key = ("rank", job.shape, job.in_dtype, _dtype_of(src), _dtype_of(dst), footprint.shape,
           footprint.tobytes(), tuple(origins), border, raw if raw == raw else "nan", rank,
           _specialised(job), COLUMN_ELEMENTS, COLUMNS_ON_CPUS)
    _planned(job, key, lambda: _rank_plan(job, src, dst, footprint, origins, border, cval,
                                          rank), src, dst)


def _rank_plan(job: Work, src, dst, footprint: np.ndarray, origins, border: str, cval: float,
               rank: int) -> tuple:
    offs, flat, lo, hi = _taps(job.shape, footprint, origins)
    n = len(flat)
    histogram_from = HISTOGRAM_FROM if job.device.type == "cpu" else HISTOGRAM_FROM_ELSEWHERE
    if n >= histogram_from and job.in_dtype in HISTOGRAM_DTYPES and 0 < rank < n - 1:
        return _histogram_plan(job, dst, footprint, origins, border, cval, rank)
    if n > MAX_RANK_TAPS:
        raise NotImplementedError(f"{job.name}: a footprint of {n} elements; clkit.ndimage's "
                                  f"rank filters take up to {MAX_RANK_TAPS}")
    src_dtype = _dtype_of(src) if job.in_dtype != np.bool_ else np.dtype(np.bool_)
    acc = np.dtype(np.float64) if job.device.fp64 else np.dtype(np.float32)
    defines = job.types(src_dtype, _dtype_of(dst), acc)
    defines["NDIM"] = len(job.shape)
    if rank == 0:
        defines["MINIMUM"] = 1
    elif rank == n - 1:
        defines["MAXIMUM"] = 1
    if _specialised(job) or rank >= GENERIC_KEEP:
        defines.update(NTAPS=n, RANK=rank, BORDER=border)
        largest = MAX_NETWORK_INTEL if job.device.short_platform == "intel" else MAX_NETWORK
        if "MINIMUM" not in defines and "MAXIMUM" not in defines and n <= largest:
            defines["NETWORK"] = network(n, rank)
        window = (0, 0, 0)
    else:
        defines.update(GENERIC=1, GENERIC_KEEP=GENERIC_KEEP)
        window = (n, rank, NUMBERS[border])
    shape = np.array(job.shape, np.int32)
    args = (_constant(job, offs), _constant(job, flat), _constant(job, shape),
            _constant(job, lo), _constant(job, hi), raw_value(cval, job.in_dtype)) + window
    size = 4 if job.in_dtype == np.float16 else src_dtype.itemsize
    # VW neighbours along the last axis per work-item, as vectors of 64 bytes at most, the
    # footprint's vectors in NETWORK_BYTES at most (PoCL's compiled kernels crashed on 4 KiB)
    vw = 1 << max(0, min(16, 64 // size, NETWORK_BYTES // (n * size)).bit_length() - 1)
    width, rows = _nd_size(job)
    cpu = job.device.type == "cpu"
    columns = _columns(footprint, rank) if "NETWORK" in defines else None
    if columns and (not cpu or COLUMNS_ON_CPUS):
        defines.update(columns, VW=COLUMN_ELEMENTS)
        return ("rank_filter", "rank_nd_columns", defines, args,
                (-(-width // COLUMN_ELEMENTS), rows))
    if "NETWORK" in defines and cpu and vw >= 4:
        defines.update(VW=vw, SAME=int(src_dtype == _dtype_of(dst) and src_dtype not in (
            np.float16, np.int64, np.uint64)))
        return "rank_filter", "rank_nd_vector", defines, args, (-(-width // vw), rows)
    return "rank_filter", "rank_nd", defines, args, (width, rows)


#: Elements along the last axis per work-item of a box footprint's rank_nd_columns (2 or
#: more), which read and sort each of the footprint's columns once for all of them.
COLUMN_ELEMENTS = 4
#: CPUs take rank_nd_vector instead (tests turn this on to run rank_nd_columns there too).
COLUMNS_ON_CPUS = False


def _columns(footprint: np.ndarray, rank: int) -> dict | None:
    """rank_nd_columns' defines for a box ``footprint`` of at least 2 columns (its elements
    of one position along the last axis) of at least 2 elements, or None."""
    return _box_columns(footprint.size, footprint.shape[-1], rank) if footprint.all() else None


@functools.lru_cache(maxsize=64)
def _box_columns(n: int, kw: int, rank: int) -> dict | None:
    column = n // kw
    select = column_network(column, kw, rank) if kw > 1 and column > 1 else None
    if select is None:
        return None
    sort = "".join(f"CS({a},{b})" for a, b in _merge_sort(_power_of_two(column), column))
    return dict(KW=kw, COLUMN=column, COLUMN_SORT=sort, COLUMN_SELECT=select[0],
                SELECTED=select[1])


#: Footprints of at least this many elements select the rank of 8-bit data (uint8, int8,
#: bool) from a histogram of the window (rank_filter_histogram.cl), whose cost per element
#: grows with the footprint's edge, where the sorting network's grows with its area.
#: On CPUs from 8x8 (the vector networks stay faster up to 7x7); elsewhere (not measured
#: yet) where the sorting networks end.
HISTOGRAM_FROM = 64
HISTOGRAM_FROM_ELSEWHERE = MAX_NETWORK + 1
#: A histogram work-item's elements along the last axis, per step's worth of taps in the
#: footprint: counting the first window and clearing the counts cost a sixteenth of the steps.
SEG_FACTOR = 16
HISTOGRAM_DTYPES = (np.dtype(np.uint8), np.dtype(np.int8), np.dtype(np.bool_))


def _histogram_plan(job: Work, dst, footprint: np.ndarray, origins, border: str,
                    cval: float, rank: int) -> tuple:
    """The launch of the ``rank``-th smallest of each footprint's values, for 8-bit data,
    from a histogram of the window moved along the last axis (the footprint's taps, then
    those entering and those leaving it at each step)."""
    ndim = len(job.shape)
    centre = np.array([s // 2 + o for s, o in zip(footprint.shape, origins)])
    offs = np.argwhere(footprint) - centre
    step = np.zeros(ndim, np.int64)
    step[-1] = 1
    inside = {tuple(o) for o in offs}
    enter = [o for o in offs if tuple(o + step) not in inside]
    leave = [o - step for o in offs if tuple(o - step) not in inside]
    every = np.concatenate([offs, np.array(enter), np.array(leave)]).astype(np.int32)
    strides = np.array([math.prod(job.shape[d + 1:]) for d in range(ndim)], np.int64)
    flat = (every.astype(np.int64) * strides).sum(axis=1)
    lo = np.maximum(0, -every.min(axis=0)).astype(np.int32)
    hi = np.maximum(0, every.max(axis=0)).astype(np.int32)
    defines = job.types(job.in_dtype, _dtype_of(dst),
                        np.dtype(np.float64) if job.device.fp64 else np.dtype(np.float32))
    defines.update(NDIM=ndim, GENERIC=1, SRC_SIGNED=int(job.in_dtype == np.int8))
    seg = max(16, SEG_FACTOR * -(-len(offs) // len(enter)))
    width, rows = _nd_size(job)
    args = (_constant(job, every), _constant(job, flat),
            _constant(job, np.array(job.shape, np.int32)), _constant(job, lo),
            _constant(job, hi), c_int(cval, job.in_dtype), len(offs), len(enter), rank,
            seg, NUMBERS[border])
    return ("rank_filter_histogram", "rank_histogram", defines, args,
            (-(-width // seg), rows))


def _merge_sort(size: int, n: int) -> list:
    """The compare-exchanges (a, b) of Batcher's odd-even merge sort of ``size`` values (a
    power of two), without those that meet positions from ``n`` up."""
    pairs = []
    p = 1
    while p < size:
        k = p
        while k >= 1:
            for j in range(k % p, size - k, 2 * k):
                for i in range(min(k, size - j - k)):
                    a, b = i + j, i + j + k
                    if a // (2 * p) == b // (2 * p) and b < n:
                        pairs.append((a, b))
            k //= 2
        p *= 2
    return pairs


def _power_of_two(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _needed(pairs: list, target: int) -> str:
    """The compare-exchanges of ``pairs`` that the value ending in ``target`` depends on."""
    needed, kept = {target}, []
    for a, b in reversed(pairs):
        if a in needed or b in needed:
            needed.update((a, b))
            kept.append((a, b))
    return "".join(f"CE({a},{b})" for a, b in reversed(kept))


@functools.lru_cache(maxsize=256)
def network(n: int, rank: int) -> str:
    """The compare-exchanges that put the ``rank``-th smallest of ``n`` values at ``rank``:
    Batcher's odd-even merge sort of the next power of two, without the exchanges that meet
    the padding (+infinity stays on top) or that ``rank`` does not depend on."""
    return _needed(_merge_sort(_power_of_two(n), n), rank)


#: The most 0-1 inputs (sorted columns) that :func:`column_network` tries its exchanges on.
MAX_COLUMN_CASES = 1 << 16


@functools.lru_cache(maxsize=64)
def column_network(column: int, columns: int, rank: int):
    """(The compare-exchanges that select the ``rank``-th smallest of ``columns`` sorted
    columns of ``column`` values, value ``k * column + j`` the j-th smallest of column k; the
    value that ends as that rank), or None where the columns are too many to check.

    The network sorts each row (the j-th smallest of every column), drops the values that
    enough others are known to lie below (or above), and selects among the rest with
    :func:`network`'s merge sort, keeping only the exchanges that some input with sorted
    columns needs and that the rank depends on. By the 0-1 principle it is enough to follow
    every input of zeros and ones whose columns are sorted: column k of input i holds z
    zeros, z the digit k of i in base ``column + 1``; bit i of ``value[v]`` is value v's for
    input i."""
    cases = (column + 1) ** columns
    if cases > MAX_COLUMN_CASES:
        return None
    every = (1 << cases) - 1
    zeros = np.arange(cases)[:, None] // (column + 1) ** np.arange(columns) % (column + 1)

    def bits(flags) -> int:
        return int.from_bytes(np.packbits(flags, bitorder="little").tobytes(), "little")

    value = [bits(j >= zeros[:, k]) for k in range(columns) for j in range(column)]
    pairs = []

    def exchange(a, b):
        if value[a] & (every ^ value[b]):  # some input has a 1 above a 0
            value[a], value[b] = value[a] & value[b], value[a] | value[b]
            pairs.append((a, b))

    for j in range(column):
        for a, b in _merge_sort(_power_of_two(columns), columns):
            exchange(a * column + j, b * column + j)
    n = column * columns

    def below(v):  # how many other values are never above v
        return sum(not value[u] & (every ^ value[v]) for u in range(n) if u != v)

    def above(v):
        return sum(not value[v] & (every ^ value[u]) for u in range(n) if u != v)

    high = {v for v in range(n) if below(v) > rank}
    low = {v for v in range(n) if v not in high and above(v) >= n - rank}
    left = [v for v in range(n) if v not in high and v not in low]
    for a, b in _merge_sort(_power_of_two(len(left)), len(left)):
        exchange(left[a], left[b])
    selected = left[rank - len(low)]
    assert value[selected] == bits(zeros.sum(axis=1) <= rank), "the network misses the rank"
    return _needed(pairs, selected), selected


def _elementwise_defines(dtype: np.dtype) -> dict:
    dtype = np.dtype(dtype)
    sqrt = "double" if dtype.itemsize >= 4 and dtype.kind in "iuf" and dtype != np.float32 \
        else "float"
    return dict(T=_CL[dtype], HALF=int(dtype == np.float16), BOOL=int(dtype == np.bool_),
                SQRT_T=sqrt)


def add_into(job: Work, acc, x) -> None:
    """``acc += x`` elementwise, in their dtype as numpy adds."""
    n = math.prod(job.shape)
    _launch(job, "gradient_magnitude", "add_into", _elementwise_defines(job.dtype), (n,), (n,),
            acc, x)


def square(job: Work, acc) -> None:
    """``acc *= acc`` elementwise."""
    n = math.prod(job.shape)
    _launch(job, "gradient_magnitude", "square", _elementwise_defines(job.dtype), (n,), (n,),
            acc)


def add_square(job: Work, acc, x, root: bool, first: bool = False) -> None:
    """``acc += x * x`` elementwise, after ``acc *= acc`` where ``first`` (:func:`square`)
    and before ``acc = sqrt(acc)`` where ``root`` (:func:`sqrt_into`): numpy's multiplies,
    add and square root in one pass, each rounded as numpy rounds it in the dtype."""
    n = math.prod(job.shape)
    _launch(job, "gradient_magnitude", "add_square", _elementwise_defines(job.dtype),
            (n, int(first), int(root)), (n,), acc, x)


def sqrt_into(job: Work, acc) -> None:
    """``acc = sqrt(acc)`` elementwise, cast back to its dtype as numpy's unsafe cast does."""
    n = math.prod(job.shape)
    _launch(job, "gradient_magnitude", "sqrt_into", _elementwise_defines(job.dtype), (n,),
            (n,), acc)


def _truncated(value: float, bits: int) -> int:
    """x86-64's truncating conversion to a signed integer of ``bits``: out of range or NaN
    gives the smallest value."""
    limit = 2 ** (bits - 1)
    if not -limit <= value < limit:  # (NaN too)
        return -limit
    return int(value)


def raw_value(value: float, dtype) -> int | float:
    """``value`` as a kernel's RAW_T argument for data of ``dtype``: scipy's C cast to it
    (float32 for float16 data, the byte for bool), exact for every 64-bit integer. A Python
    number, as the launches' short path takes them."""
    dtype = np.dtype(dtype)
    return float(dtype.type(value)) if dtype.kind == "f" else c_int(value, dtype)


def c_cast(value: float, dtype) -> float:
    """``value`` converted to ``dtype`` as scipy's C cast from double does on x86-64 (the
    kernels' clk_store does the same), as a float (see :func:`c_int` for integer types)."""
    return float(raw_value(value, dtype))


def c_int(value: float, dtype) -> int:
    """``value`` converted to the integer (or bool) ``dtype`` as scipy's C cast from double
    does on x86-64: truncated towards zero and wrapped to the type's width, out-of-range
    values as the processor's conversions give them."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":  # a byte: the low one of the int conversion, nonzero or not
        return int(_truncated(value, 32) & 0xFF != 0)
    bits = dtype.itemsize * 8
    if dtype == np.uint64:
        t = _truncated(value - 2.0 ** 63, 64) ^ (1 << 63) if value >= 2.0 ** 63 else \
            _truncated(value, 64)
    else:
        t = _truncated(value, 64 if dtype.itemsize == 8 or dtype == np.uint32 else 32)
    t &= (1 << bits) - 1
    if dtype.kind == "i" and t >= 1 << (bits - 1):
        t -= 1 << bits
    return t
