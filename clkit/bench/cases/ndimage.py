"""clkit.ndimage: scipy.ndimage's filters against scipy itself, OpenCV and cupyx.

One case per filter at the image size, with scipy's arguments; OpenCV where it has the same
filter with the same border (``cv2.blur``, ``cv2.Sobel``, ``cv2.erode``/``cv2.dilate``,
``cv2.medianBlur``, which replicates the edge: scipy's "nearest"), and
``cupyx.scipy.ndimage`` on a CUDA GPU with the same call on device arrays.
"""

from __future__ import annotations

import importlib

import numpy as np

from ... import ndimage
from ..._memory.array import empty
from ..._memory.transfer import to_device
from .._case import Case, register
from .._optional import Unavailable
from .._timing import Variant


class NdimageCase(Case):
    """``clkit.ndimage.<function>(image, *args, **kwargs)`` on a ``dtype`` image."""

    kernel = "ndimage"
    serial_key = None
    baseline_keys = ("scipy", "cv2", "cupy")
    reference = "scipy"

    def __init__(self, sizes, function, dtype, args=(), kwargs=None, label="", cv2_call=None):
        super().__init__(sizes)
        self.function, self.dtype = function, np.dtype(dtype)
        self.args, self.kwargs = tuple(args), dict(kwargs or {})
        self.cv2_call = cv2_call
        self.w, self.h = sizes.image
        self.count = self.w * self.h
        self.id = f"ndimage_{function}{label}_{self.dtype}"
        described = ", ".join([repr(a) for a in self.args] +
                              [f"{k}={v!r}" for k, v in self.kwargs.items()])
        self.title = f"ndimage.{function}({described}) {self.dtype} {self.w}x{self.h}"
        self.bytes_per_unit = 2 * self.dtype.itemsize
        self.bytes_note = f"{self.bytes_per_unit} B/pixel: read and written once"

    def _inputs(self, rng):
        if self.dtype == np.uint8:
            image = rng.integers(0, 256, (self.h, self.w), dtype=np.uint8)
        else:
            image = rng.random((self.h, self.w), dtype=np.float32).astype(self.dtype)
        return {"image": image}

    def _call(self, module, image, **extra):
        return getattr(module, self.function)(image, *self.args, **self.kwargs, **extra)

    def _b_scipy(self):
        scipy_ndimage = self._needs("scipy.ndimage", "scipy")
        image = self.data["image"]
        out = np.empty_like(image)
        return Variant("scipy", f"scipy.ndimage.{self.function}",
                       lambda: self._call(scipy_ndimage, image, output=out))

    def _b_cv2(self):
        if self.cv2_call is None:
            raise Unavailable("OpenCV has no such filter")
        cv2 = self._needs("cv2", "OpenCV")
        image = self.data["image"]
        title, call = self.cv2_call(cv2)
        return Variant("cv2", title, lambda: call(image))

    def _b_cupy(self):
        cupy = self._cupy()
        cx = importlib.import_module("cupyx.scipy.ndimage")
        image = cupy.asarray(self.data["image"])
        out = cupy.empty_like(image)
        return Variant("cupy", f"cupyx.scipy.ndimage.{self.function} (cuda)",
                       lambda: self._call(cx, image, output=out), clock="cuda",
                       sync=cupy.cuda.runtime.deviceSynchronize)

    def _kernel(self, device):
        src = to_device(self.data["image"], device=device)
        out = empty(src.shape, self.dtype, device=device)
        return lambda: self._call(ndimage, src, output=out)

    def _e2e(self, device):
        image = self.data["image"]
        return lambda: self._call(ndimage, image, device=device)


def _cv2(title, make):
    """An OpenCV baseline: ``make(cv2)`` gives the call on an image."""
    return lambda cv2: (title, make(cv2))


register(
    "ndimage",
    lambda s: NdimageCase(s, "gaussian_filter", np.float32, (2.0,), label="_sigma2"),
    lambda s: NdimageCase(s, "gaussian_filter", np.uint8, (2.0,), label="_sigma2"),
    lambda s: NdimageCase(
        s, "uniform_filter", np.float32, (5,), label="_5",
        cv2_call=_cv2("cv2.blur 5x5 (BORDER_REFLECT)",
                      lambda cv2: lambda x: cv2.blur(x, (5, 5), borderType=cv2.BORDER_REFLECT))),
    lambda s: NdimageCase(
        s, "sobel", np.float32, kwargs={"axis": 0},
        cv2_call=_cv2("cv2.Sobel dy (BORDER_REFLECT)",
                      lambda cv2: lambda x: cv2.Sobel(x, cv2.CV_32F, 0, 1, ksize=3,
                                                      borderType=cv2.BORDER_REFLECT))),
    lambda s: NdimageCase(s, "gaussian_gradient_magnitude", np.float32, (2.0,),
                          label="_sigma2"),
    lambda s: NdimageCase(
        s, "minimum_filter", np.uint8, (5,), label="_5",
        cv2_call=_cv2("cv2.erode 5x5 (BORDER_REFLECT)",
                      lambda cv2: lambda x: cv2.erode(x, np.ones((5, 5), np.uint8),
                                                      borderType=cv2.BORDER_REFLECT))),
    lambda s: NdimageCase(
        s, "minimum_filter", np.uint8, (31,), label="_31",
        cv2_call=_cv2("cv2.erode 31x31 (BORDER_REFLECT)",
                      lambda cv2: lambda x: cv2.erode(x, np.ones((31, 31), np.uint8),
                                                      borderType=cv2.BORDER_REFLECT))),
    lambda s: NdimageCase(
        s, "minimum_filter", np.float32, (9,), label="_9",
        cv2_call=_cv2("cv2.erode 9x9 (BORDER_REFLECT)",
                      lambda cv2: lambda x: cv2.erode(x, np.ones((9, 9), np.uint8),
                                                      borderType=cv2.BORDER_REFLECT))),
    lambda s: NdimageCase(
        s, "maximum_filter", np.uint8, (5,), label="_5",
        cv2_call=_cv2("cv2.dilate 5x5 (BORDER_REFLECT)",
                      lambda cv2: lambda x: cv2.dilate(x, np.ones((5, 5), np.uint8),
                                                       borderType=cv2.BORDER_REFLECT))),
    lambda s: NdimageCase(
        s, "median_filter", np.uint8, (), {"size": 5, "mode": "nearest"}, label="_5",
        cv2_call=_cv2("cv2.medianBlur 5 (replicated edge)",
                      lambda cv2: lambda x: cv2.medianBlur(x, 5))),
    lambda s: NdimageCase(
        s, "median_filter", np.uint8, (), {"size": 9, "mode": "nearest"}, label="_9",
        cv2_call=_cv2("cv2.medianBlur 9 (replicated edge)",
                      lambda cv2: lambda x: cv2.medianBlur(x, 9))),
    lambda s: NdimageCase(
        s, "median_filter", np.float32, (), {"size": 5, "mode": "nearest"}, label="_5",
        cv2_call=_cv2("cv2.medianBlur 5 (replicated edge)",
                      lambda cv2: lambda x: cv2.medianBlur(x, 5))),
)
