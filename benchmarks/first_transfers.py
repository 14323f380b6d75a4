"""A process's first large transfers and numpy calls on a GPU, against its later ones.

    python benchmarks/first_transfers.py

In a fresh process (run it once first, so that the builds are cached): the context, four
``clkit.to_device`` of 100 MiB, four ``grayscale`` numpy calls of a 7680x4320 RGB image and
three ``convolve`` 5x5 of a 7680x4320 float32 one, each call's ms on one line.  The first
large transfer on a queue starts making its staging buffers; the first numpy result of a size
pins a block of the result pool.
"""

import time

import numpy as np

import clkit
from clkit.kernels import convolve, grayscale

dev = clkit.select("gpu")
t = time.perf_counter()
clkit.to_device(np.zeros(16, np.float32), device=dev)  # the context and the queue
print(f"context {1e3 * (time.perf_counter() - t):.1f} ms;", end=" ")
for i in range(4):
    a = np.full(100 << 20, i, np.uint8)
    t = time.perf_counter()
    d = clkit.to_device(a, device=dev)
    dt = time.perf_counter() - t
    assert d[-1:].get()[0] == i
    print(f"to_device 100 MiB #{i + 1}: {dt * 1e3:.2f} ms;", end=" ")
rgb = np.random.default_rng(0).integers(0, 256, (4320, 7680, 3), dtype=np.uint8)
img = np.random.default_rng(0).random((4320, 7680), dtype=np.float32)
m = np.ones((5, 5), np.float32) / 25
for i in range(4):
    t = time.perf_counter()
    grayscale(rgb, device=dev)
    print(f"grayscale #{i + 1}: {(time.perf_counter() - t) * 1e3:.2f} ms;", end=" ")
for i in range(3):
    t = time.perf_counter()
    convolve(img, m, device=dev)
    print(f"convolve 5x5 #{i + 1}: {(time.perf_counter() - t) * 1e3:.2f} ms;", end=" ")
print(flush=True)
