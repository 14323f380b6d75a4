"""gaussian_blur: sigma 2 and a wide sigma 10 (81 taps, the rolled separable passes)."""

from __future__ import annotations

import importlib

import numpy as np

from ... import kernels
from .._case import autotune, register
from .._references import numpy_gaussian, serial_separable
from .._timing import Variant
from ._filter import FilterCase


class GaussianBlurCase(FilterCase):
    kernel = "gaussian_blur"
    torch_title = "torch 2x conv2d"

    def __init__(self, sizes, sigma: float = 2.0):
        super().__init__(sizes)
        self.sigma = sigma
        self.id = "gaussian_blur" if sigma == 2.0 else f"gaussian_blur_sigma{sigma:g}"
        self.w, self.h = sizes.image
        self.count = self.w * self.h
        self.taps = kernels.gaussian_taps(sigma)
        self.title = (f"gaussian_blur sigma {sigma:g} ({self.taps.size} taps) float32 "
                      f"{self.w}x{self.h}, reflect")

    def _inputs(self, rng):
        return {"image": rng.random((self.h, self.w), dtype=np.float32)}

    def _serial(self):
        side = min(64, self.w, self.h)
        r = self.taps.size // 2
        block = np.pad(self.data["image"][:side, :side], r, mode="symmetric")
        rows = block.tolist()
        taps = self.taps.tolist()
        return Variant("serial", "serial Python",
                       lambda: serial_separable(rows, taps, side, side),
                       scale=self.count / side ** 2, note=f"{side}x{side} pixels, 2 passes")

    def _b_numpy(self):
        image = self.data["image"]
        return Variant("numpy", "numpy (separable shifted adds)",
                       lambda: numpy_gaussian(image, self.taps))

    def _b_scipy(self):
        ndimage = self._needs("scipy.ndimage", "scipy")
        image = self.data["image"]
        out = np.empty_like(image)
        return Variant("scipy", "scipy.ndimage.gaussian_filter",
                       lambda: ndimage.gaussian_filter(image, self.sigma, output=out,
                                                       mode="reflect"))

    def _b_cv2(self):
        cv2 = self._needs("cv2", "OpenCV")
        image = self.data["image"]
        out = np.empty_like(image)
        k = self.taps.size
        return Variant("cv2", "cv2.GaussianBlur (BORDER_REFLECT)",
                       lambda: cv2.GaussianBlur(image, (k, k), self.sigma, dst=out,
                                                sigmaY=self.sigma,
                                                borderType=cv2.BORDER_REFLECT))

    def _torch_filter(self, torch, dev):
        f = importlib.import_module("torch.nn.functional")
        autotune(torch, dev)
        taps = torch.from_numpy(self.taps.astype(np.float32)).to(dev)
        r = self.taps.size // 2
        row, col = taps.view(1, 1, 1, -1), taps.view(1, 1, -1, 1)
        return lambda x: f.conv2d(f.conv2d(x, row, padding=(0, r)), col, padding=(r, 0))

    def _cupy_filter(self, ndimage, image, out, cupy):
        return ("cupyx.scipy.ndimage.gaussian_filter",
                lambda: ndimage.gaussian_filter(image, self.sigma, output=out, mode="reflect"))

    def _library(self, image, **kw):
        return kernels.gaussian_blur(image, self.sigma, **kw)


register("gaussian_blur", GaussianBlurCase, lambda s: GaussianBlurCase(s, 10.0))
