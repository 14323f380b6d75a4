"""How tall a separable mask the GPU's one-kernel filter should take: it against the two passes.

    python benchmarks/fused_rows.py [--device gpu] [--size 7680x4320] [--rounds 20]
                                    [--dtype float32] [--sigmas 3,3.5,4,4.5,5,6,7]
                                    [--shape LX,LY,PY]

For Gaussians of sigma 3 to 7 (25 to 57 rows; --sigmas) on a float32 device image
(--dtype: images of other types are summed in float too, four row elements per
work-item, but for float64 ones, summed in double, one element), the kernels' event
time (median of ROUNDS calls, the specialised builds) with FUSED_MAX_ROWS set to 0
(the two passes) and then past every mask (the one kernel, in its shipped
work-group shape or --shape's), and the largest difference between the two
results (the same sums: 0).  Prints a line per sigma.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import clkit
from clkit._engine import conv_geometry as geo
from clkit._engine import dispatch as _dispatch
from clkit.kernels import gaussian_blur, gaussian_taps
from gpu_conv_sweep import kernel_median_ms  # benchmarks/ is the script's folder, first on sys.path

SIGMAS = (3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="gpu")
    parser.add_argument("--size", default="7680x4320")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--sigmas", default=",".join(f"{s:g}" for s in SIGMAS))
    parser.add_argument("--shape", help="the one kernel's LX,LY,PY (default: the shipped)")
    args = parser.parse_args(argv)
    device = clkit.select(args.device)
    width, height = (int(v) for v in args.size.split("x"))
    values = np.random.default_rng(3).random((height, width))
    dtype = np.dtype(args.dtype)
    if dtype.kind in "iu":
        values *= 100
    image = clkit.to_device(values.astype(dtype), device=device)
    out = clkit.empty(image.shape, np.float32, device=device)
    shipped = geo.FUSED_MAX_ROWS
    shapes = geo.FUSED_SHAPE, geo.FUSED_SHAPE4
    if args.shape:
        shape = tuple(int(v) for v in args.shape.split(","))
        if dtype == np.float64:
            geo.FUSED_SHAPE = shape
        else:
            geo.FUSED_SHAPE4 = shape
    try:
        for sigma in (float(v) for v in args.sigmas.split(",")):
            results = {}
            for label, rows in (("two passes", 0), ("one kernel", 1 << 30)):
                geo.FUSED_MAX_ROWS = dict.fromkeys(shipped, rows)
                ms = kernel_median_ms(lambda: gaussian_blur(image, sigma, out=out), args.rounds)
                results[label] = (ms, out.get())
            (two, a), (one, b) = results.values()
            taps = gaussian_taps(sigma).size
            print(f"sigma {sigma:g} ({taps} rows): two passes {two:.4f} ms, one kernel "
                  f"{one:.4f} ms, max diff {float(np.max(np.abs(a - b))):.3g}", flush=True)
    finally:
        geo.FUSED_MAX_ROWS = shipped
        geo.FUSED_SHAPE, geo.FUSED_SHAPE4 = shapes
        _dispatch.forget()
    return 0


if __name__ == "__main__":
    sys.exit(main())
