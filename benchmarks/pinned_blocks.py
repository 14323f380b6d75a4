"""What pinned memory costs on a GPU's host, and numpy results kept or dropped.

    python benchmarks/pinned_blocks.py

New pinned blocks of 33 and 133 MiB (``ALLOC_HOST_PTR`` buffers, mapped: what the result pool
makes) against numpy memory of the same size, each touched; then eight ``grayscale`` numpy
calls of 7680x4320 RGB images with each result dropped, and eight with every result kept (each
then needs a new block).  Milliseconds, each call on its own.
"""

import time

import numpy as np

import clkit
from clkit._memory import pinned as _pinned
from clkit.kernels import grayscale

dev = clkit.select("gpu")
rt = clkit.runtime(dev)
for mb in (33, 133):
    n = mb << 20
    ts = []
    for i in range(3):
        t = time.perf_counter()
        raw = _pinned._map(rt, n)
        ts.append(time.perf_counter() - t)
        raw[::4096] = 1  # touched
    print(f"pinned block of {mb} MiB: {', '.join(f'{1e3 * x:.1f}' for x in ts)} ms", flush=True)
    ts = []
    for i in range(3):
        t = time.perf_counter()
        a = np.empty(n, np.uint8)
        a[::4096] = 1
        ts.append(time.perf_counter() - t)
    print(f"numpy {mb} MiB, touched: {', '.join(f'{1e3 * x:.1f}' for x in ts)} ms", flush=True)
rgb = np.random.default_rng(0).integers(0, 256, (4320, 7680, 3), dtype=np.uint8)
grayscale(rgb, device=dev)
for keep in (False, True):
    kept = []
    ts = []
    for i in range(8):
        t = time.perf_counter()
        g = grayscale(rgb, device=dev)
        ts.append(time.perf_counter() - t)
        if keep:
            kept.append(g)
        del g
    print(f"grayscale numpy 8K, results {'kept' if keep else 'dropped'}: "
          f"{', '.join(f'{1e3 * x:.1f}' for x in ts)} ms", flush=True)
