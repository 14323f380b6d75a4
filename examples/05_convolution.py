"""05 - Convolution: a 2-D kernel of your own, then the library's.

    python examples/05_convolution.py

A convolution replaces each pixel by a weighted sum of its neighbours: blur,
sharpen and edge detection are all convolutions with different masks.  Unlike
04's grayscale, a work-item now reads many input pixels, and the image needs
a rule for the neighbours past its border.

Part 1 writes the direct kernel: a 2-D launch, one work-item per output
pixel, borders clamped to the nearest pixel.  Part 2 runs
clkit.kernels.convolve and gaussian_blur (tiled, separable when the mask
allows it, every scipy border mode) and checks them against scipy.
"""

import time
from pathlib import Path

import numpy as np
import scipy.ndimage as ndi
from PIL import Image

import clkit
from clkit.kernels import convolve, gaussian_blur

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "output"
OUTPUT.mkdir(exist_ok=True)

with Image.open(HERE / "data" / "astronaut.jpg") as photo:
    image = np.asarray(photo.convert("L"), dtype=np.float32)   # 512x512 gray, 0..255
height, width = image.shape
device = clkit.select()

SOURCE = """
// A 2-D launch: global size (width, height), so get_global_id(0) is the column x and
// get_global_id(1) the row y of the one output pixel this work-item computes.
__kernel void correlate(__global const float* src, __global float* dst,
                        __constant float* mask,           // (2r+1) x (2r+1), row-major
                        const int width, const int height, const int r)
{
    const int x = get_global_id(0), y = get_global_id(1);
    if (x >= width || y >= height)
        return;
    float sum = 0.0f;
    for (int j = -r; j <= r; ++j) {
        const int yy = clamp(y + j, 0, height - 1);       // "nearest": repeat the edge pixel
        for (int i = -r; i <= r; ++i) {
            const int xx = clamp(x + i, 0, width - 1);
            sum += mask[(j + r) * (2 * r + 1) + (i + r)] * src[yy * width + xx];
        }
    }
    dst[y * width + x] = sum;
}
"""

# Part 1: our own kernel. It computes a correlation (mask laid over the image as it is); a
# convolution is the same with the mask turned by 180 degrees, which makes no difference for
# the symmetric Gaussian used here.
sigma = 2.0
r = int(4 * sigma + 0.5)
g = np.exp(-0.5 * (np.arange(-r, r + 1) / sigma) ** 2)
mask = np.outer(g, g).astype(np.float32)
mask /= mask.sum()

program = clkit.Program.from_source(SOURCE, name="correlate")
blurred = np.empty_like(image)
program.correlate(image, blurred, mask, width, height, r, global_size=(width, height),
                  device=device)                           # compile (or load from the cache)
launch = program.correlate(image, blurred, mask, width, height, r,
                           global_size=(width, height), device=device)
expected = ndi.correlate(image.astype(np.float64), mask.astype(np.float64), mode="nearest")
assert np.allclose(blurred, expected, rtol=1e-4, atol=1e-3)
print(f"own kernel, {2 * r + 1}x{2 * r + 1} Gaussian on {width}x{height}: equals scipy, "
      f"kernel {launch.kernel_ms:.2f} ms on {device.id}")

# Part 2: the library, against scipy.ndimage, for a few masks and border modes. It is much
# faster than the direct kernel above: a Gaussian is separable (an outer product of two 1-D
# masks), so it runs as a row pass and a column pass, 2 x 17 taps per pixel instead of 17 x 17,
# and it reads each input pixel from memory once per work-group rather than once per tap.
sobel_x = np.array([[1, 0, -1], [2, 0, -2], [1, 0, -1]], np.float32)   # d/dx, as ndi.sobel
sharpen = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.float32)
odd = np.random.default_rng(0).standard_normal((4, 7)).astype(np.float32)  # even and odd sizes
for name, m, mode in [("gaussian", mask, "reflect"), ("sobel-x", sobel_x, "nearest"),
                      ("sharpen", sharpen, "mirror"), ("random 4x7", odd, "wrap")]:
    convolve(image, m, mode=mode, device=device)            # compile once
    start = time.perf_counter()
    result = convolve(image, m, mode=mode, device=device)
    ms = (time.perf_counter() - start) * 1e3
    reference = ndi.convolve(image.astype(np.float64), m.astype(np.float64), mode=mode)
    assert np.allclose(result, reference, rtol=1e-4, atol=1e-2), name
    print(f"convolve  {name:<11} mode={mode:<8} equals scipy   {ms:7.2f} ms with transfers")

smooth = gaussian_blur(image, 3.0, device=device)
assert np.allclose(smooth, ndi.gaussian_filter(image.astype(np.float64), 3.0),
                   rtol=1e-4, atol=1e-2)
print("gaussian_blur sigma=3                  equals scipy.ndimage.gaussian_filter")

# An edge picture: the gradient's length from the two Sobel derivatives.
edges = np.hypot(convolve(image, sobel_x, device=device),
                 convolve(image, sobel_x.T.copy(), device=device))
Image.fromarray(np.clip(blurred, 0, 255).round().astype(np.uint8)).save(OUTPUT / "05_blur.png")
Image.fromarray(np.clip(edges / 2, 0, 255).round().astype(np.uint8)).save(OUTPUT / "05_edges.png")
print(f"\nwrote {OUTPUT / '05_blur.png'} and {OUTPUT / '05_edges.png'}")
