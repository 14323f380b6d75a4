"""Benchmarks of the kernel library against serial Python, NumPy, OpenCV and torch.

``clkit bench`` and the pytest-benchmark suite in ``benchmarks/`` measure the
same cases, defined here.  A :class:`Case` is one kernel at one size (the
issue's sizes by default, ``small`` for quick runs, ``gpu`` for a big GPU);
it makes its inputs once and hands out :class:`Variant` s, one call each:

- ``serial``: plain Python loops over a subset of the data; the time is
  scaled by the element count to the full size, and says so;
- the baselines: ``numpy`` (a vectorised reference, also the reference
  result every clkit variant is checked against), ``scipy`` (scipy.ndimage),
  ``cv2``, ``torch`` (CUDA where available, else CPU) and, with CUDA,
  ``cupy`` and ``torch_e2e`` (numpy in and out through torch);
- per OpenCL device, ``clkit_kernel``: a library call on device arrays (with
  ``out=``), timed by the profiling events of the kernels it enqueued (see
  :func:`clkit._launch.recording`); and ``clkit_e2e``: the same call with
  numpy in and numpy out, transfers included, timed by the wall clock.

Every variant runs once to warm up (builds, caches, first touch of memory),
then up to ``repeat`` times within a time budget (at least 3 runs); the
median is reported.  Effective bandwidth counts the bytes a kernel must move
at least (stated per case: grayscale 4 B/pixel, convolve 8 B/pixel,
vector_add 12 B/element), in GB/s of 10^9 bytes.
"""

from __future__ import annotations

import datetime
import functools
import importlib
import math
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from . import kernels
from ._array import empty, to_device
from ._devices import Device
from ._launch import recording
from ._runtime import runtime

MIN_RUNS = 3
BUDGET_S = 3.0  # per variant, after the warm-up: fewer runs than asked when one is slow
SEED = 20241

# ---------------------------------------------------------------------------------------------
# sizes


@dataclass(frozen=True)
class Sizes:
    """The problem sizes of one run: images (width, height), vector length, fractal."""

    name: str
    image: tuple
    vector: int
    fractal: tuple
    max_iter: int = 256

    def describe(self) -> str:
        return (f"{self.name}: images {self.image[0]}x{self.image[1]}, vectors {self.vector:,} "
                f"elements, mandelbrot {self.fractal[0]}x{self.fractal[1]} with {self.max_iter} "
                "iterations")


PRESETS = {
    "small": Sizes("small", (640, 360), 1 << 20, (480, 270)),
    # The targets of the CPU table (issue 4).
    "default": Sizes("default", (3840, 2160), 1 << 24, (1920, 1080)),
    # The GPU table's sizes; the fractal stays at 4K so that the numpy baseline takes seconds.
    "gpu": Sizes("gpu", (7680, 4320), 1 << 26, (3840, 2160)),
}


def parse_size(text: str) -> Sizes:
    """A preset name (small, default, gpu) or ``WxH`` (images and fractal WxH, vectors W*H).

    Raises
    ------
    ValueError
        With a message naming the accepted forms.
    """
    key = text.strip().lower()
    if key in PRESETS:
        return PRESETS[key]
    w, sep, h = key.partition("x")
    if sep and w.isdigit() and h.isdigit() and int(w) > 0 and int(h) > 0:
        w, h = int(w), int(h)
        return Sizes(f"{w}x{h}", (w, h), w * h, (w, h))
    raise ValueError(f"size must be one of {', '.join(PRESETS)} or WxH (e.g. 1920x1080), "
                     f"not {text!r}")


# ---------------------------------------------------------------------------------------------
# optional packages


@functools.lru_cache(maxsize=None)
def optional(name: str):
    """The module ``name``, or None when it is not installed (or fails to import)."""
    try:
        return importlib.import_module(name)
    except Exception:  # a broken install (missing shared library, ...) counts as absent
        return None


@functools.lru_cache(maxsize=None)
def torch_device() -> str | None:
    """``"cuda"`` when torch sees a GPU, ``"cpu"`` with torch alone, None without torch."""
    torch = optional("torch")
    if torch is None:
        return None
    return "cuda" if torch.cuda.is_available() else "cpu"


@functools.lru_cache(maxsize=None)
def has_cupy() -> bool:
    cupy = optional("cupy")
    if cupy is None:
        return False
    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no driver or no GPU: cupy imports but cannot run
        return False


class Unavailable(Exception):
    """A variant that cannot run here (a package or a GPU is missing)."""


# ---------------------------------------------------------------------------------------------
# variants and timing


@dataclass
class Variant:
    """One way of computing a case, as one call.

    ``clock`` says how a call is timed: ``wall`` (perf_counter around the
    call, ``sync`` before and after it if given), ``cuda`` (CUDA events of
    torch or cupy around it), ``events`` (the sum of the device times of the
    clkit kernels it launched) or ``event`` (the call returns one OpenCL
    event, e.g. a copy, and its device time counts).
    """

    key: str
    label: str
    run: Callable[[], Any]
    clock: str = "wall"
    sync: Callable[[], Any] | None = None
    device: Device | None = None
    scale: float = 1.0  # serial: full size / subset size
    nbytes: float | None = None  # bytes counted for GB/s, when they differ from the case's
    note: str = ""

    def time_once(self) -> tuple[float, Any, float]:
        """One call: (milliseconds by this variant's clock, result, wall milliseconds)."""
        if self.sync is not None:
            self.sync()
        if self.clock == "cuda":
            return self._cuda()
        start = time.perf_counter()
        if self.clock == "events":
            with recording() as launches:
                result = self.run()
            self.sync()
            wall = (time.perf_counter() - start) * 1e3
            return sum(launch.kernel_ms for launch in launches), result, wall
        result = self.run()
        if self.sync is not None:
            self.sync()
        wall = (time.perf_counter() - start) * 1e3
        if self.clock == "event":
            result.wait()
            return (result.profile.end - result.profile.start) * 1e-6, None, wall
        return wall, result, wall

    def _cuda(self):
        if self.key.startswith("cupy"):
            cupy = optional("cupy")
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            wall0 = time.perf_counter()
            start.record()
            result = self.run()
            end.record()
            end.synchronize()
            ms = cupy.cuda.get_elapsed_time(start, end)
        else:
            torch = optional("torch")
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            wall0 = time.perf_counter()
            start.record()
            result = self.run()
            end.record()
            end.synchronize()
            ms = start.elapsed_time(end)
        return ms, result, (time.perf_counter() - wall0) * 1e3


@dataclass
class Timing:
    """The runs of one variant."""

    times_ms: list
    warmup_ms: float
    wall_ms: list = field(default_factory=list)
    result: Any = None

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms)


def measure(variant: Variant, repeat: int, budget_s: float = BUDGET_S) -> Timing:
    """Warm up once, then time ``repeat`` calls (fewer when they would exceed the budget)."""
    warm, result, _ = variant.time_once()
    estimate = warm
    if warm * repeat > budget_s * 1e3:
        # The first call may have compiled or tuned (OpenCL builds, cuDNN, cupy kernels):
        # judge the cost of a call by a second one.
        estimate = min(warm, variant.time_once()[0])
    runs = min(repeat, max(MIN_RUNS, int(budget_s * 1e3 / max(estimate, 1e-3))))
    timing = Timing([], warm, [], result)
    for _ in range(runs):
        ms, _, wall = variant.time_once()
        timing.times_ms.append(ms)
        timing.wall_ms.append(wall)
    return timing


def _host(x) -> np.ndarray:
    """A result as a numpy array (device arrays are copied home)."""
    if isinstance(x, tuple):
        return tuple(_host(v) for v in x)
    return x.get() if hasattr(x, "get") and not isinstance(x, np.ndarray) else np.asarray(x)


def _finisher(device: Device):
    queue = runtime(device).queue
    return queue.finish


# ---------------------------------------------------------------------------------------------
# pure Python loops, run on a subset of each case


def _serial_gray(pixels, wr, wg, wb):
    return [int(wr * r + wg * g + wb * b + 0.5) for r, g, b in pixels]


def _serial_correlate(rows, corr, out_h, out_w):
    """Correlate a block of rows (with its halo) with a mask; ``corr`` is a list of rows."""
    kh, kw = len(corr), len(corr[0])
    out = []
    for y in range(out_h):
        line = []
        for x in range(out_w):
            acc = 0.0
            for dy in range(kh):
                src = rows[y + dy]
                taps = corr[dy]
                for dx in range(kw):
                    acc += taps[dx] * src[x + dx]
            line.append(acc)
        out.append(line)
    return out


def _serial_separable(rows, taps, out_h, out_w):
    """A separable filter, rows then columns, on a block of rows with its halo all round."""
    k = len(taps)
    tmp = []
    for src in rows:
        tmp.append([sum(taps[i] * src[x + i] for i in range(k)) for x in range(out_w)])
    return [[sum(taps[i] * tmp[y + i][x] for i in range(k)) for x in range(out_w)]
            for y in range(out_h)]


def _serial_add(a, b):
    return [x + y for x, y in zip(a, b)]


def _serial_mandelbrot(points, max_iter):
    counts = []
    for cr, ci in points:
        zr = zi = 0.0
        n = 0
        while n < max_iter:
            zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
            n += 1
            if zr * zr + zi * zi > 4.0:
                break
        counts.append(n)
    return counts


def _serial_points(pixels, fx, fy, cx, cy, scale):
    out = []
    for v, u, d in pixels:
        z = d / scale
        if z != 0.0 and math.isfinite(z):
            out.append(((u - cx) * z / fx, (v - cy) * z / fy, z))
    return out


# ---------------------------------------------------------------------------------------------
# vectorised numpy references


def numpy_correlate(image: np.ndarray, corr: np.ndarray) -> np.ndarray:
    """scipy.ndimage.correlate(mode="reflect") as shifted multiply-adds (numpy 'symmetric')."""
    kh, kw = corr.shape
    h, w = image.shape
    pad = np.pad(image, ((kh // 2, kh - 1 - kh // 2), (kw // 2, kw - 1 - kw // 2)),
                 mode="symmetric")
    out = np.zeros_like(image)
    tmp = np.empty_like(image)
    for dy in range(kh):
        for dx in range(kw):
            np.multiply(pad[dy:dy + h, dx:dx + w], corr[dy, dx], out=tmp)
            out += tmp
    return out


def gaussian_taps(sigma: float, truncate: float = 4.0) -> np.ndarray:
    """scipy.ndimage's 1-D Gaussian: radius ``int(truncate * sigma + 0.5)``, normalised."""
    radius = int(truncate * sigma + 0.5)
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    phi = np.exp(-0.5 / sigma ** 2 * x ** 2)
    return phi / phi.sum()


def numpy_gaussian(image: np.ndarray, taps: np.ndarray) -> np.ndarray:
    r = taps.size // 2
    t = taps.astype(image.dtype)
    pad = np.pad(image, r, mode="symmetric")
    h, w = image.shape
    rows = np.zeros((h + 2 * r, w), image.dtype)
    for i, wt in enumerate(t):
        rows += wt * pad[:, i:i + w]
    out = np.zeros_like(image)
    for i, wt in enumerate(t):
        out += wt * rows[i:i + h]
    return out


def numpy_mandelbrot(width, height, max_iter, window=(-2.0, 1.0, -1.5, 1.5)):
    """Escape counts in float32, compacting the still-running pixels as they escape."""
    xmin, xmax, ymin, ymax = window
    f = np.float32
    cr = np.tile(np.linspace(xmin, xmax, width, dtype=f), height)
    ci = np.repeat(np.linspace(ymin, ymax, height, dtype=f), width)
    counts = np.full(width * height, max_iter, np.int32)
    idx = np.arange(width * height)
    zr = np.zeros_like(cr)
    zi = np.zeros_like(ci)
    two = f(2)
    for k in range(1, max_iter + 1):
        zr, zi = zr * zr - zi * zi + cr, two * zr * zi + ci
        out = zr * zr + zi * zi > 4
        if out.any():
            counts[idx[out]] = k
            keep = ~out
            idx, zr, zi, cr, ci = idx[keep], zr[keep], zi[keep], cr[keep], ci[keep]
            if idx.size == 0:
                break
    return counts.reshape(height, width)


def numpy_points(depth, fx, fy, cx, cy, scale):
    h, w = depth.shape
    z = depth.astype(np.float32) / np.float32(scale)
    u = np.arange(w, dtype=np.float32)[None, :]
    v = np.arange(h, dtype=np.float32)[:, None]
    keep = (z != 0) & np.isfinite(z)
    x = (u - np.float32(cx)) * z / np.float32(fx)
    y = (v - np.float32(cy)) * z / np.float32(fy)
    return np.stack([x[keep], y[keep], z[keep]], axis=1)


# ---------------------------------------------------------------------------------------------
# cases


def _autotune(torch, dev):
    """Let cuDNN pick its fastest convolution for the shape (during the warm-up), as
    benchmarks of torch do; it does not change results beyond rounding."""
    if dev == "cuda":
        torch.backends.cudnn.benchmark = True


def _torch_how(dev):
    return "cuda, cudnn.benchmark" if dev == "cuda" else dev


class Case:
    """One kernel at one size, with its baselines.

    Subclasses set the attributes and define ``_inputs``, ``_serial``,
    ``_kernel(device)``, ``_e2e(device)`` and one ``_b_<key>()`` per baseline
    key listed in ``baseline_keys``.
    """

    id = ""
    kernel = ""
    baseline_keys: tuple = ()
    reference = "numpy"
    unit = "pixel"
    bytes_per_unit: float | None = None
    bytes_note = ""

    def __init__(self, sizes: Sizes):
        self.sizes = sizes
        self._data = None

    # -- description
    title = ""
    count = 0

    @property
    def nbytes(self) -> float | None:
        return None if self.bytes_per_unit is None else self.bytes_per_unit * self.count

    def describe(self) -> dict:
        return {"id": self.id, "kernel": self.kernel, "title": self.title, "unit": self.unit,
                "count": self.count, "bytes": self.nbytes, "bytes_note": self.bytes_note}

    # -- inputs, made once
    @property
    def data(self) -> dict:
        if self._data is None:
            self._data = self._inputs(np.random.default_rng(SEED))
        return self._data

    def release(self):
        """Drop the inputs (and whatever the variants keep) to free memory."""
        self._data = None

    # -- variants
    def serial(self) -> Variant:
        return self._serial()

    def baseline(self, key: str) -> Variant:
        """The baseline ``key``; :class:`Unavailable` says why it cannot run here."""
        if key not in self.baseline_keys:
            raise Unavailable(f"{self.id} has no baseline {key!r}")
        return getattr(self, f"_b_{key}")()

    def clkit_kernel(self, device: Device) -> Variant:
        run = self._kernel(device)
        return Variant("clkit_kernel", "clkit kernel", run, clock="events",
                       sync=_finisher(device), device=device)

    def clkit_e2e(self, device: Device) -> Variant:
        return Variant("clkit_e2e", "clkit e2e", self._e2e(device), device=device)

    @property
    def variant_keys(self) -> tuple:
        """Every variant's key, in table order (the clkit ones once per device)."""
        return ("serial",) + self.baseline_keys + ("clkit_kernel", "clkit_e2e")

    def variant(self, key: str, device: Device | None = None) -> Variant:
        """The variant ``key`` (on ``device`` for the clkit ones); or :class:`Unavailable`."""
        if key == "serial":
            return self.serial()
        if key == "clkit_kernel":
            return self.clkit_kernel(device)
        if key == "clkit_e2e":
            return self.clkit_e2e(device)
        return self.baseline(key)

    def variants(self, devices) -> list:
        """Every variant that can run here, in table order; unavailable ones as (key, reason)."""
        out = [self.serial()]
        for key in self.baseline_keys:
            try:
                out.append(self.baseline(key))
            except Unavailable as exc:
                out.append((key, str(exc)))
        for dev in devices:
            out.append(self.clkit_kernel(dev))
            out.append(self.clkit_e2e(dev))
        return out

    def check(self, got, want) -> str | None:
        """None when ``got`` matches the reference ``want``, else what differs."""
        got, want = _host(got), _host(want)
        if got.shape != want.shape:
            return f"shape {got.shape}, expected {want.shape}"
        scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
        err = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
        return None if err <= 1e-4 * scale else f"max error {err:.3g}"

    # -- helpers for subclasses
    def _needs(self, module: str, what: str):
        mod = optional(module)
        if mod is None:
            raise Unavailable(f"{what} not installed")
        return mod

    def _torch(self):
        torch = self._needs("torch", "torch")
        dev = torch_device()
        sync = torch.cuda.synchronize if dev == "cuda" else None
        return torch, dev, ("cuda" if dev == "cuda" else "wall"), sync

    def _cuda_only(self):
        if torch_device() != "cuda":
            raise Unavailable("needs torch with CUDA")
        return self._torch()

    def _cupy(self):
        if not has_cupy():
            raise Unavailable("needs cupy with a CUDA GPU")
        return optional("cupy")


class GrayscaleCase(Case):
    id = kernel = "grayscale"
    baseline_keys = ("numpy", "cv2", "torch", "torch_e2e")
    bytes_per_unit = 4
    bytes_note = "4 B/pixel: 3 read, 1 written"
    WEIGHTS = (0.299, 0.587, 0.114)

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
        return Variant("serial", "serial Python", lambda: _serial_gray(pixels, *self.WEIGHTS),
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
        got, want = _host(got), _host(want)
        if got.shape != want.shape:
            return f"shape {got.shape}, expected {want.shape}"
        err = int(np.max(np.abs(got.astype(np.int16) - want.astype(np.int16))))
        return None if err <= 1 else f"max error {err}"


class _FilterCase(Case):
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
        return Variant("torch", f"{self.torch_title} ({_torch_how(dev)}, zero padding)",
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


class ConvolveCase(_FilterCase):
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
                       lambda: _serial_correlate(rows, corr, side, side),
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
        _autotune(torch, dev)
        weight = torch.from_numpy(self.data["corr"])[None, None].to(dev)
        pad = self.k // 2
        return lambda x: f.conv2d(x, weight, padding=pad)

    def _cupy_filter(self, ndimage, image, out, cupy):
        mask = cupy.asarray(self.data["mask"])
        return ("cupyx.scipy.ndimage.convolve",
                lambda: ndimage.convolve(image, mask, output=out, mode="reflect"))

    def _library(self, image, **kw):
        return kernels.convolve(image, self.data["mask"], **kw)


class GaussianBlurCase(_FilterCase):
    kernel = "gaussian_blur"
    torch_title = "torch 2x conv2d"

    def __init__(self, sizes, sigma: float = 2.0):
        super().__init__(sizes)
        self.sigma = sigma
        self.id = "gaussian_blur" if sigma == 2.0 else f"gaussian_blur_sigma{sigma:g}"
        self.w, self.h = sizes.image
        self.count = self.w * self.h
        self.taps = gaussian_taps(sigma)
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
                       lambda: _serial_separable(rows, taps, side, side),
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
        _autotune(torch, dev)
        taps = torch.from_numpy(self.taps.astype(np.float32)).to(dev)
        r = self.taps.size // 2
        row, col = taps.view(1, 1, 1, -1), taps.view(1, 1, -1, 1)
        return lambda x: f.conv2d(f.conv2d(x, row, padding=(0, r)), col, padding=(r, 0))

    def _cupy_filter(self, ndimage, image, out, cupy):
        return ("cupyx.scipy.ndimage.gaussian_filter",
                lambda: ndimage.gaussian_filter(image, self.sigma, output=out, mode="reflect"))

    def _library(self, image, **kw):
        return kernels.gaussian_blur(image, self.sigma, **kw)


class VectorAddCase(Case):
    id = kernel = "vector_add"
    baseline_keys = ("numpy", "torch", "torch_e2e", "cupy")
    unit = "element"
    bytes_per_unit = 12
    bytes_note = "12 B/element: 8 read, 4 written"

    def __init__(self, sizes):
        super().__init__(sizes)
        self.count = sizes.vector
        self.title = f"vector_add float32 {self.count:,} elements (2^{math.log2(self.count):g})"

    def _inputs(self, rng):
        return {"a": rng.random(self.count, dtype=np.float32),
                "b": rng.random(self.count, dtype=np.float32)}

    def _serial(self):
        n = min(self.count, 1 << 18)
        a, b = self.data["a"][:n].tolist(), self.data["b"][:n].tolist()
        return Variant("serial", "serial Python", lambda: _serial_add(a, b),
                       scale=self.count / n, note=f"{n:,} elements")

    def _b_numpy(self):
        a, b = self.data["a"], self.data["b"]
        out = np.empty_like(a)
        return Variant("numpy", "numpy add(out=)", lambda: np.add(a, b, out=out))

    def _b_torch(self):
        torch, dev, clock, sync = self._torch()
        a, b = (torch.from_numpy(self.data[k]).to(dev) for k in "ab")
        out = torch.empty_like(a)
        return Variant("torch", f"torch.add(out=) ({dev})", lambda: torch.add(a, b, out=out),
                       clock=clock, sync=sync)

    def _b_torch_e2e(self):
        torch, dev, _, sync = self._cuda_only()
        a, b = self.data["a"], self.data["b"]
        return Variant("torch_e2e", "torch e2e (cuda, pageable)",
                       lambda: torch.add(torch.from_numpy(a).to(dev), torch.from_numpy(b).to(dev))
                       .cpu().numpy(), sync=sync)

    def _b_cupy(self):
        cupy = self._cupy()
        a, b = cupy.asarray(self.data["a"]), cupy.asarray(self.data["b"])
        out = cupy.empty_like(a)
        return Variant("cupy", "cupy.add(out=) (cuda)", lambda: cupy.add(a, b, out=out),
                       clock="cuda", sync=cupy.cuda.runtime.deviceSynchronize)

    def _kernel(self, device):
        a, b = (to_device(self.data[k], device=device) for k in "ab")
        out = empty(a.shape, np.float32, device=device)
        return lambda: kernels.vector_add(a, b, out=out, device=device)

    def _e2e(self, device):
        a, b = self.data["a"], self.data["b"]
        return lambda: kernels.vector_add(a, b, device=device)

    def check(self, got, want):
        got, want = _host(got), _host(want)
        return None if np.array_equal(got, want) else "differs from numpy"


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
                       lambda: _serial_mandelbrot(points, self.max_iter),
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
        got, want = _host(got), _host(want)
        if got.shape != want.shape:
            return f"shape {got.shape}, expected {want.shape}"
        agree = float(np.mean(got == want))
        return None if agree >= 0.99 else f"{agree:.1%} of pixels agree"


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
                       lambda: _serial_points(pixels, *self._intrinsics(), self.SCALE),
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
        got, want = _host(got), _host(want)
        if got.shape != want.shape:
            return f"shape {got.shape}, expected {want.shape}"
        ok = np.allclose(got, want, rtol=1e-5, atol=1e-5)
        return None if ok else "points differ from numpy"


class TransfersCase(Case):
    """Copies between host and device, and within a device: what bounds numpy in/out calls.

    H2D and D2H count the bytes once; a copy within one memory counts them
    twice (read and write), as kernel bandwidth does.
    """

    id = kernel = "transfers"
    baseline_keys = ("numpy_copy", "torch_copy", "torch_h2d_pinned", "torch_d2h_pinned",
                     "torch_h2d_pageable", "torch_d2h_pageable")
    reference = None
    unit = "element"
    bytes_per_unit = 4
    bytes_note = "float32; H2D/D2H count bytes once, copies within a memory twice"

    def __init__(self, sizes):
        super().__init__(sizes)
        self.count = sizes.vector
        self.title = f"transfers of {self.count * 4 / 2**20:,.0f} MiB (float32 x {self.count:,})"

    def _inputs(self, rng):
        return {"host": rng.random(self.count, dtype=np.float32)}

    CLKIT_KEYS = ("clkit_h2d", "clkit_d2h", "clkit_copy", "opencl_h2d_pinned",
                  "opencl_d2h_pinned")

    def _serial(self):
        raise Unavailable("no serial variant")

    @property
    def variant_keys(self):
        return self.baseline_keys + self.CLKIT_KEYS

    def variant(self, key, device=None):
        if key in self.CLKIT_KEYS:
            return next(v for v in self.clkit_variants(device) if v.key == key)
        return self.baseline(key)

    def variants(self, devices):
        out = []
        for key in self.baseline_keys:
            try:
                out.append(self.baseline(key))
            except Unavailable as exc:
                out.append((key, str(exc)))
        for dev in devices:
            out.extend(self.clkit_variants(dev))
        return out

    def _b_numpy_copy(self):
        src = self.data["host"]
        dst = np.empty_like(src)
        return Variant("numpy_copy", "numpy copyto (host memory)", lambda: np.copyto(dst, src),
                       nbytes=2 * src.nbytes)

    def _b_torch_copy(self):
        torch, dev, clock, sync = self._torch()
        src = torch.from_numpy(self.data["host"]).to(dev)
        dst = torch.empty_like(src)
        return Variant("torch_copy", f"torch copy_ within {dev}", lambda: dst.copy_(src),
                       clock=clock, sync=sync, nbytes=2 * src.numel() * 4)

    def _torch_h2d(self, pinned):
        torch, dev, clock, sync = self._cuda_only()
        src = torch.from_numpy(self.data["host"])
        if pinned:
            src = src.pin_memory()
        dst = torch.empty(src.shape, dtype=src.dtype, device=dev)
        kind = "pinned" if pinned else "pageable"
        return Variant(f"torch_h2d_{kind}", f"torch H2D {kind}",
                       lambda: dst.copy_(src, non_blocking=pinned), clock=clock, sync=sync)

    def _torch_d2h(self, pinned):
        torch, dev, clock, sync = self._cuda_only()
        src = torch.from_numpy(self.data["host"]).to(dev)
        dst = torch.empty(src.shape, dtype=src.dtype, pin_memory=pinned)
        kind = "pinned" if pinned else "pageable"
        return Variant(f"torch_d2h_{kind}", f"torch D2H {kind}",
                       lambda: dst.copy_(src, non_blocking=pinned), clock=clock, sync=sync)

    def _b_torch_h2d_pinned(self):
        return self._torch_h2d(True)

    def _b_torch_d2h_pinned(self):
        return self._torch_d2h(True)

    def _b_torch_h2d_pageable(self):
        return self._torch_h2d(False)

    def _b_torch_d2h_pageable(self):
        return self._torch_d2h(False)

    def clkit_variants(self, device) -> list:
        """clkit's own transfers on one device: to_device, get, a device copy, and raw pinned."""
        import pyopencl as cl
        rt = runtime(device)
        host = self.data["host"]
        back = np.empty_like(host)
        dev_a = to_device(host, device=device)
        dev_b = empty(host.shape, host.dtype, device=device)
        sync = rt.queue.finish
        out = [
            Variant("clkit_h2d", "clkit .set() H2D", lambda: dev_b.set(host),
                    sync=sync, device=device),
            Variant("clkit_d2h", "clkit .get() D2H", lambda: dev_a.get(ary=back),
                    sync=sync, device=device),
            Variant("clkit_copy", "OpenCL copy within device (event)",
                    lambda: cl.enqueue_copy(rt.queue, dev_b.base_data, dev_a.base_data),
                    clock="event", sync=sync, device=device, nbytes=2 * host.nbytes),
        ]
        # Raw OpenCL through a pinned (ALLOC_HOST_PTR, mapped) host buffer: what the hardware
        # gives the library's staging path.
        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR
        pinned_buf = cl.Buffer(rt.context, flags, host.nbytes)
        pinned, _ = cl.enqueue_map_buffer(rt.queue, pinned_buf,
                                          cl.map_flags.READ | cl.map_flags.WRITE, 0,
                                          host.shape, host.dtype)
        pinned[...] = host
        keep = (pinned_buf, pinned)  # the buffer stays mapped while the variants live

        def h2d():
            return cl.enqueue_copy(rt.queue, dev_b.base_data, keep[1], is_blocking=False)

        def d2h():
            return cl.enqueue_copy(rt.queue, keep[1], dev_a.base_data, is_blocking=False)

        out.append(Variant("opencl_h2d_pinned", "OpenCL H2D pinned (event)", h2d,
                           clock="event", sync=sync, device=device))
        out.append(Variant("opencl_d2h_pinned", "OpenCL D2H pinned (event)", d2h,
                           clock="event", sync=sync, device=device))
        return out

    def clkit_kernel(self, device):
        raise Unavailable("transfers have no kernel")

    def clkit_e2e(self, device):
        raise Unavailable("transfers have no end-to-end call")


CASE_TYPES = {
    "grayscale": [GrayscaleCase],
    "convolve": [lambda s: ConvolveCase(s, 5), lambda s: ConvolveCase(s, 9)],
    # sigma 2 is the case; sigma 10 (81 taps) is a wide blur, its passes rolled on CPUs
    "gaussian_blur": [GaussianBlurCase, lambda s: GaussianBlurCase(s, 10.0)],
    "vector_add": [VectorAddCase],
    "mandelbrot": [MandelbrotCase],
    "depth_to_points": [DepthCase],
    "transfers": [TransfersCase],
}
ALIASES = {"gray": "grayscale", "blur": "gaussian_blur", "points": "depth_to_points",
           "add": "vector_add"}
CASE_IDS = ("grayscale", "convolve_5x5", "convolve_9x9", "gaussian_blur",
            "gaussian_blur_sigma10", "vector_add", "mandelbrot", "depth_to_points", "transfers")


def make_cases(sizes: Sizes, names=None) -> list[Case]:
    """The cases named (kernel names, case ids or aliases; all when empty), in table order.

    Raises
    ------
    ValueError
        For a name that is none of them.
    """
    every = [make(sizes) for makers in CASE_TYPES.values() for make in makers]
    if not names:
        return every
    wanted = set()
    for name in names:
        key = ALIASES.get(name.lower(), name.lower())
        ids = [c.id for c in every if c.kernel == key or c.id == key]
        if not ids:
            choices = ", ".join(list(CASE_TYPES) + [i for i in CASE_IDS if i not in CASE_TYPES])
            raise ValueError(f"unknown kernel {name!r}; choose from {choices}")
        wanted.update(ids)
    return [c for c in every if c.id in wanted]


# ---------------------------------------------------------------------------------------------
# running a whole benchmark


def _device_record(d: Device) -> dict:
    return {"id": d.id, "name": d.name, "platform": d.platform,
            "short_platform": d.short_platform, "type": d.type,
            "version": d.version, "driver": d.driver, "compute_units": d.compute_units,
            "global_mem": d.global_mem, "max_alloc": d.max_alloc,
            "unified_memory": d.unified_memory}


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info(devices) -> dict:
    """Where and with what the numbers were measured."""
    from . import __version__
    versions = {"python": platform.python_version(), "clkit": __version__}
    for name in ("numpy", "scipy", "cv2", "torch", "cupy", "pyopencl", "matplotlib"):
        mod = optional(name)
        versions[name] = getattr(mod, "__version__", None) if mod is not None else None
    info = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu": cpu_model(), "cores": os.cpu_count(), "platform": platform.platform(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "versions": versions,
        "devices": [_device_record(d) for d in devices],
        "torch_device": torch_device(),
    }
    if torch_device() == "cuda":
        info["cuda_device"] = optional("torch").cuda.get_device_name(0)
    return info


def result_record(case: Case, variant: Variant, timing: Timing | None, error: str | None,
                  check: str | None) -> dict:
    rec = {"key": variant.key, "label": variant.label, "clock": variant.clock,
           "device": variant.device.id if variant.device is not None else None,
           "note": variant.note, "scale": variant.scale, "error": error, "check": check}
    if timing is not None:
        median = timing.median_ms * variant.scale
        nbytes = variant.nbytes if variant.nbytes is not None else case.nbytes
        rec.update({
            "median_ms": median, "runs": len(timing.times_ms),
            "times_ms": [t * variant.scale for t in timing.times_ms],
            "warmup_ms": timing.warmup_ms * variant.scale,
            "bytes": nbytes, "gbps": nbytes / (median * 1e6) if nbytes and median > 0 else None,
        })
        if variant.clock in ("events", "event", "cuda"):
            rec["wall_median_ms"] = statistics.median(timing.wall_ms)
    return rec


def run_case(case: Case, devices, repeat: int, budget_s: float = BUDGET_S,
             progress: Callable[[str], None] | None = None) -> dict:
    """Measure every variant of one case; returns its record (the JSON's ``cases`` entry)."""
    record = case.describe()
    record["results"] = []
    record["unavailable"] = {}
    reference = None
    try:
        variants = case.variants(devices)
    except Unavailable as exc:  # pragma: no cover - every case has some variant
        record["unavailable"]["all"] = str(exc)
        return record
    for variant in variants:
        if isinstance(variant, tuple):
            record["unavailable"][variant[0]] = variant[1]
            continue
        if progress:
            progress(f"{case.id}: {variant.label}")
        timing = error = check = None
        try:
            timing = measure(variant, repeat, budget_s)
        except Exception as exc:  # reported in the table; the other variants still run
            error = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        if timing is not None and variant.key == case.reference:
            reference = timing.result
        elif (timing is not None and reference is not None
              and variant.key in ("clkit_kernel", "clkit_e2e")):
            try:
                problem = case.check(timing.result, reference)
            except Exception as exc:  # a result that cannot even be compared is wrong
                problem = f"{type(exc).__name__}: {exc}"
            check = "ok" if problem is None else f"MISMATCH: {problem}"
        if timing is not None:
            timing.result = None
        record["results"].append(result_record(case, variant, timing, error, check))
    record["bytes"] = case.nbytes
    if case.id == "depth_to_points":
        record["valid_points"] = case.data["valid"]
    case.release()
    return record


def run(cases, devices, sizes: Sizes, repeat: int, budget_s: float = BUDGET_S,
        on_case: Callable[[dict], None] | None = None,
        progress: Callable[[str], None] | None = None) -> dict:
    """Measure ``cases`` on ``devices``; returns the whole report (what ``--json`` writes)."""
    report = {"machine": machine_info(devices), "size": sizes.name, "sizes": {
        "image": list(sizes.image), "vector": sizes.vector, "fractal": list(sizes.fractal),
        "max_iter": sizes.max_iter}, "repeat": repeat, "budget_s": budget_s,
        "argv": sys.argv, "cases": []}
    for case in cases:
        record = run_case(case, devices, repeat, budget_s, progress)
        report["cases"].append(record)
        if on_case:
            on_case(record)
    report["machine"]["load_average_after"] = \
        list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    report["targets"] = evaluate_targets(report)
    return report


# ---------------------------------------------------------------------------------------------
# the targets


def _median_of(case: dict | None, key: str, device: str | None = None) -> dict | None:
    if case is None:
        return None
    for r in case["results"]:
        if r["key"] == key and (device is None or r["device"] == device) and \
                r.get("median_ms") is not None:
            return r
    return None


def evaluate_targets(report: dict) -> list[dict]:
    """The targets of issue 4 for each measured device, from a report's medians.

    Each entry: device, case, target (text), measured (text), value, limit,
    met (True/False, or None when a baseline needed is missing).
    """
    cases = {c["id"]: c for c in report["cases"]}
    out = []
    for dev in report["machine"]["devices"]:
        did, dtype = dev["id"], dev["type"]

        def add(case_id, target, value, limit, higher_is_better, what):
            if case_id not in cases:
                return  # not asked for in this run
            met = None if value is None else (value >= limit if higher_is_better
                                              else value <= limit)
            out.append({"device": did, "device_type": dtype, "case": case_id, "target": target,
                        "value": value, "limit": limit,
                        "measured": "not measured" if value is None else what.format(value),
                        "met": met})

        def ms(case_id, key, device=None):
            r = _median_of(cases.get(case_id), key, device)
            return None if r is None else r["median_ms"]

        def gbps(case_id, key, device=None):
            r = _median_of(cases.get(case_id), key, device)
            return None if r is None else r.get("gbps")

        def ratio(a, b):
            return None if a is None or b is None or b == 0 else a / b

        kernel = lambda case_id: ms(case_id, "clkit_kernel", did)  # noqa: E731
        e2e = lambda case_id: ms(case_id, "clkit_e2e", did)  # noqa: E731
        if dtype == "cpu":
            add("grayscale", "kernel <= 2.0x cv2.cvtColor time",
                ratio(kernel("grayscale"), ms("grayscale", "cv2")), 2.0, False,
                "kernel/cv2 = {:.2f}x")
            add("grayscale", ">= 100x serial Python",
                ratio(ms("grayscale", "serial"), kernel("grayscale")), 100, True,
                "serial/kernel = {:,.0f}x")
            add("convolve_5x5", "kernel <= 1.5x cv2.filter2D (BORDER_REFLECT)",
                ratio(kernel("convolve_5x5"), ms("convolve_5x5", "cv2")), 1.5, False,
                "kernel/cv2 = {:.2f}x")
            add("convolve_5x5", ">= 10x scipy.ndimage.convolve",
                ratio(ms("convolve_5x5", "scipy"), kernel("convolve_5x5")), 10, True,
                "scipy/kernel = {:.1f}x")
            add("gaussian_blur", "kernel <= 1.5x cv2.GaussianBlur",
                ratio(kernel("gaussian_blur"), ms("gaussian_blur", "cv2")), 1.5, False,
                "kernel/cv2 = {:.2f}x")
            add("gaussian_blur", ">= 10x scipy.ndimage.gaussian_filter",
                ratio(ms("gaussian_blur", "scipy"), kernel("gaussian_blur")), 10, True,
                "scipy/kernel = {:.1f}x")
            add("vector_add", "device arrays: >= 0.9x numpy add(out=) bandwidth",
                ratio(ms("vector_add", "numpy"), kernel("vector_add")), 0.9, True,
                "kernel/numpy bandwidth = {:.2f}x")
            add("mandelbrot", ">= 20x a vectorized numpy version",
                ratio(ms("mandelbrot", "numpy"), kernel("mandelbrot")), 20, True,
                "numpy/kernel = {:.1f}x")
            for cid in ("grayscale", "convolve_5x5", "convolve_9x9"):
                add(cid, "numpy in and out: end-to-end <= 2x kernel time",
                    ratio(e2e(cid), kernel(cid)), 2.0, False, "e2e/kernel = {:.2f}x")
        elif dtype == "gpu":
            copy = gbps("transfers", "torch_copy")
            add("vector_add", ">= 0.97x torch.add bandwidth",
                ratio(ms("vector_add", "torch"), kernel("vector_add")), 0.97, True,
                "kernel/torch bandwidth = {:.2f}x")
            add("grayscale", "bandwidth (4 B/pixel) >= 0.75x torch device copy",
                ratio(gbps("grayscale", "clkit_kernel", did), copy), 0.75, True,
                "{:.2f}x of torch copy")
            for cid in ("convolve_5x5", "convolve_9x9"):
                add(cid, "bandwidth (8 B/pixel) >= 0.5x torch device copy",
                    ratio(gbps(cid, "clkit_kernel", did), copy), 0.5, True,
                    "{:.2f}x of torch copy")
                add(cid, "faster than torch conv2d",
                    ratio(ms(cid, "torch"), kernel(cid)), 1.0, True,
                    "conv2d/kernel = {:.2f}x")
            # numpy in/out: vector_add's bytes over the time the call spends beyond its kernel,
            # against torch's pinned copies in the same mix (8 B up, 4 B down per element).
            k, e = kernel("vector_add"), e2e("vector_add")
            vec = cases.get("vector_add")
            xfer = None
            if k is not None and e is not None and e > k and vec is not None:
                xfer = vec["bytes"] / ((e - k) * 1e6)
            h2d, d2h = gbps("transfers", "torch_h2d_pinned"), gbps("transfers",
                                                                   "torch_d2h_pinned")
            pinned = 12 / (8 / h2d + 4 / d2h) if h2d and d2h else None
            add("transfers", "numpy in/out transfers >= 0.8x torch pinned H2D/D2H",
                ratio(xfer, pinned), 0.8, True, "{:.2f}x" + (
                    f" ({xfer:.1f} vs {pinned:.1f} GB/s)" if xfer and pinned else ""))
    return out


# ---------------------------------------------------------------------------------------------
# the table

BASE_KEYS = ("serial", "numpy", "scipy", "cv2", "torch", "cupy")


def _fmt_ms(ms: float) -> str:
    if ms >= 100:
        return f"{ms:,.0f}"
    if ms >= 1:
        return f"{ms:.2f}"
    return f"{ms:.4f}"


def _fmt_ratio(x: float) -> str:
    return f"{x:,.0f}x" if x >= 100 else f"{x:.2f}x" if x < 10 else f"{x:.1f}x"


def display_name(r: dict, devices: dict) -> str:
    """A result's label, with its device's id, platform and type for clkit rows."""
    label = r["label"]
    if r["device"] is not None:
        d = devices.get(r["device"])
        label += f" {r['device']}" + (f" ({d['short_platform']} {d['type']})" if d else "")
    return label


def _label(r: dict, devices: dict) -> str:
    return display_name(r, devices) + (" (1)" if r["key"] == "serial" else "")


def format_case(case: dict, devices: dict) -> str:
    """One case's table: time, bandwidth and speed-ups over each baseline present."""
    rows = [r for r in case["results"]]
    bases = [k for k in BASE_KEYS if any(r["key"] == k and r.get("median_ms") for r in rows)]
    base_ms = {k: next(r["median_ms"] for r in rows if r["key"] == k and r.get("median_ms"))
               for k in bases}
    head = ["variant", "median ms", "runs", "GB/s"] + [f"vs {k}" for k in bases] + ["check"]
    table = [head]
    for r in rows:
        if r.get("median_ms") is None:
            table.append([_label(r, devices), "failed", "", ""] + [""] * len(bases)
                         + [r["error"] or ""])
            continue
        line = [_label(r, devices), _fmt_ms(r["median_ms"]), str(r["runs"]),
                f"{r['gbps']:.2f}" if r.get("gbps") else ""]
        line += [_fmt_ratio(base_ms[k] / r["median_ms"]) for k in bases]
        line.append(r.get("check") or "")
        table.append(line)
    widths = [max(len(row[i]) for row in table) for i in range(len(head) - 1)]
    lines = []
    title = f"{case['title']}  [{case['bytes_note']}]" if case.get("bytes_note") else case["title"]
    lines.append(title)
    for row in table:
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:-1], widths[1:])]
        lines.append("  " + "  ".join(cells + [row[-1]]).rstrip())
    notes = []
    serial = next((r for r in rows if r["key"] == "serial"), None)
    if serial is not None:
        notes.append(f"(1) serial Python ran on {serial['note']}; its time is scaled "
                     f"x{serial['scale']:,.1f} to the full size")
    if bases:
        notes.append("vs X: X's time over this row's time (above 1: this row is faster)")
    if case["unavailable"]:
        notes.append("not run: " + "; ".join(f"{k} ({v})" for k, v in
                                             case["unavailable"].items()))
    lines += ["  " + n for n in notes]
    return "\n".join(lines)


def format_transfers(case: dict, devices: dict) -> str:
    table = [["transfer", "median ms", "runs", "GB/s"]]
    for r in case["results"]:
        if r.get("median_ms") is None:
            table.append([_label(r, devices), "failed", "", r["error"] or ""])
            continue
        table.append([_label(r, devices), _fmt_ms(r["median_ms"]), str(r["runs"]),
                      f"{r['gbps']:.2f}"])
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    lines = [f"{case['title']}  [{case['bytes_note']}]"]
    for row in table:
        lines.append("  " + "  ".join([row[0].ljust(widths[0])]
                                      + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]))
    if case["unavailable"]:
        lines.append("  not run: " + "; ".join(f"{k} ({v})" for k, v in
                                               case["unavailable"].items()))
    return "\n".join(lines)


def format_record(case: dict, devices: dict) -> str:
    if case["id"] == "transfers":
        return format_transfers(case, devices)
    return format_case(case, devices)


def format_header(machine: dict, sizes: Sizes) -> str:
    m = machine
    lines = [f"clkit bench, {m['date']}: {m['cpu']} ({m['cores']} cores), load average "
             + ", ".join(f"{x:.2f}" for x in m["load_average"] or []),
             "versions: " + ", ".join(f"{k} {v}" for k, v in m["versions"].items() if v),
             f"sizes {sizes.describe()}"]
    for d in m["devices"]:
        lines.append(f"device {d['id']}: {d['name']} ({d['platform']}, {d['type']}, "
                     f"{d['compute_units']} compute units)")
    if m.get("torch_device"):
        lines.append(f"torch runs on {m.get('cuda_device') or 'the CPU'}")
    lines.append("clkit kernel: device arrays, sum of the kernels' profiling events; clkit e2e: "
                 "numpy in and out, wall clock; medians after a warm-up")
    return "\n".join(lines)


def format_targets(targets: list, sizes: Sizes) -> str:
    if not targets:
        return ""
    lines = ["Targets of issue 4 (ratios from this run's medians)"]
    if sizes.name not in ("default", "gpu"):
        lines[0] += f", at size {sizes.name}: the targets are set for the issue's sizes"
    width = max(len(f"{t['case']}: {t['target']}") for t in targets)
    for t in targets:
        verdict = {True: "met", False: "NOT MET", None: "-"}[t["met"]]
        lines.append(f"  {t['device']:5s} {(t['case'] + ': ' + t['target']).ljust(width)}  "
                     f"{t['measured']:40s} {verdict}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# the plot


def plot(report: dict, path: str) -> None:
    """A grouped bar chart of the medians (log scale), one group per case."""
    matplotlib = optional("matplotlib")
    if matplotlib is None:
        raise ImportError("matplotlib is not installed")
    matplotlib.use("Agg")
    plt = importlib.import_module("matplotlib.pyplot")
    cases = [c for c in report["cases"] if c["id"] != "transfers"]
    devices = {d["id"]: d for d in report["machine"]["devices"]}
    order = BASE_KEYS + ("torch_e2e",)

    def series_of(r):
        return display_name(r, devices) if r["device"] is not None else r["key"]

    found = {}
    for c in cases:
        for r in c["results"]:
            if r.get("median_ms"):
                rank = order.index(r["key"]) if r["key"] in order else len(order)
                found.setdefault(series_of(r), (rank, len(found)))
    series = sorted(found, key=found.get)
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(cases) + 2), 5.5))
    width = 0.8 / max(1, len(series))
    colors = plt.get_cmap("tab10" if len(series) <= 10 else "tab20")
    for i, name in enumerate(series):
        xs, ys = [], []
        for j, c in enumerate(cases):
            for r in c["results"]:
                if series_of(r) == name and r.get("median_ms"):
                    xs.append(j - 0.4 + width * (i + 0.5))
                    ys.append(r["median_ms"])
        ax.bar(xs, ys, width, label=name, color=colors(i % colors.N))
    ax.set_yscale("log")
    ax.set_ylabel("median time, ms (log scale; lower is faster)")
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([c["id"] for c in cases], rotation=20, ha="right")
    m = report["machine"]
    ax.set_title(f"clkit bench ({report['size']}): {m['cpu']}, {m['date'][:10]}", fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(axis="y", which="major", alpha=0.3)
    fig.tight_layout()
    folder, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(folder, f".{name}.tmp{os.getpid()}{os.path.splitext(name)[1]}")
    try:
        fig.savefig(tmp, dpi=120)
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)
