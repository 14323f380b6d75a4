"""grayscale: RGB to gray, uint8, against numpy, OpenCV and torch."""

from __future__ import annotations

import numpy as np

from ... import kernels
from ..._memory.array import empty
from ..._memory.transfer import to_device
from .._case import Case, host, register
from .._references import serial_gray
from .._timing import Variant


class GrayscaleCase(Case):
    id = kernel = "grayscale"
    baseline_keys = ("numpy", "cv2", "torch", "torch_e2e")
    bytes_per_unit = 4
    bytes_note = "4 B/pixel: 3 read, 1 written"
    WEIGHTS = kernels.gray_weights("bt601")

    def __init__(self, sizes):
        super().__init__(sizes)
        self.w, self.h = sizes.image
        self.count = self.w * self.h
        self.title = f"grayscale RGB->gray uint8 {self.w}x{self.h}"

    def _inputs(self, rng):
        return {"rgb": rng.integers(0, 256, (self.h, self.w, 3), dtype=np.uint8)}

    def _serial(self):
        n = min(self.count, 1 << 15)
        pixels = self.data["rgb"].reshape(-1, 3)[:n].tolist()
        return Variant("serial", "serial Python", lambda: serial_gray(pixels, *self.WEIGHTS),
                       scale=self.count / n, note=f"{n:,} pixels")

    def _b_numpy(self):
        rgb = self.data["rgb"]
        w = np.array(self.WEIGHTS, np.float32)
        return Variant("numpy", "numpy (float32 matmul)",
                       lambda: np.rint(rgb.astype(np.float32) @ w).astype(np.uint8))

    def _b_cv2(self):
        cv2 = self._needs("cv2", "OpenCV")
        rgb = self.data["rgb"]
        dst = np.empty((self.h, self.w), np.uint8)
        return Variant("cv2", "cv2.cvtColor",
                       lambda: cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY, dst=dst))

    def _gray_fn(self, torch, dev):
        w = torch.tensor(self.WEIGHTS, dtype=torch.float32, device=dev)
        return lambda t: torch.matmul(t.to(torch.float32), w).round_().to(torch.uint8)

    def _b_torch(self):
        torch, dev, clock, sync = self._torch()
        t = torch.from_numpy(self.data["rgb"]).to(dev)
        gray = self._gray_fn(torch, dev)
        return Variant("torch", f"torch RGB->gray ({dev})", lambda: gray(t), clock=clock,
                       sync=sync)

    def _b_torch_e2e(self):
        torch, dev, _, sync = self._cuda_only()
        rgb = self.data["rgb"]
        gray = self._gray_fn(torch, dev)
        return Variant("torch_e2e", "torch e2e (cuda, pageable)",
                       lambda: gray(torch.from_numpy(rgb).to(dev)).cpu().numpy(), sync=sync)

    def _kernel(self, device):
        src = to_device(self.data["rgb"], device=device)
        dst = empty((self.h, self.w), np.uint8, device=device)
        return lambda: kernels.grayscale(src, out=dst, device=device)

    def _e2e(self, device):
        rgb = self.data["rgb"]
        return lambda: kernels.grayscale(rgb, device=device)

    def check(self, got, want):
        got, want = host(got), host(want)
        if got.shape != want.shape:
            return f"shape {got.shape}, expected {want.shape}"
        err = int(np.max(np.abs(got.astype(np.int16) - want.astype(np.int16))))
        return None if err <= 1 else f"max error {err}"


register("grayscale", GrayscaleCase)
