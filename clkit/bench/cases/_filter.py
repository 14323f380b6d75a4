"""What the convolve and gaussian_blur cases share: a float32 image, torch, cupy and clkit."""

from __future__ import annotations

import importlib

import numpy as np

from ..._memory.array import empty
from ..._memory.transfer import to_device
from .._case import Case, torch_how
from .._timing import Variant


class FilterCase(Case):
    """What convolve and gaussian_blur share: a float32 image, torch, cupy and clkit variants.

    A subclass gives ``_torch_filter(torch, dev)`` (a callable on an NCHW tensor),
    ``torch_title``, ``_cupy_filter(ndimage, image, out)`` and ``_library(image, **kw)``.
    """

    baseline_keys = ("numpy", "scipy", "cv2", "torch", "torch_e2e", "cupy")
    bytes_per_unit = 8
    bytes_note = "8 B/pixel: 4 read, 4 written"

    def _b_torch(self):
        torch, dev, clock, sync = self._torch()
        x = torch.from_numpy(self.data["image"])[None, None].to(dev)
        run = self._torch_filter(torch, dev)
        return Variant("torch", f"{self.torch_title} ({torch_how(dev)}, zero padding)",
                       lambda: run(x), clock=clock, sync=sync)

    def _b_torch_e2e(self):
        torch, dev, _, sync = self._cuda_only()
        image = self.data["image"]
        run = self._torch_filter(torch, dev)
        return Variant("torch_e2e", "torch e2e (cuda, pageable)",
                       lambda: run(torch.from_numpy(image)[None, None].to(dev))[0, 0]
                       .cpu().numpy(), sync=sync)

    def _b_cupy(self):
        cupy = self._cupy()
        ndimage = importlib.import_module("cupyx.scipy.ndimage")
        image = cupy.asarray(self.data["image"])
        out = cupy.empty_like(image)
        title, run = self._cupy_filter(ndimage, image, out, cupy)
        return Variant("cupy", f"{title} (cuda)", run, clock="cuda",
                       sync=cupy.cuda.runtime.deviceSynchronize)

    def _kernel(self, device):
        src = to_device(self.data["image"], device=device)
        dst = empty(src.shape, np.float32, device=device)
        return lambda: self._library(src, out=dst, device=device)

    def _e2e(self, device):
        image = self.data["image"]
        return lambda: self._library(image, device=device)
