"""Batches through ``clkit.map`` with 2 to 6 lanes per GPU, pinned and numpy images.

    python benchmarks/lanes.py OUTDIR [--device SPEC] [--size WxH] [--batch N] [--repeat N]

``clkit.map`` gives each GPU a few lanes (``clkit._launch.map.LANES``), each a thread
with its own queue running one image's upload, kernels and download.  This
runs the batches of ``gpu_e2e.py`` (``grayscale`` uint8 and ``convolve`` 5x5
float32, default 32 images of 7680x4320) with each lane count in turn, twice
in alternating order, against the link with both directions busy (measured
first).  Writes OUTDIR/lanes.json and prints one line per figure.
"""

from __future__ import annotations

import json
import os

import numpy as np

from clkit._launch import map as _map
import gpu_e2e  # benchmarks/ is the script's folder, first on sys.path

COUNTS = (2, 3, 4, 6)


def main(argv=None):
    args = gpu_e2e.arguments(__doc__, repeat=4).parse_args(argv)
    dev, rt, width, height = gpu_e2e.chosen(args)
    link = gpu_e2e.link(rt, height * width * 4, args.repeat)
    print(f"{dev}; link both ways at once: {link['both_up_GBs']:.1f} GB/s up, "
          f"{link['both_down_GBs']:.1f} down", flush=True)
    cases = [c[:5] + (None,) for c in gpu_e2e.cases(height, width, np.random.default_rng(0))]
    saved = dict(_map.LANES)
    rows = []
    try:
        for order in (COUNTS, COUNTS[::-1]):
            for lanes in order:
                _map.LANES[dev.type] = lanes
                for case in cases:
                    r = gpu_e2e.batch(dev, case, link, args.batch, args.repeat)
                    r["lanes"] = lanes
                    rows.append(r)
                    n = r["images"]
                    print(f"{lanes} lanes: {r['case']}: pinned {r['pinned_ms'] / n:.2f} ms per "
                          f"image ({r['link_both_ms'] / r['pinned_ms']:.2f} of the link both "
                          f"ways), numpy {r['numpy_ms'] / n:.2f}", flush=True)
    finally:
        _map.LANES.update(saved)
    os.makedirs(args.outdir, exist_ok=True)
    with open(os.path.join(args.outdir, "lanes.json"), "w") as fh:
        json.dump({"device": str(dev), "link": link, "rows": rows}, fh, indent=1, default=float)


if __name__ == "__main__":
    main()
