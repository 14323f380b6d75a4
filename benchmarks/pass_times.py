"""Each kernel's time in the GPU's two-pass Gaussians, on rows of a multiple of 4 elements and not.

    python benchmarks/pass_times.py [--device gpu] [--height 4320] [--widths 7680,7681,7682]
                                    [--sigmas 5,10] [--rounds 20]

For float32 and uint8 device images of each width, ``gaussian_blur`` at each sigma (masks taller
than the one-kernel filter takes, so the row pass and the column pass run as two kernels) in
the specialised build: the median event time of each kernel over ROUNDS calls, and their sum.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import clkit
from clkit._build import tiers as _tiers
from clkit._launch.kernel import recording
from clkit.kernels import gaussian_blur


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="gpu")
    parser.add_argument("--height", type=int, default=4320)
    parser.add_argument("--widths", default="7680,7681,7682")
    parser.add_argument("--sigmas", default="5,10")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)
    device = clkit.select(args.device)
    rng = np.random.default_rng(1)
    print(f"{device}, {args.height} rows, medians of {args.rounds}", flush=True)
    for dtype in (np.float32, np.uint8):
        for sigma in (float(s) for s in args.sigmas.split(",")):
            for width in (int(w) for w in args.widths.split(",")):
                values = rng.random((args.height, width)) * (255 if dtype == np.uint8 else 1)
                image = clkit.to_device(values.astype(dtype), device=device)
                out = clkit.empty(image.shape, np.float32, device=device)
                times: dict = {}
                with _tiers.tier("specialised"):
                    gaussian_blur(image, sigma, out=out)
                    for _ in range(args.rounds):
                        with recording() as launches:
                            gaussian_blur(image, sigma, out=out)
                        for i, launch in enumerate(launches):
                            times.setdefault(f"{i}:{launch.kernel.name}", []).append(
                                launch.kernel_ms)
                medians = {name: float(np.median(ms)) for name, ms in times.items()}
                each = ", ".join(f"{name} {ms:.4f}" for name, ms in medians.items())
                print(f"{np.dtype(dtype).name} sigma {sigma} width {width}: {each}; "
                      f"sum {sum(medians.values()):.4f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
