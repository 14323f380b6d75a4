"""06 - Mandelbrot: a compute-bound kernel, and a picture.

    python examples/06_mandelbrot.py

Each pixel is a complex number c; iterate z <- z*z + c from z = 0 and count
the steps until |z| > 2 (or give up after max_iter: the point is in the set).
Pixels are independent and the work per pixel is large and uneven: the
opposite of grayscale's one multiply-add per byte, so here the device's
arithmetic speed, not memory, decides.
"""

import time
from pathlib import Path

import numpy as np
from PIL import Image

import clkit
from clkit.kernels import mandelbrot

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "output"
OUTPUT.mkdir(exist_ok=True)
device = clkit.select()


def numpy_mandelbrot(width, height, xmin, xmax, ymin, ymax, max_iter):
    """The reference: every pixel at once, in float32, in the kernel's order of operations."""
    f32 = np.float32
    cr, ci = np.meshgrid(np.linspace(f32(xmin), f32(xmax), width, dtype=f32),
                         np.linspace(f32(ymin), f32(ymax), height, dtype=f32))
    zr, zi, zr2, zi2 = (np.zeros_like(cr) for _ in range(4))
    counts = np.full(cr.shape, max_iter, np.int32)
    alive = np.ones(cr.shape, bool)
    with np.errstate(over="ignore", invalid="ignore"):     # escaped points overflow: harmless
        for n in range(1, max_iter + 1):
            zi = (zr + zr) * zi + ci
            zr = (zr2 - zi2) + cr
            zr2, zi2 = zr * zr, zi * zi
            escaped = alive & (zr2 + zi2 > 4)
            counts[escaped] = n
            alive &= ~escaped
    return counts


# Check against numpy on a small grid: equal except on a few chaotic boundary pixels, where
# the last bit of rounding decides whether a point escapes.
window = dict(xmin=-2.0, xmax=1.0, ymin=-1.5, ymax=1.5)
small = mandelbrot(160, 160, **window, max_iter=100, device=device)
reference = numpy_mandelbrot(160, 160, *window.values(), 100)
agree = np.mean(small == reference)
assert agree >= 0.99, agree
print(f"160x160, max_iter 100: {agree:.2%} of the pixels equal numpy's")

# The picture: a wider window for a 3:2 frame, timed on the device.
width, height, max_iter = 1200, 800, 256
big_window = dict(xmin=-2.6, xmax=1.6, ymin=-1.4, ymax=1.4)
start = time.perf_counter()
counts = mandelbrot(width, height, **big_window, max_iter=max_iter, device=device)
seconds = time.perf_counter() - start
inside = np.mean(counts == max_iter)
print(f"{width}x{height}, max_iter {max_iter}: {seconds * 1e3:.0f} ms on {device.name}, "
      f"{inside:.1%} of the pixels in the set")

# Colour map: log of the count through a few colour stops, the set itself black. Row 0 is
# ymin; an image's row 0 is its top, so flip the rows.
t = np.log(counts[::-1]) / np.log(max_iter)
stops = [0.0, 0.2, 0.5, 0.8, 1.0]
palette = np.array([[0, 7, 100], [32, 107, 203], [237, 255, 255], [255, 170, 0], [0, 0, 0]])
rgb = np.stack([np.interp(t, stops, palette[:, k]) for k in range(3)], axis=-1)
rgb[counts[::-1] == max_iter] = 0
Image.fromarray(rgb.round().astype(np.uint8)).save(OUTPUT / "06_mandelbrot.png")
print(f"wrote {OUTPUT / '06_mandelbrot.png'}")
