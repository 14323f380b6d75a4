"""Library calls with numpy in and out against OpenCV and numpy, interleaved.

    python benchmarks/numpy_calls.py [DEVICE] [--size 3840x2160] [--rounds 21]

Each round times one call of each side of a pair, one after the other; the
medians over the rounds are compared.  Pairs: ``convolve`` 5x5 against
``cv2.filter2D``, ``gaussian_blur`` sigma 2 against ``cv2.GaussianBlur``
(the same 17 taps), both with scipy's reflect border; ``grayscale`` against
``cv2.cvtColor``; ``vector_add`` of 2^24 float32 with ``out=`` against
``np.add(a, b, out=...)``.  Results are checked against the baseline's.

The arrays come from :func:`clkit.pinned_like` (on a CPU driver ordinary host
memory aligned to 128 bytes, which PoCL uses in place; a numpy array that
happens not to be aligned so costs a copy of it per call), and both sides
use the same ones.
"""

from __future__ import annotations

import argparse
import time

import cv2
import numpy as np

import clkit
from clkit import kernels as ck


def pinned(array, dev):
    copy = clkit.pinned_like(array, device=dev)
    copy[...] = array
    return copy


def pairs(width, height, dev, rng):
    image = pinned(rng.random((height, width), dtype=np.float32), dev)
    rgb = pinned(rng.integers(0, 256, (height, width, 3), np.uint8), dev)
    mask = rng.random((5, 5)).astype(np.float32)
    out = pinned(image, dev)
    taps = ck.gaussian_taps(2.0)
    a = pinned(rng.random(1 << 24, dtype=np.float32), dev)
    b = pinned(rng.random(1 << 24, dtype=np.float32), dev)
    sums, np_sums = pinned(a, dev), pinned(a, dev)
    reflect = cv2.BORDER_REFLECT  # scipy's "reflect": the edge pixel repeated
    yield ("convolve 5x5", lambda: ck.convolve(image, mask, out=out, device=dev),
           # filter2D correlates: flip the mask for a convolution
           lambda: cv2.filter2D(image, -1, mask[::-1, ::-1], borderType=reflect), 1e-4)
    yield ("gaussian_blur sigma 2", lambda: ck.gaussian_blur(image, 2.0, out=out, device=dev),
           lambda: cv2.sepFilter2D(image, -1, taps, taps, borderType=reflect), 1e-4)
    yield ("grayscale", lambda: ck.grayscale(rgb, device=dev),
           lambda: cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY), 1.0)
    yield ("vector_add 2^24, out=", lambda: ck.vector_add(a, b, out=sums, device=dev),
           lambda: np.add(a, b, out=np_sums), 0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("device", nargs="?", default=None)
    ap.add_argument("--size", default="3840x2160")
    ap.add_argument("--rounds", type=int, default=21)
    opts = ap.parse_args(argv)
    dev = clkit.select(opts.device)
    width, _, height = opts.size.lower().partition("x")
    rng = np.random.default_rng(0)
    print(f"{dev}, {width}x{height}, {opts.rounds} rounds, interleaved; medians")
    print(f"{'case':24} {'clkit ms':>9} {'baseline ms':>11} {'ratio':>6}")
    for name, ours, theirs, tol in pairs(int(width), int(height), dev, rng):
        got, want = ours(), theirs()
        err = float(np.max(np.abs(got.astype(np.float64) - want)))
        assert err <= tol * max(1.0, float(np.max(np.abs(want)))), (name, err)
        mine, base = [], []
        for _ in range(opts.rounds):
            for fn, times in ((ours, mine), (theirs, base)):
                t0 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t0) * 1e3)
        m, b = np.median(mine), np.median(base)
        print(f"{name:24} {m:9.2f} {b:11.2f} {m / b:6.2f}")


if __name__ == "__main__":
    main()
