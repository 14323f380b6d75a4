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
each ratio the median of the per-round ratios.  Two rounds warm up and are not counted:
the first builds the kernels (clkit's specialised builds finish in the background before
the second) and makes scipy's first calls.

The report gives, per workload, clkit.dask's speed-up over dask-image (target: at least 3)
and its time as a multiple of the identity pass's (target: at most 1.5), with the process's
CPU time per case (every thread, the OpenCL driver's included: a figure that other
processes' load changes less than wall time) and the load average before and after.
"""

import argparse
import json
import os
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import dask  # noqa: E402
import dask.array as da  # noqa: E402
from dask_image import ndfilters  # noqa: E402

import clkit  # noqa: E402
import clkit.dask as cd  # noqa: E402
from clkit._build import tiers  # noqa: E402

#: (at least this many times as fast as dask-image, at most this multiple of the identity)
TARGETS = (3.0, 1.5)
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
          f"{args.rounds} rounds after two warm-up rounds")

    times = {(w, c): [] for w, group in cases.items() for c in group}
    cpu = {(w, c): [] for w, group in cases.items() for c in group}
    load_before = os.getloadavg()
    with dask.config.set(scheduler="threads"):
        for r in range(-2, args.rounds):
            for w, group in cases.items():
                for c, y in group.items():
                    t0, c0 = time.perf_counter(), _cpu_seconds()
                    da.store(y, out, lock=False)
                    if r >= 0:
                        times[(w, c)].append(time.perf_counter() - t0)
                        cpu[(w, c)].append(_cpu_seconds() - c0)
            if r == -2:
                tiers.wait_idle()
    load_after = os.getloadavg()
    # The last round's clkit chain result against dask-image's on a crop across a seam, away
    # from the array's edges (where dask-image's wrap differs: it wraps each chunk's own
    # border, not the array's).
    crop = np.s_[args.chunk - 50:args.chunk + 50, args.chunk - 50:args.chunk + 50]
    check = cases["chain"]["dask-image"][crop].compute(scheduler="threads")
    assert np.allclose(out[crop], check, atol=1e-4), "clkit.dask must equal dask-image"

    report = {"size": args.size, "chunk": args.chunk, "rounds": args.rounds,
              "device": str(device), "cpus": os.cpu_count(), "load_before": load_before,
              "load_after": load_after, "workloads": {}}
    print(f"load average before {_load(load_before)}, after {_load(load_after)} "
          f"(1, 5, 15 min; {os.cpu_count()} cores)")
    for w, group in cases.items():
        t = {c: np.array(times[(w, c)]) for c in group}
        u = {c: np.array(cpu[(w, c)]) for c in group}
        ours = t["clkit.dask"]
        vs_peer = float(np.median(t["dask-image"] / ours))
        vs_dask = float(np.median(ours / t["identity map_overlap"]))
        print(f"\n{w + ':':24s} wall s   CPU s   (wall per round)")
        for c in group:
            print(f"  {c:22s} {np.median(t[c]):6.3f}  {np.median(u[c]):6.3f}   "
                  f"({', '.join(f'{v:.3f}' for v in t[c])})")
        print(f"  clkit.dask: {vs_peer:.2f}x as fast as dask-image "
              f"({'meets' if vs_peer >= TARGETS[0] else 'misses'} the target of "
              f"{TARGETS[0]:g}x); {vs_dask:.2f}x the identity map_overlap's time "
              f"({'meets' if vs_dask <= TARGETS[1] else 'misses'} the target of "
              f"{TARGETS[1]:g}x)")
        report["workloads"][w] = {"seconds": {c: t[c].tolist() for c in group},
                                  "cpu_seconds": {c: u[c].tolist() for c in group},
                                  "speedup_vs_dask_image": vs_peer,
                                  "time_vs_identity_map_overlap": vs_dask}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


def _cpu_seconds():
    """This process's CPU time so far, every thread's (the OpenCL driver's too)."""
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def _load(avg):
    return ", ".join(f"{v:.2f}" for v in avg)


if __name__ == "__main__":
    main()
