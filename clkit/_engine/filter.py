"""A 2-D filter as the dispatch layer runs it: the convolution kernels on bands of rows.

The kernels compute a band of output rows from a source buffer that holds
the image rows the band needs, read through a row map (see ``_border``).
The whole image is one band; several devices, images larger than a device
and MPI ranks use smaller ones, with the same kernels.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pyopencl.array as cl_array

from .._build import tiers as _tiers
from .._errors import ArgumentTypeError, ArgumentValueError
from .._memory import transfer as _transfer
from .._memory import pools as _memory
from .._platform.runtime import Memo
from .._platform.runtime import runtime, runtime_of_array
from .checks import (check_dtype, check_ndim, check_number, host_array, is_device_array,
                     require_fp64)
from .conv_kernels import UNOPTIMISED, Generic, Specialised, fused, geometry, tmp_pitch
from .operation import CL_TYPES, Operation, program
from .stencil import (MAX_MASK_SIZE, MODES, NUMBERS, band_rows, correlation_mask,
                      gaussian_taps, weights_as)

#: The most taps of a mask whose used taps are listed in a build define (two characters a tap)
#: when it has taps of weight 0.  The list pays only where the tap loops are unrolled, for
#: masks of up to 256 taps in both variants; a larger mask runs rolled loops, where testing
#: its weights at run time costs the same.  A float64 mask of this size and its list fit the
#: 64 KiB of constant memory that every device has, so a list never goes with a mask that
#: MASK_SPACE puts in __global.
MAX_TAP_TABLE = 1024
#: The most weights of a mask that the GPU kernels take built into the program.
MAX_BAKED_TAPS = 256
IMAGE_DTYPES = (np.bool_, np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.uint64,
                np.int64, np.float32, np.float64)
#: Integer images whose values float32 may not hold exactly (beyond 2**24): summed in double
#: where the device has fp64, into a float32 result.
WIDE_INTEGERS = (np.uint32, np.int32, np.uint64, np.int64)


def constant_bytes(device) -> int:
    """The most bytes of masks a kernel takes in ``__constant`` memory on ``device``."""
    return device.cl_device.max_constant_buffer_size


#: Results of more bytes than this are stored past the caches on CPUs (convolution_cpu.cl's
#: NONTEMPORAL); None: half the device's global memory cache (its last level), beyond which
#: the stored image and the one being read no longer share it.
NONTEMPORAL_FROM = None


def nontemporal_from(device) -> int:
    """The result size in bytes above which the CPU variant stores past the caches."""
    if NONTEMPORAL_FROM is not None:
        return NONTEMPORAL_FROM
    return device.cl_device.global_mem_cache_size // 2


MAX_FILTERS = 256
# Filters made for the arguments of recent calls (no device state: checked arguments, masks)
_made = Memo(MAX_FILTERS)


def remembered(key, make) -> "Filter":
    """The filter made before for the same arguments (checked then), else ``make()``'s.

    ``key`` holds every argument that ``make`` checks, with the types of the
    scalars (True equals 1 but is not a valid cval); a call whose arguments
    cannot be keyed (unhashable ones) is checked and made afresh.
    """
    try:
        found = _made.get(key)
    except TypeError:  # an unhashable argument
        return make()
    return found if found is not None else _made.make(key, make)


@functools.lru_cache(maxsize=64)
def _gaussian_mask(sy: float, sx: float, truncate: float):
    """(corr, anchor, factors) of a 2-D Gaussian, made once per set of parameters."""
    col, row = gaussian_taps(sy, truncate), gaussian_taps(sx, truncate)
    corr = np.outer(col, row)  # symmetric: convolution and correlation agree
    corr.flags.writeable = False
    anchor = ((col.size - 1) // 2, (row.size - 1) // 2)
    factors = (col, row) if corr.shape[0] > 1 and corr.shape[1] > 1 else None
    return corr, anchor, factors


def loadable(image):
    """The image as the kernels read it: a bool image as its bytes (0 or 1), others as they are."""
    return image.view(np.uint8) if image.dtype == np.bool_ else image


class Filter(Operation):
    """A 2-D filter of one image shape and dtype.

    ``corr`` is the mask in correlation form (scipy's convolve mask flipped)
    with ``anchor`` = taps (above, left of) the centre; ``factors`` selects
    the two-pass path.  ``skip_zero_taps``: leave the taps of weight 0 out of
    the sums, as ``scipy.ndimage.convolve`` does (a NaN or an infinity under
    one does not reach the result); ``gaussian_filter``'s 1-D passes multiply
    every tap.  ``mask_key`` is what the mask was made from (its bytes, or
    the Gaussian's parameters).  ``bake_weights``: the GPU kernels take the
    weights built into their program (one build per weight set: for the
    Gaussians, whose weights their parameters fix, not for every mask a
    caller passes).
    """

    what = "image"

    def __init__(self, name, shape, dtype, corr, anchor, factors, mode, cval, mask_key,
                 skip_zero_taps=False, bake_weights=False):
        self.name = name
        self.shape = tuple(shape)
        self.image_dtype = np.dtype(dtype)
        self.dtype = np.dtype(np.float64 if self.image_dtype == np.float64 else np.float32)
        self.corr = corr
        self.anchor = anchor
        self.factors = factors
        self.mode = mode
        self.cval = cval
        self.channels = shape[2] if len(shape) == 3 else 1
        self.skip_zero_taps = skip_zero_taps
        self.bake_weights = bake_weights
        self.key = (name, self.shape, self.image_dtype, mask_key, mode, cval, anchor)
        self.halo = corr.shape[0] - 1
        # the two-pass temporary, per source row, in the widest type the sums may take
        wide = 8 if self.image_dtype in WIDE_INTEGERS else self.dtype.itemsize
        self.scratch_row_bytes = wide * tmp_pitch(math.prod(self.shape[1:])) \
            if factors is not None else 0

    @property
    def speed_key(self):
        return (self.name, self.image_dtype, self.shape[1:], self.corr.shape,
                self.factors is not None)

    # -- construction and checks -----------------------------------------------------------

    @staticmethod
    def _check_image(name, image, mode, cval):
        check_ndim(name, "image", image.shape, (2, 3), "HxW or HxWxC")
        if image.ndim == 3 and not 1 <= image.shape[2] <= 4:
            raise ArgumentValueError(f"{name}: images have 1 to 4 channels; got shape "
                                     f"{tuple(image.shape)} (filter the channels in groups)")
        check_dtype(name, "image", image.dtype, IMAGE_DTYPES)
        if mode not in MODES:
            raise ArgumentValueError(f"{name}: unknown mode {mode!r}; use one of "
                                     f"{', '.join(MODES)}")
        return check_number(name, "cval", cval, finite=False)

    @classmethod
    def for_mask(cls, name, image, mask, mode, cval, anchor=None):
        """The filter of ``scipy.ndimage.convolve(image, mask, mode, cval)``; ``anchor``
        (taps above and left of the output element in correlation form) shifts it, as
        scipy's ``origin`` does (default: the centre, scipy's origin 0)."""
        cval = cls._check_image(name, image, mode, cval)
        if is_device_array(mask):
            mask = _transfer.download(runtime_of_array(mask), mask)
        m = host_array(mask, name, "mask")
        if m.ndim != 2 or m.size == 0:
            raise ArgumentValueError(f"{name}: mask must be a non-empty 2-D array; got shape "
                                     f"{m.shape}")
        if m.dtype.kind not in "biuf":
            raise ArgumentTypeError(f"{name}: mask has dtype {m.dtype}; pass real numbers")
        # the precision the sums may have on some device
        acc = "d" if image.dtype in (np.float64,) + WIDE_INTEGERS else "f"
        mask_key = (np.ascontiguousarray(m).tobytes(), m.shape, m.dtype.str)
        corr, centre, factors = correlation_mask(*mask_key, acc)
        anchor = centre if anchor is None else tuple(anchor)
        return cls(name, image.shape, image.dtype, corr, anchor, factors, mode, cval, mask_key,
                   skip_zero_taps=True)

    @classmethod
    def for_gaussian(cls, name, image, sigma, mode, cval, truncate):
        """The filter of ``scipy.ndimage.gaussian_filter`` over the two image axes."""
        cval = cls._check_image(name, image, mode, cval)
        if isinstance(sigma, (int, float, np.number)):
            sigmas = (sigma, sigma)  # the common case, without numpy's conversions
        else:
            sigmas = np.atleast_1d(np.asarray(sigma, dtype=object))
            if sigmas.size == 3 and image.ndim == 3 and sigmas[2] == 0:
                sigmas = sigmas[:2]  # scipy's spelling of "each channel separately"
            if sigmas.size == 1:
                sigmas = np.repeat(sigmas, 2)
            if sigmas.size != 2:
                raise ArgumentValueError(f"{name}: sigma is one number or one per image axis "
                                         f"(sy, sx); got {sigma!r}")
        sy, sx = (check_number(name, "sigma", s, non_negative=True) for s in sigmas)
        truncate = check_number(name, "truncate", truncate, positive=True)
        taps = [1 if s == 0 else 2 * int(truncate * s + 0.5) + 1 for s in (sy, sx)]
        if taps[0] * taps[1] > MAX_MASK_SIZE:
            raise ArgumentValueError(
                f"{name}: sigma {sigma!r} with truncate {truncate:g} makes a mask of "
                f"{taps[0]} x {taps[1]} taps, more than clkit handles ({MAX_MASK_SIZE:,} in "
                "all); blur a smaller copy of the image, or lower sigma or truncate")
        # kept for reuse unless large (a wide 2-D Gaussian takes up to 128 MiB)
        make = _gaussian_mask if taps[0] * taps[1] <= 1 << 16 else _gaussian_mask.__wrapped__
        corr, anchor, factors = make(sy, sx, truncate)
        return cls(name, image.shape, image.dtype, corr, anchor, factors, mode, cval,
                   ("gaussian", sy, sx, truncate), bake_weights=True)

    # -- bands -------------------------------------------------------------------------------

    def _band(self, r0: int, r1: int):
        return band_rows(self.shape[0], r0, r1, self.corr.shape[0], self.anchor[0], self.mode)

    def rows(self, r0: int, r1: int):
        rows = self._band(r0, r1)[0]
        return (int(rows[0]), int(rows[-1]) + 1) if rows[-1] - rows[0] + 1 == rows.size \
            else rows

    def two_pass(self, device) -> bool:
        """Whether to filter rows then columns: for rank-1 masks, except small ones on CPUs
        and small ones over several channels on GPUs.

        On a GPU the two passes of a single-channel image run as one kernel
        (convolution_fused.cl) and take no longer than the direct kernel at any size, with
        fewer roundings per result; over 3 channels the direct kernel is the faster up to 9x9.
        On a CPU the direct kernel's 9 taps of a 3x3 mask cost less than the second pass over
        memory; from 5x5 the two passes are the faster.
        """
        if self.factors is None:
            return False
        if device.type == "gpu":
            return self.channels == 1 or self.corr.size > 81
        return self.corr.size > 9

    def acc(self, device) -> np.dtype:
        """The type the kernels sum in on ``device``: the result's, or double for integers
        beyond float32's 2**24 where the device has fp64."""
        if self.image_dtype in WIDE_INTEGERS and device.fp64:
            return np.dtype(np.float64)
        return self.dtype

    def _program(self, device):
        kh, kw = self.corr.shape
        acc = self.acc(device)
        # bool images are read as their bytes (see loadable)
        defines = dict(SRC_T=CL_TYPES.get(self.image_dtype, "uchar"), ACC_T=CL_TYPES[acc],
                       CHANNELS=self.channels, KW=kw, KH=kh, ANCHOR_X=self.anchor[1],
                       BORDER=MODES[self.mode])
        if acc != self.dtype:
            defines["OUT_T"] = CL_TYPES[self.dtype]
        options = ()
        two_pass = self.two_pass(device)
        # the masks the launched kernels take: the two factors, or the 2-D mask
        taps = sum(f.size for f in self.factors) if two_pass else self.corr.size
        if taps * acc.itemsize > constant_bytes(device):
            defines["MASK_SPACE"] = "__global"
        vec4 = acc == np.float32
        shape = (fused(device, kh, kw, self.channels, acc.itemsize, vec4,
                       self.image_dtype.itemsize) if two_pass else None) \
            or geometry(device, kh, kw, self.channels, acc.itemsize, two_pass, vec4)
        defines.update(shape.defines, PASSES=2 if two_pass else 1)  # only the kernels used
        if shape.defines.get("VEC4") or "ROW_SX" in shape.defines:
            # the kernels' vectors of rows, as the image's rows lie (see convolution.h)
            defines["ROW_ALIGNED"] = int(self.shape[1] * self.channels % 4 == 0)
        if shape.variant == "cpu" and device.type == "cpu" and \
                math.prod(self.shape) * self.dtype.itemsize > nontemporal_from(device):
            defines["NONTEMPORAL"] = 1
        defines.update(self._zero_tap_defines(device))
        if self.bake_weights and shape.variant != "cpu" and "MASK_SPACE" not in defines:
            defines.update(self._weight_defines(acc, two_pass))
        if device.simulator:
            # Oclgrind 21.10: its uninitialised-value check misreads register permutes, and
            # its interpreter stops at instructions (freeze) that LLVM's optimiser emits.
            defines.setdefault("CPU_PERMUTE", 2)
            options = UNOPTIMISED
        return program(f"convolution_{shape.variant}", options=options, **defines), shape

    def _zero_tap_defines(self, device) -> dict:
        """The defines that leave out the taps of weight 0 (see convolution.h).

        None for a mask without such taps (or with ``skip_zero_taps`` off).
        Otherwise SKIP_ZERO_TAPS and, for each mask the launched kernels take of
        up to MAX_TAP_TABLE taps, its table of used taps, also when that mask (a
        separable factor) has no zero: the table folds its tests away, where
        without one its weights are tested at run time.
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

    def _weight_defines(self, acc, two_pass) -> dict:
        """The weights the GPU kernels take built into their program (see convolution.h): each
        mask of up to MAX_BAKED_TAPS taps, as exact hexadecimal literals.  Not with MASK_SPACE
        __global: the tables are __constant."""
        masks = {"ROW_WEIGHTS": self.factors[1], "COL_WEIGHTS": self.factors[0]} if two_pass \
            else {"WEIGHTS_2D": self.corr}
        suffix = "f" if acc == np.float32 else ""
        return {name: ",".join(float(v).hex() + suffix for v in weights_as(m, acc).ravel())
                for name, m in masks.items() if m.size <= MAX_BAKED_TAPS}

    def taps(self, device) -> int:
        """Multiply-adds per output element."""
        kh, kw = self.corr.shape
        return kh + kw if self.two_pass(device) else kh * kw

    def plan(self, rt, r0, r1):
        """The kernels of output rows ``[r0, r1)``, their masks and row map on the device.

        The specialised build's launch where it must serve (the generic kernel writes the type
        it sums in, so integers summed in double for a float32 result, WIDE_INTEGERS on devices
        with fp64, always take the specialised one), else a :class:`_Tiered` plan, whose tier
        (see clkit/_build/tiers.py) is chosen each time the plan is fetched.
        """
        device = rt.device
        if self.dtype == np.float64:
            require_fp64(self.name, device, "a float64 image")
        prg, shape = self._program(device)
        specialised = self._passes(rt, r0, r1, Specialised(prg, shape))
        if self.acc(device) != self.dtype:
            return specialised
        return _Tiered(self, rt, r0, r1, prg, shape, specialised)

    def _passes(self, rt, r0, r1, passes, private=None):
        """``launch(queue, srcs, dst)`` running the filter's passes through ``passes`` (a tier).

        Masks and the row map are the device's kept constants, or with ``private`` (a queue)
        uploads of their own on that queue, for work on another thread (a background build's
        first launch) that must not touch the runtime's queue.
        """
        def constant(host):
            if private is None:
                return _memory.constant(rt, host)
            return _memory.owned_copy(rt, host, private)

        rows, rowmap = self._band(r0, r1)
        rowmap = constant(rowmap)
        out_rows = r1 - r0
        acc_dtype = self.acc(rt.device)
        acc = acc_dtype.type
        # Python numbers, rounded to the kernel's type once: the launch takes them as they are
        # (and skips an argument the kernel still holds)
        cval = float(acc(self.cval))
        if not self.two_pass(rt.device):
            direct = passes.direct(self, rt, rowmap, constant(weights_as(self.corr, acc_dtype)),
                                   out_rows, cval)

            def launch(queue, srcs, dst):
                direct(queue, srcs[0], dst)
            return launch
        col, row = (constant(weights_as(f, acc_dtype)) for f in self.factors)
        n_src = rows.size
        tmp_bytes = n_src * tmp_pitch(self.shape[1] * self.channels) * acc_dtype.itemsize
        # A row outside the image is all cval, which the row pass would have made the sum of
        # row[j] * cval: summed tap by tap, so that an infinite cval gives NaN, as scipy's
        # taps do, where the row's weights have both signs (cval * sum(row) would not), and
        # over the taps the row pass uses (an infinite cval times a weight of 0 is NaN).
        weights = weights_as(self.factors[1], acc_dtype)
        used = weights[self.factors[1] != 0] if self.skip_zero_taps else weights
        with np.errstate(invalid="ignore", over="ignore"):
            cval_cols = float(acc(np.sum(used.astype(np.float64) * self.cval)))
        if getattr(passes, "geometry", None) is not None and passes.geometry.variant == "fused":
            fused = passes.fused(self, rt, rowmap, row, col, out_rows, cval, cval_cols)

            def launch(queue, srcs, dst):
                fused(queue, srcs[0], dst)
            return launch
        row_pass = passes.rows(self, rt, row, n_src, cval)
        col_pass = passes.cols(self, rt, rowmap, col, out_rows, cval_cols)

        def launch(queue, srcs, dst):
            # The row pass writes every element of tmp, rows [0, n_src) of the band's source,
            # and the column pass reads only those: nothing a call reads in tmp comes from
            # before it.
            tmp = _memory.scratch(rt, tmp_bytes, queue, acc_dtype)
            row_pass(queue, srcs[0], tmp)
            col_pass(queue, tmp, dst)
        return launch

    def _prime(self, device, generic=False):
        """Run the specialised kernels (or the optimised generic ones) once on a few rows, on a
        queue of their own.

        Some drivers (PoCL) finish compiling a kernel at its first launch; a
        background build does that too, so that the caller does not.
        """
        rt = runtime(device)  # the device's context now: it may have been lost and made anew
        width = max(1, 4 * 64 // self.channels)  # wide enough for the launch's usual local size
        small = Filter(self.name, (4, width) + self.shape[2:], self.image_dtype, self.corr,
                       self.anchor, self.factors, self.mode, self.cval, self.key[3],
                       self.skip_zero_taps, self.bake_weights)
        queue = rt.new_queue()
        prg, shape = self._program(rt.device)
        if generic:
            passes = Generic(small, shape, rt, queue, border=NUMBERS[MODES[self.mode]])
            src = _transfer.upload(rt, np.zeros(small.shape, passes.acc), queue)
        else:
            passes = Specialised(prg, shape)
            src = _transfer.upload(rt, loadable(np.zeros(small.shape, self.image_dtype)), queue)
        dst = cl_array.empty(queue, small.shape, passes.acc if generic else self.dtype)
        small._passes(rt, 0, 4, passes, private=queue)(queue, [src], dst)
        queue.finish()


class _Tiered:
    """A filter's plan in two tiers: :meth:`choose` (once per call, as the plan is fetched)
    gives the specialised build's launch when it may be used, else the generic one's, which
    runs the same sums."""

    def __init__(self, f: Filter, rt, r0, r1, prg, shape, specialised):
        self.f, self.rt, self.r0, self.r1 = f, rt, r0, r1
        self.prg, self.shape, self.specialised = prg, shape, specialised
        self.work = (r1 - r0) * f.shape[1] * f.channels * f.taps(rt.device)
        # picklable, so that a helper process can build and launch them (clkit/_build/helper.py)
        self.prime = functools.partial(f._prime, rt.device)
        self.prime_generic = functools.partial(f._prime, rt.device, generic=True)
        self.border = NUMBERS[MODES[f.mode]]

    def choose(self):
        """The launch ``(queue, srcs, dst)`` this call runs."""
        # Oclgrind cannot take a second thread's launches: its hot variants build in the call
        if _tiers.use_specialised(self.prg, self.rt, work=self.work, prime=self.prime,
                                  in_background=not self.rt.device.simulator):
            return self.specialised
        return self.generic

    def generic(self, queue, srcs, dst):
        rt = self.rt
        generic = Generic(self.f, self.shape, rt, queue, border=self.border, work=self.work)
        after = generic.queue_builds(self.prime_generic)
        try:
            return self.f._passes(rt, self.r0, self.r1, generic)(
                queue, [generic.device_src(srcs[0])], dst)
        finally:
            if after is not None:
                after.launched(queue)


def prebuild_generic(device) -> None:
    """The conversion of other dtypes (to_acc) and, on a CPU driver, the optimised generic
    program for float images, queued for the background builds (with their first launches)
    at the first library call of the process on the device, where they are not in the disk
    cache yet.

    The generic program takes PoCL seconds to build; built ahead, the first convolution or
    blur too large for the quick tier (a 3840x2160 image) finds it ready instead of waiting
    for it.  On a GPU the first convolution builds it in the call, but to_acc, queued only
    then, made the first image of another dtype right after wait for it.  The disk caches
    keep both, so that this happens once per installation and device.
    """
    if device.simulator:
        return
    probe = Filter.for_mask("convolve", np.zeros((8, 64), np.float32), np.ones((3, 3)),
                            "reflect", 0.0)
    rt = runtime(device)
    generic = Generic(probe, probe._program(device)[1], rt, rt.queue, border=0)
    generic.prebuild(generic.prg if device.type == "cpu" else None,
                     functools.partial(probe._prime, device, generic=True))

