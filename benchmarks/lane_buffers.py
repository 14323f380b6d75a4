"""Pooled device buffers for the lanes of ``clkit.map`` and a call's tiles, against new ones.

    python benchmarks/lane_buffers.py OUTDIR [--device SPEC] [--size WxH] [--batch N]
                                             [--repeat N] [--rounds N]

A numpy call's band on a queue other than the runtime's own (a lane of
``clkit.map``, a tile of a large call) takes its device buffers (the uploaded
input, temporaries, the result before it goes home) from that queue's memory
pool.  The other side of each comparison, ``new``, gives such a band new
buffers from the driver each time, as clkit did before: the dispatch layer's
pooling is replaced in this process only.  Both sides run in one process,
alternating, ``--rounds`` times for the batches:

- batches of N images (default 32, 7680x4320: ``grayscale`` uint8,
  ``convolve`` 5x5 float32) through ``clkit.map``, numpy images and pinned
  ones (with pinned results), per image, against the link with both
  directions busy (measured first, as ``gpu_e2e.py`` does);
- one image, numpy and pinned in and out, whole and in 4 or 8 tiles over two
  or three queues (the tiles that ``PIPELINE_BYTES`` turns on), against the
  time the link needs for its bytes.

Writes OUTDIR/lane_buffers.json and prints one line per figure.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys

import numpy as np

from clkit._memory import transfer as _transfer
from clkit._engine import bands as _bands, dispatch as _dispatch
from clkit._memory import pools as _memory
import gpu_e2e  # benchmarks/ is the script's folder, first on sys.path

POOLED = (_memory.band, _dispatch._upload)
NEW = (lambda queue: contextlib.nullcontext(),
       lambda rt, host, queue, align: _transfer.upload(rt, host, queue, align=align))
SIDES = (("pooled", POOLED), ("new", NEW))
# (tiles, queues); one tile is the whole image
TILES = ((1, 2), (4, 2), (8, 2), (4, 3))


def use(side) -> None:
    _memory.band, _dispatch._upload = side


def main(argv=None):
    parser = gpu_e2e.arguments(__doc__, repeat=5)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the batch comparison")
    args = parser.parse_args(argv)
    dev, rt, width, height = gpu_e2e.chosen(args)
    link = gpu_e2e.link(rt, height * width * 4, args.repeat)
    print(f"{dev}; link {link['up_GBs']:.1f} GB/s up, {link['down_GBs']:.1f} down, "
          f"{link['both_up_GBs']:.1f} + {link['both_down_GBs']:.1f} both at once", flush=True)
    # no OpenCV here: gpu_e2e.py compares with it
    cases = [c[:5] + (None,) for c in gpu_e2e.cases(height, width, np.random.default_rng(0))]
    res = {"device": str(dev), "size": f"{width}x{height}", "link": link, "batch": [],
           "one": []}
    try:
        for rnd in range(args.rounds):
            for label, side in SIDES:
                use(side)
                for case in cases:
                    r = gpu_e2e.batch(dev, case, link, args.batch, args.repeat)
                    r.update(buffers=label, round=rnd)
                    res["batch"].append(r)
                    n = r["images"]
                    print(f"batch, {label} buffers: {r['case']}: pinned {r['pinned_ms'] / n:.2f} "
                          f"ms per image ({r['link_both_ms'] / r['pinned_ms']:.2f} of the link "
                          f"both ways), numpy {r['numpy_ms'] / n:.2f}", flush=True)
        saved = _bands.PIPELINE_BYTES, _bands.PIPELINE_TILES, _bands.QUEUES_PER_DEVICE
        for label, side in SIDES:
            use(side)
            for tiles, queues in TILES:
                _bands.PIPELINE_BYTES = saved[0] if tiles == 1 else 1 << 20
                _bands.PIPELINE_TILES, _bands.QUEUES_PER_DEVICE = tiles, queues
                for case in cases:
                    r = gpu_e2e.one_image(dev, rt, case, link, args.repeat)
                    r.update(buffers=label, tiles=tiles, queues=queues)
                    res["one"].append(r)
                    print(f"one image, {label} buffers, {tiles} tile(s) on {queues} queues: "
                          f"{r['case']}: pinned {r['pinned_ms']:.2f} ms "
                          f"({r['pinned_ms'] / r['limit_ms']:.2f}x the link's "
                          f"{r['limit_ms']:.2f}), numpy {r['numpy_ms']:.2f} "
                          f"({r['numpy_ms'] / r['limit_ms']:.2f}x)", flush=True)
        _bands.PIPELINE_BYTES, _bands.PIPELINE_TILES, _bands.QUEUES_PER_DEVICE = saved
    finally:
        use(POOLED)
    os.makedirs(args.outdir, exist_ok=True)
    with open(os.path.join(args.outdir, "lane_buffers.json"), "w") as fh:
        json.dump(res, fh, indent=1, default=float)


if __name__ == "__main__":
    sys.exit(main())
