"""Numpy results kept or dropped, and a batch through clkit.map, against OpenCV, on a GPU.

    python benchmarks/kept_results.py

Sixteen 7680x4320 RGB uint8 numpy images: eight ``grayscale`` calls with each result dropped,
eight with every result kept (ms each); two rounds of ``clkit.map(grayscale, images)`` (ms per
image; the first round's results dropped before the second); ``cv2.cvtColor`` over the same
images on all host cores (ms per image).  One line.
"""

import time

import numpy as np

import clkit
from clkit.kernels import grayscale

dev = clkit.select("gpu")
rng = np.random.default_rng(0)
base = rng.integers(0, 256, (4320, 7680, 3), dtype=np.uint8)
images = [base + np.uint8(i) for i in range(16)]
grayscale(images[0], device=dev)
line = []
for keep in (False, True):
    kept, ts = [], []
    for img in images[:8]:
        t = time.perf_counter(); g = grayscale(img, device=dev); ts.append(time.perf_counter() - t)
        if keep:
            kept.append(g)
        del g
    line.append(f"results {'kept' if keep else 'dropped'}: " + " ".join(f"{1e3 * x:.1f}" for x in ts))
    del kept
for r in range(2):
    t = time.perf_counter(); out = list(clkit.map(grayscale, images, device=dev)); dt = time.perf_counter() - t
    line.append(f"map round {r}: {1e3 * dt / len(images):.2f} ms/image")
    del out
try:
    import cv2
    t = time.perf_counter()
    for img in images:
        cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
    line.append(f"cv2: {1e3 * (time.perf_counter() - t) / len(images):.2f} ms/image")
except ImportError:
    pass
print("; ".join(line), flush=True)
