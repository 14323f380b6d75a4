"""The two tiers of the convolution kernels: how a filter's passes are launched.

``Specialised`` runs the build of convolution_cpu.cl or convolution_gpu.cl made for one mask size, mode,
dtype and geometry; ``Generic`` runs convolution_generic.cl, one build per device
and accumulation type that takes all of those as arguments and reproduces the
specialised build's sums.  ``Filter.plan`` (in ``_filter``) picks one per
launch through :mod:`clkit._build.tiers`.
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
