"""A user's own kernel called with numpy arrays: the whole call, for a few sizes.

    python benchmarks/user_numpy.py [--device gpu] [--rounds 10]

``saxpy(alpha, x, y)`` (``y = alpha * x + y``) on new float32 numpy arrays of 2^18, 2^22 and
2^24 elements, the call and its wait timed together (both arrays go up, ``y`` comes home):
median ms per call and the GB/s of the 3 n * 4 bytes moved.  The result is checked.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import clkit

SAXPY = """
__kernel void saxpy(const float alpha, __global const float* x, __global float* y)
{
    size_t i = get_global_id(0);
    y[i] = alpha * x[i] + y[i];
}
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="gpu")
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args(argv)
    device = clkit.select(args.device)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "saxpy.cl"
        path.write_text(SAXPY)
        prg = clkit.load(path, device=device)
        print(device, flush=True)
        for n in (1 << 18, 1 << 22, 1 << 24):
            prg.saxpy(2.5, np.ones(n, np.float32), np.ones(n, np.float32)).wait()
            times = []
            for _ in range(args.rounds):
                x = np.full(n, 1.0, np.float32)
                y = np.full(n, 2.0, np.float32)
                start = time.perf_counter()
                prg.saxpy(2.5, x, y).wait()
                times.append(time.perf_counter() - start)
                assert y[0] == 4.5 and y[-1] == 4.5
            ms = float(np.median(times)) * 1e3
            print(f"saxpy, 2^{n.bit_length() - 1} floats: {ms:.2f} ms a call, "
                  f"{3 * n * 4 / ms / 1e6:.1f} GB/s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
