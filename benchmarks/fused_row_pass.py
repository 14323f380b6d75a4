"""The one-kernel separable filter's row pass with 4, 8 or 16 row elements per work-item.

    python3 benchmarks/fused_row_pass.py [--device gpu] [--size 7680x4320] [--rounds 20]

In ``convolution_fused.cl`` (images summed in float) each work-item of the row
pass computes ROW_EPI adjacent elements of a row of the local-memory
intermediate from one span of source vectors: the span of 4 outputs is the 4
elements and the mask's halo, so wider spans load fewer vectors per output.
This times the kernel (event time, median of ROUNDS calls) for each
(work-group shape LX, LY, PY; ROW_EPI) of VARIANTS, two rounds in turn, on
float32 and uint8 images, and compares every result with the first variant's.  clkit
builds 8 elements per work-item for rows of up to 17 taps, 4 beyond (``FUSED_WIDE_ROW_HALO``).
"""

from __future__ import annotations

import argparse

import numpy as np

import clkit
from clkit._engine import conv_geometry as geo
from clkit._engine import filter as _filter
from clkit.kernels import gaussian_blur
from gpu_conv_sweep import kernel_median_ms  # benchmarks/: first on sys.path

VARIANTS = [((8, 32, 4), 4), ((8, 32, 4), 8), ((8, 16, 8), 8), ((8, 16, 8), 4),
            ((16, 8, 8), 8), ((4, 64, 4), 8), ((8, 16, 4), 8)]
ROW_EPI: list = [4]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--size", default="7680x4320")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--sigmas", default="1.5,2,2.5")
    args = ap.parse_args()
    shipped_fused, shipped_shape = _filter.fused, geo.FUSED_SHAPE4

    def fused(*a, **k):
        g = shipped_fused(*a, **k)
        if g is not None and g.defines.get("VEC4"):
            g.defines = dict(g.defines, ROW_EPI=ROW_EPI[0])
        return g

    _filter.fused = fused
    device = clkit.select(args.device)
    width, height = (int(v) for v in args.size.split("x"))
    values = np.random.default_rng(3).random((height, width))
    print(f"{device}, {width}x{height}, kernel ms (median of {args.rounds}); "
          "variants ((LX, LY, PY), ROW_EPI): " + ", ".join(map(str, VARIANTS)))
    try:
        for dt in (np.float32, np.uint8):
            image = clkit.to_device((values * (100 if dt == np.uint8 else 1)).astype(dt),
                                    device=device)
            out = clkit.empty(image.shape, np.float32, device=device)
            for sigma in (float(s) for s in args.sigmas.split(",")):
                times = {v: [] for v in VARIANTS}
                diff, ref = 0.0, None
                for _ in range(2):
                    for v in VARIANTS:
                        geo.FUSED_SHAPE4, ROW_EPI[0] = v
                        times[v].append(kernel_median_ms(
                            lambda: gaussian_blur(image, sigma, out=out), args.rounds))
                        got = out.get()
                        ref = got if ref is None else ref
                        diff = max(diff, float(np.abs(got - ref).max()))
                print(f"{np.dtype(dt).name} sigma {sigma}: " + "  ".join(
                    "/".join(f"{t:.3f}" for t in ts) for ts in times.values())
                    + f"  (max diff {diff:g})", flush=True)
    finally:
        _filter.fused, geo.FUSED_SHAPE4 = shipped_fused, shipped_shape


if __name__ == "__main__":
    main()
