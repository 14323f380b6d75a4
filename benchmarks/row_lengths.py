"""The GPU filters on rows whose length is a multiple of 4 elements and on rows that are not.

    python benchmarks/row_lengths.py [--device gpu] [--size 7680x4320] [--rounds 20]
                                     [--extra 1,2]

The filters read and write rows 4 elements at a time; where a row's length is a multiple of
4, those vectors lie on 16 bytes.  For each case (on device arrays: ``gaussian_blur`` sigma 2,
the one-kernel filter, and sigma 5, the two passes, of a float32 and a uint8 image;
``convolve`` 5x5 and 9x9 of a float32 image), at the given width and at widths --extra
elements wider: the process's first call of that case and width (its builds included; run with
empty driver and clkit caches for a new user's), the whole call with ``out=`` (ROUNDS calls in
a loop, the queue finished after them, per call), and the kernels' event time (median of
ROUNDS calls, the specialised builds), with the kernel's ratio to the first width's.  Prints a
line per case and width.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import clkit
from clkit._build import tiers as _tiers
from clkit.kernels import convolve, gaussian_blur
from gpu_conv_sweep import kernel_median_ms  # benchmarks/ is the script's folder, first on sys.path


def cases(rng):
    mask5 = rng.random((5, 5)).astype(np.float32)
    mask9 = rng.random((9, 9)).astype(np.float32)
    return [
        ("gaussian_blur sigma 2", np.float32, lambda x, out: gaussian_blur(x, 2.0, out=out)),
        ("gaussian_blur sigma 5", np.float32, lambda x, out: gaussian_blur(x, 5.0, out=out)),
        ("gaussian_blur sigma 2", np.uint8, lambda x, out: gaussian_blur(x, 2.0, out=out)),
        ("gaussian_blur sigma 5", np.uint8, lambda x, out: gaussian_blur(x, 5.0, out=out)),
        ("convolve 5x5", np.float32, lambda x, out: convolve(x, mask5, out=out)),
        ("convolve 9x9", np.float32, lambda x, out: convolve(x, mask9, out=out)),
    ]


def wall_ms(call, queue, calls) -> float:
    """Milliseconds per call of ``calls`` calls in a loop, the queue finished after them."""
    start = time.perf_counter()
    for _ in range(calls):
        call()
    queue.finish()
    return (time.perf_counter() - start) * 1e3 / calls


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="gpu")
    parser.add_argument("--size", default="7680x4320")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--extra", default="1,2", help="widths this many elements wider")
    args = parser.parse_args(argv)
    device = clkit.select(args.device)
    width, height = (int(v) for v in args.size.split("x"))
    widths = [width] + [width + int(v) for v in args.extra.split(",")]
    rng = np.random.default_rng(5)
    values = rng.random((height, max(widths)))
    print(f"{device}, {height} rows", flush=True)
    for name, dtype, call in cases(rng):
        first = None
        for w in widths:
            image = clkit.to_device((values[:, :w] * (255 if dtype == np.uint8 else 1))
                                    .astype(dtype), device=device)
            out = clkit.empty(image.shape, np.float32 if dtype == np.uint8 else dtype,
                              device=device)
            first_call = wall_ms(lambda: call(image, out), out.queue, 1)
            ms = kernel_median_ms(lambda: call(image, out), args.rounds)
            _tiers.wait_idle()
            whole = wall_ms(lambda: call(image, out), out.queue, args.rounds)
            first = first or ms
            print(f"{name} {np.dtype(dtype).name} width {w}: first call {first_call:.1f} ms, "
                  f"whole call {whole:.4f} ms, kernel {ms:.4f} ms ({ms / first:.2f}x)",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
