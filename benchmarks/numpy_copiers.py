"""Numpy in, numpy out on a GPU: whole calls by the number of threads copying through staging.

    python benchmarks/numpy_copiers.py [--device gpu] [--threads 4,8,12,16] [--rounds 10]

``grayscale`` of a 7680x4320 RGB uint8 image and ``convolve`` 5x5 of a 7680x4320 float32 one,
each a new numpy array per call (filled before the clock starts), the result a new numpy array:
median ms of the whole call for each count of copier threads (``_transfer.THREADS``; default
``min(8, cores)``), the counts in turn, twice.  The results are checked against the first
count's.  Host copies are what a numpy call on a GPU waits for; run it again under
``GLIBC_TUNABLES=glibc.cpu.x86_non_temporal_threshold=0x40000`` to see the copies with
streaming stores, which glibc uses only for copies above a threshold (151 MB on a host with a
300 MiB L3).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import clkit
from clkit._memory import transfer as _transfer
from clkit.kernels import convolve, grayscale


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="gpu")
    parser.add_argument("--threads", default="4,8,12,16")
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args(argv)
    device = clkit.select(args.device)
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (4320, 7680, 3), dtype=np.uint8)
    image = rng.random((4320, 7680), dtype=np.float32)
    mask = rng.random((5, 5)).astype(np.float32)
    cases = {"grayscale": (lambda a: grayscale(a, device=device), rgb),
             "convolve 5x5": (lambda a: convolve(a, mask, device=device), image)}
    counts = [int(v) for v in args.threads.split(",")]
    print(device, "default threads", _transfer.THREADS, flush=True)
    reference = {}
    for sweep in range(2):
        for threads in counts:
            _transfer.THREADS = threads
            row = []
            for name, (call, source) in cases.items():
                call(source)
                times = []
                for _ in range(args.rounds):
                    fresh = source.copy()
                    start = time.perf_counter()
                    got = call(fresh)
                    times.append(time.perf_counter() - start)
                got = np.asarray(got)
                np.testing.assert_array_equal(got, reference.setdefault(name, got))
                row.append(f"{name} {np.median(times) * 1e3:.2f} ms")
            print(f"sweep {sweep}, {threads} threads: " + ", ".join(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
