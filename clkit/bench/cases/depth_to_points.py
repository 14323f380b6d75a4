"""depth_to_points: a uint16 depth map with 10% invalid pixels to a point cloud."""

from __future__ import annotations

import numpy as np

from ... import kernels
from ..._memory.transfer import to_device
from .._case import Case, host, register
from .._references import numpy_points, serial_points
from .._timing import Variant


class DepthCase(Case):
    id = kernel = "depth_to_points"
    baseline_keys = ("numpy",)
    bytes_per_unit = None
    SCALE = 1000.0

    def __init__(self, sizes):
        super().__init__(sizes)
        self.w, self.h = sizes.image
        self.count = self.w * self.h
        self.fx = self.fy = 0.8 * self.w
        self.cx, self.cy = (self.w - 1) / 2, (self.h - 1) / 2
        self.title = f"depth_to_points uint16 {self.w}x{self.h} (10% invalid)"
        self.bytes_note = "2 B/pixel read, 12 B/point written"

    @property
    def nbytes(self):
        return 2 * self.count + 12 * self.data["valid"]

    def extra(self):
        return {"valid_points": self.data["valid"]}

    def _inputs(self, rng):
        depth = rng.integers(300, 8000, (self.h, self.w), dtype=np.uint16)
        depth[rng.random((self.h, self.w)) < 0.1] = 0
        return {"depth": depth, "valid": int(np.count_nonzero(depth))}

    def _intrinsics(self):
        return self.fx, self.fy, self.cx, self.cy

    def _serial(self):
        n = min(self.count, 1 << 15)
        depth = self.data["depth"]
        pixels = [(i // self.w, i % self.w, int(d)) for i, d in enumerate(depth.ravel()[:n])]
        return Variant("serial", "serial Python",
                       lambda: serial_points(pixels, *self._intrinsics(), self.SCALE),
                       scale=self.count / n, note=f"{n:,} pixels")

    def _b_numpy(self):
        depth = self.data["depth"]
        return Variant("numpy", "numpy (vectorised)",
                       lambda: numpy_points(depth, *self._intrinsics(), self.SCALE))

    def _kernel(self, device):
        depth = to_device(self.data["depth"], device=device)
        return lambda: kernels.depth_to_points(depth, *self._intrinsics(),
                                               depth_scale=self.SCALE, device=device)

    def _e2e(self, device):
        depth = self.data["depth"]
        return lambda: kernels.depth_to_points(depth, *self._intrinsics(),
                                               depth_scale=self.SCALE, device=device)

    def check(self, got, want):
        got, want = host(got), host(want)
        if got.shape != want.shape:
            return f"shape {got.shape}, expected {want.shape}"
        ok = np.allclose(got, want, rtol=1e-5, atol=1e-5)
        return None if ok else "points differ from numpy"


register("depth_to_points", DepthCase)
