"""mandelbrot: escape counts in float32, against a vectorised numpy version."""

from __future__ import annotations

import math

import numpy as np

from ... import kernels
from ..._memory.array import empty
from .._case import Case, host, register
from .._references import numpy_mandelbrot, serial_mandelbrot
from .._timing import Variant


class MandelbrotCase(Case):
    id = kernel = "mandelbrot"
    baseline_keys = ("numpy",)
    bytes_note = "compute-bound: 4 B/pixel written"

    def __init__(self, sizes):
        super().__init__(sizes)
        self.w, self.h = sizes.fractal
        self.max_iter = sizes.max_iter
        self.count = self.w * self.h
        self.title = f"mandelbrot {self.w}x{self.h}, {self.max_iter} iterations, float32"

    def _inputs(self, rng):
        return {}

    def _serial(self):
        # An even grid of samples over the whole window: the work per pixel varies by region.
        step = max(1, int(math.sqrt(self.count / 4096)))
        xs = np.linspace(-2.0, 1.0, self.w)[::step]
        ys = np.linspace(-1.5, 1.5, self.h)[::step]
        points = [(float(x), float(y)) for y in ys for x in xs]
        return Variant("serial", "serial Python",
                       lambda: serial_mandelbrot(points, self.max_iter),
                       scale=self.count / len(points),
                       note=f"{len(points):,} pixels (a grid of every {step} rows and columns)")

    def _b_numpy(self):
        return Variant("numpy", "numpy (vectorised, float32)",
                       lambda: numpy_mandelbrot(self.w, self.h, self.max_iter))

    def _kernel(self, device):
        out = empty((self.h, self.w), np.int32, device=device)
        return lambda: kernels.mandelbrot(self.w, self.h, max_iter=self.max_iter, out=out,
                                          device=device)

    def _e2e(self, device):
        return lambda: kernels.mandelbrot(self.w, self.h, max_iter=self.max_iter, device=device)

    def check(self, got, want):
        got, want = host(got), host(want)
        if got.shape != want.shape:
            return f"shape {got.shape}, expected {want.shape}"
        agree = float(np.mean(got == want))
        return None if agree >= 0.99 else f"{agree:.1%} of pixels agree"


register("mandelbrot", MandelbrotCase)
