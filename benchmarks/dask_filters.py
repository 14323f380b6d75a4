"""clkit.dask beside dask-image and Dask's own cost, on the same scheduler and chunks.

    python benchmarks/dask_filters.py                  # 8192x8192 float32, 1024x1024 chunks
    python benchmarks/dask_filters.py --size 4096 --rounds 3 --json out.json

Two workloads over a float32 array in chunks, on dask's threaded scheduler (a thread
per core), each written into one preallocated numpy array (``da.store``):

- ``gaussian``: a Gaussian of sigma 4 (radius 16), mode reflect;
- ``chain``: a 3x3 sharpening convolution (mirror), a Gaussian of sigma 2 (wrap) and a 5x5
  box (nearest): three filters, halo 1 + 8 + 2.

For each: ``clkit.dask`` (one pass on the device, the chain's intermediates staying there),
``dask_image.ndfilters`` (scipy.ndimage per chunk, one ``map_overlap`` per filter), and an
identity ``map_overlap`` of the same depth with ``boundary="reflect"`` (Dask's own cost of
building the halo'd blocks).  The cases run interleaved, round after round, so that load
from other processes falls on all of them alike; each figure is a median over the rounds,
each ratio the median of the per-round ratios.  The first round warms up (kernel builds,
scipy's first calls) and is not counted.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import dask  # noqa: E402
import dask.array as da  # noqa: E402
from dask_image import ndfilters  # noqa: E402

import clkit  # noqa: E402
import clkit.dask as cd  # noqa: E402

SHARPEN = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.float32)
BOX = np.full((5, 5), 1 / 25, np.float32)


def workloads(x):
    """name -> {case: lazy dask array}."""
    identity = (lambda depth: x.map_overlap(lambda b: b, depth=depth, boundary="reflect",
                                            dtype=x.dtype, meta=np.empty((0, 0), x.dtype)))
    return {
        "gaussian": {
            "identity map_overlap": identity(16),
            "dask-image": ndfilters.gaussian_filter(x, 4.0),
            "clkit.dask": cd.gaussian_blur(x, 4.0),
        },
        "chain": {
            "identity map_overlap": identity(1 + 8 + 2),
            "dask-image": ndfilters.convolve(
                ndfilters.gaussian_filter(ndfilters.convolve(x, SHARPEN, mode="mirror"), 2.0,
                                          mode="wrap"), BOX, mode="nearest"),
            "clkit.dask": cd.convolve(cd.gaussian_blur(cd.convolve(x, SHARPEN, mode="mirror"),
                                                       2.0, mode="wrap"), BOX, mode="nearest"),
        },
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--chunk", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()

    x_np = np.random.default_rng(0).random((args.size, args.size), dtype=np.float32)
    x = da.from_array(x_np, chunks=args.chunk)
    out = np.empty_like(x_np)
    cases = workloads(x)
    device = clkit.select()
    print(f"{args.size}x{args.size} float32 in {args.chunk}x{args.chunk} chunks, dask's threaded "
          f"scheduler ({os.cpu_count()} threads), clkit on {device}; "
          f"{args.rounds} rounds after a warm-up")

    times = {(w, c): [] for w, group in cases.items() for c in group}
    with dask.config.set(scheduler="threads"):
        for r in range(args.rounds + 1):
            for w, group in cases.items():
                for c, y in group.items():
                    t0 = time.perf_counter()
                    da.store(y, out, lock=False)
                    if r:
                        times[(w, c)].append(time.perf_counter() - t0)
    # The last round's clkit chain result against dask-image's on a crop across a seam, away
    # from the array's edges (where dask-image's wrap differs: it wraps each chunk's own
    # border, not the array's).
    crop = np.s_[args.chunk - 50:args.chunk + 50, args.chunk - 50:args.chunk + 50]
    check = cases["chain"]["dask-image"][crop].compute(scheduler="threads")
    assert np.allclose(out[crop], check, atol=1e-4), "clkit.dask must equal dask-image"

    report = {"size": args.size, "chunk": args.chunk, "rounds": args.rounds,
              "device": str(device), "cpus": os.cpu_count(), "workloads": {}}
    for w, group in cases.items():
        t = {c: np.array(times[(w, c)]) for c in group}
        ours = t["clkit.dask"]
        vs_peer = float(np.median(t["dask-image"] / ours))
        vs_dask = float(np.median(ours / t["identity map_overlap"]))
        print(f"\n{w}:")
        for c in group:
            print(f"  {c:22s} {np.median(t[c]):7.3f} s   (rounds: "
                  f"{', '.join(f'{v:.3f}' for v in t[c])})")
        print(f"  clkit.dask is {vs_peer:.2f}x as fast as dask-image and takes "
              f"{vs_dask:.2f}x the identity map_overlap's time")
        report["workloads"][w] = {"seconds": {c: t[c].tolist() for c in group},
                                  "speedup_vs_dask_image": vs_peer,
                                  "time_vs_identity_map_overlap": vs_dask}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
