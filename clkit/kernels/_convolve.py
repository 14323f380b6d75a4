"""2-D convolution and Gaussian blur (``kernels_cl/convolution.cl``).

The kernels compute a band of output rows from a source buffer that holds
the image rows the band needs, read through ``rowmap`` (for each padded row,
its row in the source, already folded by the border mode, or -1 for a row of
cval).  The whole image is one band; several devices, images larger than a
device and MPI ranks use smaller ones, with the same kernels.
"""

from __future__ import annotations

import functools

import numpy as np
import pyopencl.array as cl_array

from .. import _tiers
from .._errors import ArgumentTypeError, ArgumentValueError
from .._runtime import runtime
from . import _bands
from ._common import (CL_TYPES, aligned_empty, check_dtype, check_ndim, check_number, check_out,
                      contiguous_device, device_of, device_output, devices_of, download, host_copy,
                      host_array, is_device_array, is_multi, numpy_result, probe_rows, program,
                      require_fp64, scratch, upload)
from ._convolve_tiers import Generic, Specialised

MODES = {"reflect": "BORDER_REFLECT", "mirror": "BORDER_MIRROR", "nearest": "BORDER_NEAREST",
         "wrap": "BORDER_WRAP", "constant": "BORDER_CONSTANT"}
#: The most weights of a 2-D mask that gaussian_blur builds (128 MiB of float64 on the host).
MAX_MASK_SIZE = 1 << 24
#: The most taps of a mask whose used taps are listed in a build define (two characters a tap)
#: when it has taps of weight 0.  The list pays only where the tap loops are unrolled, for
#: masks of up to 256 taps in both variants (this leaves room for retuning); a larger mask
#: runs rolled loops, where testing its weights at run time costs the same.  A float64 mask of
#: this size and its list fit the 64 KiB of constant memory that every device has, so a list
#: never goes with a mask that MASK_SPACE puts in __global.
MAX_TAP_TABLE = 1024
IMAGE_DTYPES = (np.bool_, np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.uint64,
                np.int64, np.float32, np.float64)
#: Integer images whose values float32 may not hold exactly (beyond 2**24): summed in double
#: where the device has fp64, into a float32 result.
WIDE_INTEGERS = (np.uint32, np.int32, np.uint64, np.int64)


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
    """The image rows that output rows ``[r0, r1)`` read, and the band's rowmap.

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


def gaussian_weights(sigma: float, truncate: float) -> np.ndarray:
    """scipy.ndimage's 1-D Gaussian: radius ``int(truncate * sigma + 0.5)``, normalised."""
    if sigma == 0:
        return np.ones(1)
    radius = int(truncate * sigma + 0.5)
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    phi = np.exp(-0.5 / sigma ** 2 * x ** 2)
    return phi / phi.sum()


def separable_factors(corr: np.ndarray, acc) -> tuple | None:
    """(column, row) with ``corr == outer(column, row)`` to a few ulps of ``acc``, else None."""
    return _separable(corr.tobytes(), corr.shape, np.dtype(acc).char)


@functools.lru_cache(maxsize=64)
def _separable(data: bytes, shape: tuple, acc: str):
    corr = np.frombuffer(data, np.float64).reshape(shape)
    if corr.shape[0] < 2 or corr.shape[1] < 2 or not np.all(np.isfinite(corr)) or \
            not np.any(corr):
        return None
    # The column and the row through the largest weight: for a rank-1 mask their products give
    # every weight back to rounding, and a row or column of zeros stays exactly zero.
    i, j = np.unravel_index(np.argmax(np.abs(corr)), corr.shape)
    col, row = corr[:, j].copy(), corr[i, :] / corr[i, j]
    # Rank 1 weight by weight: each product col[i] * row[j] must equal its weight to a few ulps
    # of the accumulation type, and a weight of 0 must be 0.  A bound on the whole mask (such
    # as on its second singular value) would let a small weight go wrong, and with it the
    # pixels where that weight meets the image's brightest values.
    error = np.abs(np.outer(col, row) - corr)
    if np.any(error > 8 * np.finfo(acc).eps * np.abs(corr)):
        return None
    # The passes leave out a tap whose column or row weight is 0, scipy one whose own weight
    # is: the same taps, unless a product of two tiny factors underflowed to 0.
    if not np.array_equal(corr == 0, np.logical_or.outer(col == 0, row == 0)):
        return None
    return col, row


class Filter:
    """A 2-D filter ready to run on bands of one image shape and dtype.

    ``corr`` is the mask in correlation form (scipy's convolve mask flipped)
    with ``anchor`` = taps (above, left of) the centre; ``factors`` selects
    the two-pass path.  ``skip_zero_taps``: leave the taps of weight 0 out of
    the sums, as ``scipy.ndimage.convolve`` does (a NaN or an infinity under
    one does not reach the result); ``gaussian_filter``'s 1-D passes multiply
    every tap.  It holds no image, so it can be sent to MPI ranks.
    """

    def __init__(self, func, shape, dtype, corr, anchor, factors, mode, cval,
                 skip_zero_taps=False):
        self.func = func
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.out = np.dtype(np.float64 if self.dtype == np.float64 else np.float32)
        self.corr = corr
        self.anchor = anchor
        self.factors = factors
        self.mode = mode
        self.cval = cval
        self.channels = shape[2] if len(shape) == 3 else 1
        self.skip_zero_taps = skip_zero_taps

    # -- construction and checks -----------------------------------------------------------

    @staticmethod
    def _check_image(func, image, mode, cval):
        check_ndim(func, "image", image.shape, (2, 3), "HxW or HxWxC")
        if image.ndim == 3 and not 1 <= image.shape[2] <= 4:
            raise ArgumentValueError(f"{func}: images have 1 to 4 channels; got shape "
                                     f"{tuple(image.shape)} (filter the channels in groups)")
        check_dtype(func, "image", image.dtype, IMAGE_DTYPES)
        if mode not in MODES:
            raise ArgumentValueError(f"{func}: unknown mode {mode!r}; use one of "
                                     f"{', '.join(MODES)}")
        return check_number(func, "cval", cval, finite=False)

    @classmethod
    def for_mask(cls, func, image, mask, mode, cval):
        """The filter of ``scipy.ndimage.convolve(image, mask, mode, cval)``."""
        cval = cls._check_image(func, image, mode, cval)
        if is_device_array(mask):
            mask = host_copy(mask)
        m = host_array(mask, func, "mask")
        if m.ndim != 2 or m.size == 0:
            raise ArgumentValueError(f"{func}: mask must be a non-empty 2-D array; got shape "
                                     f"{m.shape}")
        if m.dtype.kind not in "biuf":
            raise ArgumentTypeError(f"{func}: mask has dtype {m.dtype}; pass real numbers")
        corr = m.astype(np.float64)[::-1, ::-1]
        # scipy.ndimage.convolve leaves out the weights of magnitude up to DBL_EPSILON
        corr = np.where(np.abs(corr) > np.finfo(np.float64).eps, corr, 0.0)
        anchor = ((m.shape[0] - 1) // 2, (m.shape[1] - 1) // 2)
        # the precision the sums may have on some device
        acc = np.float64 if image.dtype in (np.float64,) + WIDE_INTEGERS else np.float32
        return cls(func, image.shape, image.dtype, corr, anchor, separable_factors(corr, acc),
                   mode, cval, skip_zero_taps=True)

    @classmethod
    def for_gaussian(cls, func, image, sigma, mode, cval, truncate):
        """The filter of ``scipy.ndimage.gaussian_filter`` over the two image axes."""
        cval = cls._check_image(func, image, mode, cval)
        sigmas = np.atleast_1d(np.asarray(sigma, dtype=object))
        if sigmas.size == 3 and image.ndim == 3 and sigmas[2] == 0:
            sigmas = sigmas[:2]  # scipy's spelling of "each channel separately"
        if sigmas.size == 1:
            sigmas = np.repeat(sigmas, 2)
        if sigmas.size != 2:
            raise ArgumentValueError(f"{func}: sigma is one number or one per image axis "
                                     f"(sy, sx); got {sigma!r}")
        sy, sx = (check_number(func, "sigma", s, non_negative=True) for s in sigmas)
        truncate = check_number(func, "truncate", truncate, positive=True)
        taps = [1 if s == 0 else 2 * int(truncate * s + 0.5) + 1 for s in (sy, sx)]
        if taps[0] * taps[1] > MAX_MASK_SIZE:
            raise ArgumentValueError(
                f"{func}: sigma {sigma!r} with truncate {truncate:g} makes a mask of "
                f"{taps[0]} x {taps[1]} taps, more than clkit handles ({MAX_MASK_SIZE:,} in "
                "all); blur a smaller copy of the image, or lower sigma or truncate")
        col, row = gaussian_weights(sy, truncate), gaussian_weights(sx, truncate)
        corr = np.outer(col, row)  # symmetric: convolution and correlation agree
        anchor = ((col.size - 1) // 2, (row.size - 1) // 2)
        factors = (col, row) if corr.shape[0] > 1 and corr.shape[1] > 1 else None
        return cls(func, image.shape, image.dtype, corr, anchor, factors, mode, cval)

    def without_image(self) -> "Filter":
        return self

    # -- bands -------------------------------------------------------------------------------

    @property
    def out_shape(self):
        return self.shape

    def rows_needed(self, r0: int, r1: int) -> np.ndarray:
        """The image rows output rows ``[r0, r1)`` read."""
        return band_rows(self.shape[0], r0, r1, self.corr.shape[0], self.anchor[0],
                         self.mode)[0]

    def acc(self, device) -> np.dtype:
        """The type the kernels sum in on ``device``: the result's, or double for integers
        beyond float32's 2**24 where the device has fp64."""
        if self.dtype in WIDE_INTEGERS and device.fp64:
            return np.dtype(np.float64)
        return self.out

    def _program(self, device):
        kh, kw = self.corr.shape
        acc = self.acc(device)
        cl_type = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
        # bool images are read as their bytes (see _loadable)
        defines = dict(SRC_T=CL_TYPES.get(self.dtype, "uchar"), ACC_T=cl_type[acc],
                       CHANNELS=self.channels, KW=kw, KH=kh, ANCHOR_X=self.anchor[1],
                       BORDER=MODES[self.mode])
        if acc != self.out:
            defines["OUT_T"] = cl_type[self.out]
        options = ()
        if self.corr.size * acc.itemsize > device.cl_device.max_constant_buffer_size:
            defines["MASK_SPACE"] = "__global"
        two_pass = self.two_pass(device)
        geometry = _geometry(device, kh, kw, self.channels, acc.itemsize, two_pass)
        defines.update(geometry.defines, PASSES=2 if two_pass else 1)  # only the kernels used
        defines.update(self._zero_tap_defines(device))
        if device.simulator:
            # Oclgrind 21.10: its uninitialised-value check misreads register permutes, and
            # its interpreter stops at instructions (freeze) that LLVM's optimiser emits.
            defines.setdefault("CPU_PERMUTE", 2)
            options = ("-cl-opt-disable",)
        return program("convolution", options=options, **defines), geometry

    def _zero_tap_defines(self, device) -> dict:
        """The defines that leave out the taps of weight 0 (see convolution.cl).

        None for a mask without such taps (or with ``skip_zero_taps`` off): its
        build is the same as ever.  Otherwise SKIP_ZERO_TAPS and, for each mask the
        launched kernels take of up to MAX_TAP_TABLE taps, its table of used
        taps, also when that mask (a separable factor) has no zero: the table
        folds its tests away, where without one its weights are tested at run time.
        """
        if not self.skip_zero_taps:
            return {}
        if self.two_pass(device):
            col, row = self.factors
            masks = {"ROW_TAPS_USED": row, "COL_TAPS_USED": col}
        else:
            masks = {"TAPS_USED": self.corr}
        if all(np.all(m != 0) for m in masks.values()):
            return {}
        defines = {"SKIP_ZERO_TAPS": 1}
        for name, m in masks.items():
            if m.size <= MAX_TAP_TABLE:
                defines[name] = ",".join(np.where(m.ravel() != 0, "1", "0"))
        return defines

    def two_pass(self, device) -> bool:
        """Whether to filter rows then columns: for rank-1 masks, except small ones on GPUs.

        On a GPU the direct kernel reads its tile once from local memory and is
        bandwidth-bound up to about 9x9 taps, where the two passes move twice the bytes
        (H200: 5x5 direct 0.17 ms, two passes 0.24 ms at 7680x4320).
        """
        if self.factors is None:
            return False
        return device.type != "gpu" or self.corr.size > 81

    def taps(self, device) -> int:
        """Multiply-adds per output element."""
        kh, kw = self.corr.shape
        return kh + kw if self.two_pass(device) else kh * kw

    def passes(self, rt, queue, out_rows: int):
        """The kernels that run this filter on ``out_rows`` rows now: the specialised build
        when it is ready (see clkit/_tiers.py), else the generic one, with the same sums.

        The generic kernel writes the type it sums in, so integers summed in double for a
        float32 result (WIDE_INTEGERS on devices with fp64) always take the specialised one.
        """
        if self.out == np.float64:
            require_fp64(self.func, rt.device, "a float64 image")
        prg, geometry = self._program(rt.device)
        work = out_rows * self.shape[1] * self.channels * self.taps(rt.device)
        # Oclgrind cannot take a second thread's launches: its hot variants build in the call
        if self.acc(rt.device) != self.out or _tiers.use_specialised(
                prg, rt.device, work=work, prime=functools.partial(self._prime, rt),
                in_background=not rt.device.simulator):
            return Specialised(prg, geometry)
        return Generic(self, geometry, rt, queue, border=list(MODES).index(self.mode))

    def launch(self, rt, queue, src, rowmap, out_rows: int, dst, passes=None):
        """Enqueue the kernels that fill ``dst`` (``out_rows`` rows) from ``src`` rows."""
        passes = passes or self.passes(rt, queue, out_rows)
        self._enqueue(passes, rt, queue, passes.device_src(src), rowmap, out_rows, dst)

    def upload_rows(self, rt, queue, rows_data, out_rows: int):
        """Upload image rows for a launch; returns (device rows, passes)."""
        passes = self.passes(rt, queue, out_rows)
        return upload(rt, passes.host_src(_loadable(rows_data)), queue), passes

    def _enqueue(self, passes, rt, queue, src, rowmap, out_rows, dst):
        acc = self.acc(rt.device).type
        call = dict(device=rt.device, wait=False, queue=queue)
        if not self.two_pass(rt.device):
            passes.direct(self, src, rowmap, self.corr.astype(acc), dst, out_rows,
                          acc(self.cval), **call)
            return
        col, row = (f.astype(acc) for f in self.factors)
        n_src = src.size // (self.shape[1] * self.channels)
        # The row pass writes every element of tmp, rows [0, n_src) of the band's source, and
        # the column pass reads only those: nothing a call reads in tmp comes from before it.
        tmp = scratch(rt, queue, (n_src, self.shape[1] * self.channels), acc)
        passes.rows(self, src, row, tmp, n_src, acc(self.cval), **call)
        # A row outside the image is all cval, which the row pass would have made the sum of
        # row[j] * cval: summed tap by tap, so that an infinite cval gives NaN, as scipy's
        # taps do, where the row's weights have both signs (cval * sum(row) would not), and
        # over the taps the row pass uses (an infinite cval times a weight of 0 is NaN).
        used = row[self.factors[1] != 0] if self.skip_zero_taps else row
        with np.errstate(invalid="ignore", over="ignore"):
            cval_cols = acc(np.sum(used.astype(np.float64) * self.cval))
        passes.cols(self, tmp, rowmap, col, dst, out_rows, cval_cols, **call)

    def _prime(self, rt):
        """Run the specialised kernels once on a few rows, on a queue of their own.

        Some drivers (PoCL) finish compiling a kernel at its first launch; a
        background build does that too, so that the caller does not.
        """
        prg, geometry = self._program(rt.device)
        width = max(1, 4 * 64 // self.channels)  # wide enough for the launch's usual local size
        small = Filter(self.func, (4, width) + self.shape[2:], self.dtype, self.corr, self.anchor,
                       self.factors, self.mode, self.cval, self.skip_zero_taps)
        queue = rt.new_queue()
        src = cl_array.to_device(queue, _loadable(np.zeros(small.shape, self.dtype)))
        dst = cl_array.empty(queue, small.shape, self.out)
        _, rowmap = band_rows(4, 0, 4, self.corr.shape[0], self.anchor[0], self.mode)
        rowmap = cl_array.to_device(queue, rowmap)
        small._enqueue(Specialised(prg, geometry), rt, queue, src, rowmap, 4, dst)
        queue.finish()

    def band_from_rows(self, rows_data, r0, r1, device) -> np.ndarray:
        """Output rows ``[r0, r1)`` on ``device`` from ``rows_data = image[rows_needed(r0, r1)]``."""
        rt = runtime(device)
        part = aligned_empty((r1 - r0,) + self.shape[1:], self.out)
        if part.size:
            dst = device_output(rt, part, part.shape, self.out)
            src, passes = self.upload_rows(rt, rt.queue, rows_data, r1 - r0)
            _, rowmap = band_rows(self.shape[0], r0, r1, self.corr.shape[0], self.anchor[0],
                                  self.mode)
            self.launch(rt, rt.queue, src, rowmap, r1 - r0, dst, passes)
            download(dst, part)
        return part

    # -- the whole job -----------------------------------------------------------------------

    def run(self, image, out, device):
        """Filter a whole numpy or device image on one or several devices."""
        func = self.func
        on_device = is_device_array(image)
        out = check_out(func, out, self.shape, self.out, on_device)
        height = self.shape[0]
        multi = is_multi(device)
        arrays = [image] + ([out] if out is not None else [])
        # home: where a device result lives, or the one device of a single-device run
        home = device_of(func, None if multi else device, arrays) \
            if on_device or not multi else None
        devices = devices_of(device) if multi else [home]
        if image.size == 0:
            result = aligned_empty(self.shape, self.out) if out is None else out
            if on_device and out is None:
                result = cl_array.empty(runtime(home).queue, self.shape, self.out)
            return result
        if on_device and not multi:
            rt = runtime(home)
            src = _loadable(contiguous_device(image))
            direct = out is not None and out.offset == 0 and out.flags.c_contiguous
            dst = out if direct else cl_array.empty(rt.queue, self.shape, self.out)
            # The whole image is one band, and its output rows read every image row.
            _, rowmap = band_rows(height, 0, height, self.corr.shape[0], self.anchor[0],
                                  self.mode)
            self.launch(rt, rt.queue, src, rowmap, height, dst)
            if out is not None and not direct:
                out[...] = dst
                return out
            return dst
        host = _loadable(host_copy(image) if on_device else np.ascontiguousarray(image))
        result = numpy_result(self.shape, self.out, None if on_device else out, devices)

        def band(rt, queue, r0, r1):
            part = result[r0:r1]
            rows, rowmap = band_rows(height, r0, r1, self.corr.shape[0], self.anchor[0],
                                     self.mode)
            contiguous = rows.size == rows[-1] - rows[0] + 1
            # src may wrap host memory (no copy): it must live until the band is home
            src, passes = self.upload_rows(
                rt, queue, host[rows[0]:rows[-1] + 1] if contiguous else host[rows], r1 - r0)
            dst = device_output(rt, part, part.shape, self.out, queue)
            self.launch(rt, queue, src, rowmap, r1 - r0, dst, passes)
            download(dst, part)

        # the two-pass temporary, in the widest type the sums may take
        tmp_row = result[:1].size * (8 if self.dtype in WIDE_INTEGERS else self.out.itemsize) \
            if self.factors else 0
        row_bytes = host[:1].nbytes + result[:1].nbytes + tmp_row
        halo = self.corr.shape[0] - 1

        def probe(dev):
            k = probe_rows(height, row_bytes)
            band(runtime(dev), runtime(dev).queue, 0, k)
            return k

        key = (func, self.dtype, self.shape[1:], self.corr.shape, self.factors is not None)
        plan = _bands.proportional(devices, height, key, probe) if multi else \
            [(home, 0, height)]
        _bands.run(plan, band, lambda dev: min(
            _bands.tile_rows(dev, row_bytes, halo, host[:1].nbytes + tmp_row, what="image"),
            _bands.pipeline_rows(dev, height, host.nbytes + result.nbytes)))
        if on_device:
            dst = out if out is not None else cl_array.empty(runtime(home).queue, self.shape,
                                                             self.out)
            dst.set(result)
            return dst
        return result


class _Geometry:
    """Variant defines and launch sizes of convolution.cl on one device."""

    def __init__(self, variant, defines, **sizes):
        self.variant = variant
        self.defines = defines
        self.__dict__.update(sizes)

    def sizes(self, width: int, rows: int):
        """(global, local) sizes for ``rows`` rows of ``width`` pixels."""
        rowlen = width * self.channels
        if self.variant == "cpu":
            gx = -(-rowlen // (self.vw * self.nvec))
            lx = min(4, gx)
            return (-(-gx // lx) * lx, -(-rows // self.rows)), (lx, 1)
        gx = -(-rowlen // (self.lx * self.px)) * self.lx
        gy = -(-rows // (self.ly * self.py)) * self.ly
        return (gx, gy), (self.lx, self.ly)


GPU_TILE = (32, 4, 4, 4)


def _gpu_tile(kh, kw, separable) -> tuple:
    """GPU work-group (LX, LY) and outputs per work-item (PX along x, LX apart; PY rows).

    Chosen per mask from the tile sweep of ``benchmarks/gpu_probe.py`` on the H200
    (docs/benchmarks.md, "The convolution tile"): wider rows of outputs up to 5x5,
    six rows per work-item up to 9x9, taller work-groups for the two passes of a
    separable mask; larger 2-D masks keep GPU_TILE (at 15x15 every tile swept
    took 1.50-1.56 ms).
    """
    if separable:
        return 32, 8, 4, 4
    if max(kh, kw) <= 5:
        return 32, 4, 8, 4
    if max(kh, kw) <= 9:
        return 32, 4, 4, 6
    return GPU_TILE


def cpu_vector_width(device, itemsize: int) -> int:
    """Elements per vector (VW) of the CPU variant: the device's native SIMD width for the type.

    float16 on a CPU without AVX-512 would take two registers, gain nothing, and make clang
    warn at each builtin it passes through that its ABI changes.  A device that reports no
    vector width (Oclgrind: 1) gets 64 bytes, the AVX-512 width.
    """
    cl_device = device.cl_device
    native = (cl_device.native_vector_width_float if itemsize == 4
              else cl_device.native_vector_width_double)
    return native if native in (4, 8, 16) else 64 // itemsize


def _geometry(device, kh, kw, channels, itemsize, separable) -> _Geometry:
    """The kernel variant for a device: local-memory tiles on GPUs, SIMD runs elsewhere.

    CPU variant (PoCL-tuned): runs of VW * NVEC elements (VW: `cpu_vector_width`), ROWS rows per
    work-item, NACC accumulators, work-groups of 4.  GPU variant: `_gpu_tile`'s
    work-groups and outputs per work-item, the mask rows in chunks that fit
    the local memory.  A mask too wide for the tile falls back to GPU_TILE,
    and one too wide for that to the CPU variant, which runs on GPUs too.
    """
    budget = min(device.local_mem, 48 * 1024) - 1024
    tiles = dict.fromkeys([_gpu_tile(kh, kw, separable), GPU_TILE]) if device.type == "gpu" else {}
    for lx, ly, px, py in tiles:
        tile_w = lx * px + (kw - 1) * channels
        chunk = min(kh, budget // (itemsize * tile_w) - ly * py + 1)
        if chunk >= 1 and ly * py * tile_w * itemsize <= budget:
            return _Geometry("gpu", dict(CONV_VARIANT="CONV_GPU", LX=lx, LY=ly, PX=px, PY=py,
                                         KH_CHUNK=chunk),
                             channels=channels, lx=lx, ly=ly, px=px, py=py)
    vw = cpu_vector_width(device, itemsize)
    nvec = 2 if separable else 1
    return _Geometry("cpu", dict(CONV_VARIANT="CONV_CPU", VW=vw, NVEC=nvec, ROWS=4, NACC=2),
                     channels=channels, vw=vw, nvec=nvec, rows=4)


def _loadable(image):
    """The image as the kernels read it: a bool image as its bytes (0 or 1), others as they are."""
    return image.view(np.uint8) if image.dtype == np.bool_ else image


def _image(func, image):
    return image if is_device_array(image) else host_array(image, func, "image")


def convolve(image, mask, mode="reflect", cval=0.0, out=None, device=None):
    """Convolve an image with a 2-D mask, as ``scipy.ndimage.convolve``.

    Parameters
    ----------
    image : ndarray or device array
        HxW, or HxWxC with 1 to 4 channels (each filtered separately);
        bool, int8 to int64, uint8 to uint64, float32 or float64: every
        dtype scipy.ndimage takes, numpy's default integer included.
        Integer images give scipy's result on ``image.astype(np.float64)``,
        rounded to float32.  Those of 32 and 64 bits are summed in double
        where the device has fp64; on a device without fp64 they are summed
        in float32, so values beyond 2**24 (16,777,216) are rounded to float32
        before they are weighted.
    mask : array_like
        Any 2-D size, odd or even.  A rank-1 (separable) mask takes a two-pass
        path automatically, with the same results.
    mode : {"reflect", "constant", "nearest", "mirror", "wrap"}
        How the image extends beyond its edges, as in scipy.ndimage.
    cval : float
        The value outside the image in ``"constant"`` mode.
    out : ndarray or device array, optional
        Same shape as the image, float32 (float64 for float64 images).
    device : Device or str, optional
        Where to run: a spec, ``"all"`` or a list of specs.

    Returns
    -------
    ndarray or device array
        float32 (bool, integer and float32 images) or float64 (float64
        images, on devices with fp64), the image's shape.

    Examples
    --------
    >>> import numpy as np
    >>> from clkit.kernels import convolve
    >>> image = np.arange(12, dtype=np.float32).reshape(3, 4)
    >>> convolve(image, np.ones((1, 3)) / 3, mode="nearest", device="cpu")
    array([[ 0.33333334,  1.        ,  2.        ,  2.6666667 ],
           [ 4.3333335 ,  5.        ,  6.        ,  6.6666665 ],
           [ 8.333333  ,  9.        , 10.        , 10.666667  ]], dtype=float32)
    """
    image = _image("convolve", image)
    return Filter.for_mask("convolve", image, mask, mode, cval).run(image, out, device)


def gaussian_blur(image, sigma, mode="reflect", cval=0.0, truncate=4.0, out=None, device=None):
    """Gaussian blur, as ``scipy.ndimage.gaussian_filter``.

    Parameters
    ----------
    image : ndarray or device array
        HxW, or HxWxC with 1 to 4 channels (each blurred separately, as scipy
        with ``sigma=(s, s, 0)``); dtypes as :func:`convolve`.
    sigma : float or (float, float)
        Standard deviation in pixels, one for both axes or (rows, columns);
        not negative (0 leaves that axis as it is, as in scipy).
    mode : {"reflect", "constant", "nearest", "mirror", "wrap"}
    cval : float
    truncate : float
        The mask's radius is ``int(truncate * sigma + 0.5)``.
    out : ndarray or device array, optional
    device : Device or str, optional
        Where to run: a spec, ``"all"`` or a list of specs.

    Returns
    -------
    ndarray or device array
        float32 (float64 for float64 images), the image's shape.

    Examples
    --------
    >>> import numpy as np
    >>> from clkit.kernels import gaussian_blur
    >>> impulse = np.zeros((5, 5), np.float32); impulse[2, 2] = 1
    >>> gaussian_blur(impulse, 1.0, device="cpu")[2].round(3)
    array([0.034, 0.096, 0.135, 0.096, 0.034], dtype=float32)
    """
    image = _image("gaussian_blur", image)
    return Filter.for_gaussian("gaussian_blur", image, sigma, mode, cval, truncate) \
        .run(image, out, device)
