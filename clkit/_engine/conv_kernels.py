"""The convolution's kernels on a device: which variant, laid out how, launched by which tier.

Geometry: two variants of the convolution kernels, one file each over the shared
``convolution.h``: local-memory tiles on GPUs (``convolution_gpu.cl``), SIMD runs of a
row on CPUs and wherever the tile does not fit (``convolution_cpu.cl``); a
:class:`Geometry` holds a variant's defines and launch sizes on one device.

Tiers: ``Specialised`` runs the build of convolution_cpu.cl or convolution_gpu.cl made
for one mask size, mode, dtype and geometry; ``Generic`` runs convolution_generic.cl,
one build per device and accumulation type that takes all of those as arguments and
reproduces the specialised build's sums.  ``Filter.plan`` (in ``filter``) picks one per
call through :mod:`clkit._build.tiers`.
"""

from __future__ import annotations

import functools

import numpy as np
import pyopencl.array as cl_array

from .._build import build as _build, tiers as _tiers
from .._launch.kernel import Prepared
from .._memory import transfer as _transfer
from .._platform.runtime import runtime
from .operation import TYPE_CODES, program, round_up

# -- geometry -------------------------------------------------------------------------------

class Geometry:
    """Variant defines and launch sizes of the convolution kernels on one device."""

    #: the GPU variant's streamed separable passes: (ROW_LX, ROW_SX), (COL_LX, COL_SY); None
    #: for the passes through the tiles
    streamed = None

    def __init__(self, variant, defines, **sizes):
        self.variant = variant
        self.defines = defines
        self.__dict__.update(sizes)
        self._made = {}  # (width, rows, kernel) -> sizes: the same tuples for every call of a plan

    def sizes(self, width: int, rows: int, kernel: str = ""):
        """(global, local) sizes of ``kernel`` for ``rows`` rows of ``width`` pixels."""
        made = self._made.get((width, rows, kernel))
        if made is None:
            if len(self._made) >= 64:
                self._made.clear()
            made = self._made[width, rows, kernel] = self._sizes(width, rows, kernel)
        return made

    def _sizes(self, width: int, rows: int, kernel: str):
        rowlen = width * self.channels
        streamed = self.streamed
        if streamed and kernel == "convolve_rows":
            lx, sx = streamed[0]  # convolution_gpu.cl's streamed row pass: sx elements each
            return (-(-rowlen // (sx * lx)) * lx, rows), (lx, 1)
        if streamed and kernel == "convolve_cols":
            lx, sy = streamed[1]  # the streamed column pass: 4 elements of sy rows each
            return (-(-rowlen // (4 * lx)) * lx, -(-rows // sy)), (lx, 1)
        if self.variant == "fused":
            ew = self.lx * self.epi  # row elements per work-group
            return ((-(-rowlen // ew) * self.lx, -(-rows // (self.ly * self.py)) * self.ly),
                    (self.lx, self.ly))
        if self.variant == "cpu":
            # One local size whatever the width: PoCL compiles a kernel again for each local
            # size it is launched with, so a narrow image that took a smaller one paid a new
            # compile; the work-items past the row return at once.
            gx = -(-rowlen // (self.vw * self.nvec))
            return (-(-gx // CPU_LX) * CPU_LX, -(-rows // self.rows)), (CPU_LX, 1)
        gx = -(-rowlen // (self.lx * self.px)) * self.lx
        gy = -(-rows // (self.ly * self.py)) * self.ly
        return (gx, gy), (self.lx, self.ly)


GPU_TILE = (32, 4, 4, 4)
#: The separable passes streamed through registers on GPUs (convolution_gpu.cl's ROW_SX and
#: COL_SY), for images summed in float: work-groups of ROW_LX work-items, each ROW_SX elements of
#: a row, and of COL_LX work-items, each four row elements of COL_SY output rows (both None:
#: the passes through the tiles; the streamed passes go together, as their temporary's rows are
#: padded to whole vectors, see tmp_pitch).
GPU_ROWS = (64, 8)
GPU_COLS = (64, 16)
CPU_LX = 4  # work-items along a row in a work-group of the CPU variant


def tmp_pitch(rowlen: int) -> int:
    """Elements per row of the two passes' temporary: a row of the image padded to a multiple of
    4, so that the streamed passes move it in aligned vectors (convolution_gpu.cl's
    TMP_PITCH; the other passes use the first ``rowlen`` of each)."""
    return -(-rowlen // 4) * 4


def gpu_tile(kh, kw, separable) -> tuple:
    """GPU work-group (LX, LY) and outputs per work-item (PX along x, LX apart; PY rows).

    Chosen per mask from sweeps of the tiles on a GPU (``benchmarks/gpu_conv_sweep.py``, in
    the history at ``192cc65``): wider rows of outputs up to 5x5, six rows per work-item up to
    9x9; larger 2-D masks keep GPU_TILE (every tile swept was about as fast).  The two passes
    of a separable mask take four outputs per work-item, whose unrolled taps then fit the
    registers (eight or more outputs per work-item spill them and were slower); images
    summed in float take the passes streamed through registers instead (GPU_ROWS, GPU_COLS).
    """
    if separable:
        return 32, 8, 2, 2
    if max(kh, kw) <= 5:
        return 32, 4, 8, 4
    if max(kh, kw) <= 9:
        return 32, 4, 4, 6
    return GPU_TILE


#: The largest 2-D mask (either side) whose images summed in float take the GPU variant's VEC4 form,
#: four adjacent outputs per work-item (see `gpu_tile4`).
GPU_VEC4_MAX = 9


def gpu_tile4(kh, kw) -> tuple:
    """GPU work-group (LX, LY) and outputs per work-item (PX = 4 adjacent; PY rows) of a 2-D
    mask over an image summed in float (convolution_gpu.cl's VEC4).

    The fastest of the twelve tiles the same sweep tried on a GPU, and faster than
    `gpu_tile`'s outputs LX apart, with bit-equal results.
    """
    if max(kh, kw) <= 5:
        return 32, 4, 4, 4
    return 32, 4, 4, 6


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


def geometry(device, kh, kw, channels, itemsize, separable, vec4=False) -> Geometry:
    """The kernel variant for a device: local-memory tiles on GPUs, SIMD runs elsewhere.

    CPU variant (PoCL-tuned): runs of VW * NVEC elements (VW: `cpu_vector_width`), ROWS rows per
    work-item, NACC accumulators, work-groups of 4.  GPU variant: `gpu_tile`'s
    work-groups and outputs per work-item, the mask rows in chunks that fit
    the local memory; with ``vec4`` (an image summed in float) 2-D masks of up to
    GPU_VEC4_MAX take `gpu_tile4`'s four adjacent outputs per work-item.  A mask too wide for
    the tile falls back to GPU_TILE, and one too wide for that to the CPU variant, which runs
    on GPUs too.
    """
    budget = min(device.local_mem, 48 * 1024) - 1024
    tiles = []
    streamed = None
    if device.type == "gpu" and separable and vec4 and GPU_ROWS and GPU_COLS:
        streamed = GPU_ROWS, GPU_COLS
    if device.type == "gpu":
        vec4 = vec4 and not separable and max(kh, kw) <= GPU_VEC4_MAX
        tiles = [(gpu_tile4(kh, kw), True)] if vec4 else []
        tiles += [(t, False) for t in dict.fromkeys([gpu_tile(kh, kw, separable), GPU_TILE])]
    for (lx, ly, px, py), vec4 in tiles:
        tile_w = lx * px + (kw - 1) * channels
        if vec4:
            # at most: whole vectors from a vector left of the halo (convolution_gpu.cl's TW4)
            tile_w = 4 * (lx - 1) + 4 * (((kw - 1) * channels + 10) // 4)
        # a separable mask's rows run over the column pass's tile, which has no halo along x
        chunk_w = lx * px if separable else tile_w
        chunk = min(kh, budget // (itemsize * chunk_w) - ly * py + 1)
        if chunk >= 1 and ly * py * tile_w * itemsize <= budget:
            defines = dict(LX=lx, LY=ly, PX=px, PY=py, KH_CHUNK=chunk)
            if vec4:
                defines["VEC4"] = 1
            if streamed:
                (row_lx, row_sx), (col_lx, col_sy) = streamed
                defines.update(ROW_LX=row_lx, ROW_SX=row_sx, COL_LX=col_lx, COL_SY=col_sy)
            return Geometry("gpu", defines, channels=channels, lx=lx, ly=ly, px=px, py=py,
                            streamed=streamed)
    vw = cpu_vector_width(device, itemsize)
    nvec = 2 if separable else 1
    return Geometry("cpu", dict(VW=vw, NVEC=nvec, ROWS=4, NACC=2),
                    channels=channels, vw=vw, nvec=nvec, rows=4)


#: The tallest separable mask the one-kernel filter takes: four row elements per work-item for
#: images summed in float ("float"; "byte" for images of 1-byte elements, whose reads cost less),
#: one for those summed in double ("double") (see :func:`fused`).
FUSED_MAX_ROWS = {"float": 21, "byte": 29, "double": 25}
#: The one-kernel filter's work-group (LX, LY) and output rows per work-item (PY, at most),
#: with one row element per work-item, and with four (images summed in float).
FUSED_SHAPE = (32, 8, 8)
FUSED_SHAPE4 = (8, 32, 4)
#: Whether images summed in float take the four-element form (convolution_fused.cl's VEC4).
FUSED_VEC4 = True
#: The widest halo (row elements on both sides together) for which the four-element form's row
#: pass computes 8 elements per work-item (convolution_fused.cl's ROW_EPI), 4 beyond it.
FUSED_WIDE_ROW_HALO = 16


def fused(device, kh, kw, channels, itemsize, vec4=False, src_itemsize=4) -> Geometry | None:
    """The one-kernel separable filter's work-groups on a GPU, or None where it does not fit.

    A work-group of LX x LY work-items computes LX * EPI row elements (EPI = 4 with ``vec4``,
    an image summed in float, else 1) of LY * PY output rows from the row pass of
    LY * PY + kh - 1 rows, which it keeps in local memory; PY is halved where the local
    memory is short.  The shapes and the limits (FUSED_MAX_ROWS: up to there the one kernel
    is faster than the two passes, beyond them slower, as its row pass recomputes more rows
    per tile) are the fastest that the sweeps of shapes, heights and row passes on a GPU
    found (the scripts are in the history at ``192cc65``).
    """
    vec4 = vec4 and FUSED_VEC4
    epi = 4 if vec4 else 1
    kind = "double" if not vec4 else "byte" if src_itemsize == 1 else "float"
    if device.type != "gpu" or kh > FUSED_MAX_ROWS[kind]:
        return None
    budget = min(device.local_mem, 48 * 1024) - 1024
    lx, ly, py = FUSED_SHAPE4 if vec4 else FUSED_SHAPE
    while py >= 1 and (ly * py + kh - 1) * lx * epi * itemsize > budget:
        py //= 2
    if py < 1:
        return None
    defines = dict(LX=lx, LY=ly, PY=py, VEC4=int(vec4))
    if vec4:
        defines["ROW_EPI"] = 8 if (kw - 1) * channels <= FUSED_WIDE_ROW_HALO else 4
    return Geometry("fused", defines, channels=channels, lx=lx, ly=ly, py=py, epi=epi)


# -- tiers ----------------------------------------------------------------------------------

class Specialised:
    """The passes of a filter through its specialised build (convolution_cpu.cl, convolution_gpu.cl).

    Each pass method returns ``launch(queue, src, dst)`` with every other argument fixed (a
    :class:`~clkit._launch.kernel.Prepared` launch: the plan's kernels cost an enqueue a call).
    """

    def __init__(self, prg, geometry):
        self.prg, self.geometry = prg, geometry

    @staticmethod
    def device_src(src):
        return src

    def _prepared(self, name, f, rt, rows, args):
        g, l = self.geometry.sizes(f.shape[1], rows, name)
        return Prepared(self.prg, name, rt, args, g, l)

    def direct(self, f, rt, rowmap, mask, out_rows, cval):
        return self._prepared("convolve_2d", f, rt, out_rows,
                              (None, rowmap, mask, None, f.shape[1], out_rows, cval))

    def rows(self, f, rt, mask, n_rows, cval):
        return self._prepared("convolve_rows", f, rt, n_rows,
                              (None, mask, None, f.shape[1], n_rows, cval))

    def cols(self, f, rt, rowmap, mask, out_rows, cval):
        return self._prepared("convolve_cols", f, rt, out_rows,
                              (None, rowmap, mask, None, f.shape[1], out_rows, cval))

    def fused(self, f, rt, rowmap, row, col, out_rows, cval, cval_rows):
        """Both passes in one kernel (convolution_fused.cl), where the geometry chose it."""
        return self._prepared("convolve_fused", f, rt, out_rows,
                              (None, rowmap, row, col, None, f.shape[1], out_rows, cval,
                               cval_rows))


#: convolution_cpu.cl's MAX_UNROLL: its CPU variant unrolls the taps of 2-D masks up to this size,
#: which decides how it shares taps between its two accumulators.
UNROLL_TAPS = 256
#: convolution_generic.cl's CHUNK, vectors per work-item: on CPUs four of the CPU variant's vectors;
#: on GPUs one 16-byte vector, so that a work-group reads contiguous memory.
GENERIC_CHUNK = {"cpu": 4, "gpu": 1}


#: Builds without optimisation: the quick tier's (see clkit._build.tiers), and every build on the
#: simulator (see Filter._program)
UNOPTIMISED = ("-cl-opt-disable",)
_NO_ROWMAP = np.zeros(1, np.int32)
_CL_ACC = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}


def convert_defines(acc) -> dict:
    """The defines of to_acc's own build (convolution_generic.cl) for accumulator type ``acc``."""
    return {"CONVERT": 1, "ACC_T": _CL_ACC[acc]}


def prime_convert(device, acc, options, **defines) -> None:
    """to_acc's first launch, on a queue of its own (PoCL compiles a kernel's code then), in
    the build with these options and defines.

    Over 2**16 work-items: PoCL 3.1 compiles one version of a kernel for launches of fewer
    (which the next larger launch compiles again) and one that serves every size.
    """
    rt = runtime(device)
    queue = rt.new_queue()
    n = 1 << 17
    src = _transfer.upload(rt, np.zeros(n, np.uint8), queue)
    out = cl_array.empty(queue, n, acc)
    convert = program("convolution_generic", options=options, **defines)
    convert.to_acc(src, out, n, TYPE_CODES[src.dtype], global_size=n, local_size=64,
                   device=device, queue=queue)


class Generic:
    """The passes of a filter through the generic build (convolution_generic.cl).

    It runs the geometry of the specialised build it stands in for (run
    length, accumulator order), so that both give the same sums.
    """

    def __init__(self, f, geometry, rt, queue, border: int, work=None):
        device = rt.device
        self.cpu = geometry.variant == "cpu"
        self.acc = f.acc(device)
        vw = geometry.vw if self.cpu else 16 // self.acc.itemsize
        self.nvec = geometry.nvec if self.cpu else 1
        chunk = GENERIC_CHUNK["cpu" if self.cpu else "gpu"]
        self.chunk = chunk * vw  # row elements per work-item
        # One work-group shape per device, so that drivers which compile a kernel per shape at
        # its first launch (PoCL) do so once; 64 work-items, so that PoCL's fixed cost per
        # group stays small beside the group's work.
        self.local = (64, 1) if device.type == "gpu" else (8, 8)
        self.queue = queue
        self.device = device
        self.options = UNOPTIMISED if device.simulator else ()
        defines = dict(ACC_T=_CL_ACC[self.acc], GV=vw, CHUNK=chunk)
        self.prg = program("convolution_generic", options=self.options, **defines)
        # A call (work given) may run the build without optimisation until this one is ready;
        # then ``optimised`` is the build queue_builds queues
        self.optimised = None
        self._convert = program("convolution_generic", options=self.options,
                                **convert_defines(self.acc))
        # the quick tier's one build: the filter kernel and to_acc, without optimisation
        self._quick = dict(defines, WITH_CONVERT=1)
        self.rt = rt
        if work is not None and _tiers.use_quick(self.prg, rt, work=work):
            self.optimised = self.prg
            self.prg = program("convolution_generic", options=UNOPTIMISED, **self._quick)
            if self.acc not in self._quick_convert_ready() and \
                    not _build.available(self._convert.source, self._convert.options, device):
                # its code generated now, not at the first image of another dtype, which the
                # background builds could then hold up
                prime_convert(device, self.acc, UNOPTIMISED, **self._quick)
                self._quick_convert_ready().add(self.acc)
        self.border = border  # clkit.h's number of the border mode
        self.skip = int(f.skip_zero_taps)
        self.order = 1 if self.cpu else 0

    def _quick_convert_ready(self) -> set:
        """The accumulation types whose quick build has run its to_acc in this context."""
        return self.rt.held(prime_convert, set)

    def prebuild(self, optimised, prime, after=None) -> bool:
        """Queue for the background builds what later calls will want; whether any was queued.

        First ``optimised`` (the optimised generic program, which serves every variant; None
        for none), primed by ``prime()``: a large call waits for it, and on PoCL each build
        takes the helper about a second, so that built first it is ready a second sooner (the
        quick tier holds a to_acc of its own meanwhile).  Then to_acc, for images
        of other dtypes, so that the first such image does not wait for a compiler (a fraction
        of the time of the other).  ``after`` as for
        :func:`clkit._build.tiers.prebuild`.
        """
        queued = optimised is not None and _tiers.prebuild(optimised, self.rt, prime,
                                                        first=True, after=after)
        convert = functools.partial(prime_convert, self.device, self.acc, self.options,
                                    **convert_defines(self.acc))
        return _tiers.prebuild(self._convert, self.rt, after=after, first=True,
                               prime=convert) or queued

    def queue_builds(self, prime) -> _tiers.AfterLaunch | None:
        """Before a call's launch: :meth:`prebuild`, the optimised program being the one the
        quick tier stands in for, if it does; in this process made once the call's kernels
        have run, as PoCL would hold them up otherwise (the caller marks them with the
        returned object's ``launched(queue)``; None when nothing was queued).
        """
        after = _tiers.AfterLaunch()
        return after if self.prebuild(self.optimised, prime, after) else None

    def device_src(self, src):
        """A device image in the accumulation type (converted by to_acc)."""
        if src.dtype == self.acc:
            return src
        convert = self._convert
        if self.acc in self._quick_convert_ready() and \
                _tiers.pending(convert, self.rt):
            # to_acc's own build is still under way (built in the call, or launched first
            # here, it would hold the call up): the quick build's, ready here, serves
            convert = program("convolution_generic", options=UNOPTIMISED, **self._quick)
        out = cl_array.empty(self.queue, src.shape, self.acc)
        n = src.size
        convert.to_acc(src, out, n, TYPE_CODES[src.dtype], global_size=round_up(n, 64),
                       local_size=64, device=self.device, wait=False, queue=self.queue)
        return out

    def _pass(self, f, rowmap, mask, rows, cval, kh, kw, anchor_x, unroll, by_rowmap):
        """``launch(queue, src, dst)`` of one pass of the generic kernel."""
        kernel = self.prg.convolve_generic
        gx = -(-f.shape[1] * f.channels // self.chunk)
        sizes = dict(global_size=(round_up(gx, self.local[0]), round_up(rows, self.local[1])),
                     local_size=self.local, device=self.device, wait=False)
        fixed = (f.shape[1], rows, cval, kh, kw, anchor_x, f.channels, self.border, self.skip,
                 self.nvec, self.order, unroll, by_rowmap)

        def launch(queue, src, dst):
            kernel(src, rowmap, mask, dst, *fixed, queue=queue, **sizes)
        return launch

    def direct(self, f, rt, rowmap, mask, out_rows, cval):
        kh, kw = f.corr.shape
        return self._pass(f, rowmap, mask, out_rows, cval, kh, kw, f.anchor[1], UNROLL_TAPS, 1)

    def rows(self, f, rt, mask, n_rows, cval):
        # the row pass reads no rowmap; one int fills the argument
        return self._pass(f, _NO_ROWMAP, mask, n_rows, cval, 1, mask.size, f.anchor[1], 0, 0)

    def cols(self, f, rt, rowmap, mask, out_rows, cval):
        return self._pass(f, rowmap, mask, out_rows, cval, mask.size, 1, 0, mask.size, 1)
