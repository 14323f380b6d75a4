"""convolve: a 5x5 and a 9x9 full-rank mask, against scipy, OpenCV, torch and cupy."""

from __future__ import annotations

import importlib

import numpy as np

from ... import kernels
from .._case import autotune, register
from .._references import numpy_correlate, serial_correlate
from .._timing import Variant
from ._filter import FilterCase


class ConvolveCase(FilterCase):
    kernel = "convolve"
    torch_title = "torch conv2d"

    def __init__(self, sizes, k: int):
        super().__init__(sizes)
        self.k = k
        self.id = f"convolve_{k}x{k}"
        self.w, self.h = sizes.image
        self.count = self.w * self.h
        self.title = f"convolve {k}x{k} float32 {self.w}x{self.h}, reflect"

    def _inputs(self, rng):
        mask = rng.random((self.k, self.k)).astype(np.float32)  # full rank: the 2-D path
        mask /= mask.sum()
        return {"image": rng.random((self.h, self.w), dtype=np.float32), "mask": mask,
                "corr": np.ascontiguousarray(mask[::-1, ::-1])}

    def _serial(self):
        side = min(64, self.w, self.h)
        k = self.k
        image = self.data["image"]
        block = np.pad(image[:side + k, :side + k], ((0, k), (0, k)), mode="symmetric")
        rows = block[:side + k - 1, :side + k - 1].tolist()
        corr = self.data["corr"].tolist()
        return Variant("serial", "serial Python",
                       lambda: serial_correlate(rows, corr, side, side),
                       scale=self.count / side ** 2, note=f"{side}x{side} pixels")

    def _b_numpy(self):
        image, corr = self.data["image"], self.data["corr"]
        return Variant("numpy", "numpy (shifted multiply-adds)",
                       lambda: numpy_correlate(image, corr))

    def _b_scipy(self):
        ndimage = self._needs("scipy.ndimage", "scipy")
        image, mask = self.data["image"], self.data["mask"]
        out = np.empty_like(image)
        return Variant("scipy", "scipy.ndimage.convolve",
                       lambda: ndimage.convolve(image, mask, output=out, mode="reflect"))

    def _b_cv2(self):
        cv2 = self._needs("cv2", "OpenCV")
        image, corr = self.data["image"], self.data["corr"]
        out = np.empty_like(image)
        # filter2D correlates: the flipped mask gives scipy's convolution, BORDER_REFLECT its
        # "reflect" (d c b a | a b c d | d c b a)
        return Variant("cv2", "cv2.filter2D (BORDER_REFLECT)",
                       lambda: cv2.filter2D(image, -1, corr, dst=out,
                                            borderType=cv2.BORDER_REFLECT))

    def _torch_filter(self, torch, dev):
        f = importlib.import_module("torch.nn.functional")
        autotune(torch, dev)
        weight = torch.from_numpy(self.data["corr"])[None, None].to(dev)
        pad = self.k // 2
        return lambda x: f.conv2d(x, weight, padding=pad)

    def _cupy_filter(self, ndimage, image, out, cupy):
        mask = cupy.asarray(self.data["mask"])
        return ("cupyx.scipy.ndimage.convolve",
                lambda: ndimage.convolve(image, mask, output=out, mode="reflect"))

    def _library(self, image, **kw):
        return kernels.convolve(image, self.data["mask"], **kw)


register("convolve", lambda s: ConvolveCase(s, 5), lambda s: ConvolveCase(s, 9))
