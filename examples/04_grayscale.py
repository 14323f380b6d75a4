"""04 - Grayscale: a serial Python loop against OpenCL, timed.

    python examples/04_grayscale.py

Converting RGB to gray is one small formula per pixel, gray = 0.299 R +
0.587 G + 0.114 B (ITU-R BT.601), with no pixel depending on another: the
ideal first GPU workload.  This script converts a Full-HD frame (the demo
photograph, resized) with a plain Python loop, NumPy, OpenCV and OpenCL, and
prints how long each takes.

To keep the script quick, the Python loop converts the first rows only and
its time is scaled up to the whole frame (every row is the same work).
"""

import time
from pathlib import Path

import numpy as np
from PIL import Image

import clkit
from clkit.kernels import grayscale

try:
    import cv2
except ImportError:  # OpenCV is optional: the table then has one row less
    cv2 = None

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "output"
OUTPUT.mkdir(exist_ok=True)

with Image.open(HERE / "data" / "astronaut.jpg") as photo:
    frame = np.asarray(photo.convert("RGB").resize((1920, 1080), Image.BILINEAR))
height, width, _ = frame.shape
device = clkit.select()


def best_of(fn, repeat=5):
    """The fastest of `repeat` runs, in milliseconds, and the last result."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1e3)
    return min(times), result


# 1. Serial Python: one pixel after another, as a first program would do it.
def python_gray(rows):
    out = []
    for row in rows:
        out.append([int(0.299 * r + 0.587 * g + 0.114 * b + 0.5) for r, g, b in row])
    return np.array(out, dtype=np.uint8)


SUBSET = 12                                  # rows converted by the Python loop
subset = frame[:SUBSET].tolist()             # Python ints: the fastest a plain loop gets
python_ms, python_rows = best_of(lambda: python_gray(subset), repeat=1)
python_ms *= height / SUBSET                 # scaled to the whole frame

# 2. NumPy: the same formula on whole arrays, looping in C.
weights = np.array([0.299, 0.587, 0.114], np.float32)
numpy_ms, numpy_gray = best_of(lambda: np.rint(frame @ weights).astype(np.uint8))

# 3. OpenCV's optimised C++ (SIMD, several threads).
if cv2 is not None:
    cv2_ms, cv2_gray = best_of(lambda: cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY))

# 4. OpenCL through clkit. The first call compiles the kernel (or loads it from the cache):
#    do it once before timing.
gray = grayscale(frame, device=device)
# 4a. End to end: upload the frame, run one work-item per 16 pixels, download the result.
opencl_ms, gray = best_of(lambda: grayscale(frame, device=device))
# 4b. With the frame already on the device and the result left there: the kernel alone, plus
#     the launch. This is what a pipeline of several kernels pays per step.
frame_dev = clkit.to_device(frame, device)
queue = clkit.runtime(device).queue


def on_device():
    result = grayscale(frame_dev, device=device)
    queue.finish()                           # wait for the kernel, no transfer
    return result


grayscale(frame_dev, device=device)
resident_ms, gray_dev = best_of(on_device)

# Every method must give the same picture (within 1 grey level: rounding differs).
assert np.abs(gray.astype(int) - numpy_gray).max() <= 1
assert np.abs(gray[:SUBSET].astype(int) - python_rows).max() <= 1
assert np.array_equal(gray_dev.get(), gray)
if cv2 is not None:
    assert np.abs(gray.astype(int) - cv2_gray).max() <= 1  # clkit uses OpenCV's fixed point

rows = [(f"Python loop (est. from {SUBSET} rows)", python_ms),
        ("NumPy (frame @ weights)", numpy_ms)]
if cv2 is not None:
    rows.append(("OpenCV cvtColor", cv2_ms))
rows += [(f"OpenCL {device.id}, with transfers", opencl_ms),
         (f"OpenCL {device.id}, data on device", resident_ms)]
print(f"RGB -> gray, {width}x{height} pixels, on {device.name}\n")
print(f"{'method':<38}{'time (ms)':>12}{'vs Python':>12}")
for name, ms in rows:
    print(f"{name:<38}{ms:>12.2f}{python_ms / ms:>11.0f}x")

Image.fromarray(gray).save(OUTPUT / "04_gray.png")
print(f"\nall results agree; wrote {OUTPUT / '04_gray.png'}")
