"""What each case is measured against: pure Python loops and vectorised numpy.

The serial loops run on a subset of a case's data (its time is scaled to the
full size); the numpy versions are also the reference results every clkit
variant is checked against.
"""

from __future__ import annotations

import math

import numpy as np


def serial_gray(pixels, wr, wg, wb):
    return [int(wr * r + wg * g + wb * b + 0.5) for r, g, b in pixels]


def serial_correlate(rows, corr, out_h, out_w):
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


def serial_separable(rows, taps, out_h, out_w):
    """A separable filter, rows then columns, on a block of rows with its halo all round."""
    k = len(taps)
    tmp = []
    for src in rows:
        tmp.append([sum(taps[i] * src[x + i] for i in range(k)) for x in range(out_w)])
    return [[sum(taps[i] * tmp[y + i][x] for i in range(k)) for x in range(out_w)]
            for y in range(out_h)]


def serial_add(a, b):
    return [x + y for x, y in zip(a, b)]


def serial_mandelbrot(points, max_iter):
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


def serial_points(pixels, fx, fy, cx, cy, scale):
    out = []
    for v, u, d in pixels:
        z = d / scale
        if z != 0.0 and math.isfinite(z):
            out.append(((u - cx) * z / fx, (v - cy) * z / fy, z))
    return out


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
