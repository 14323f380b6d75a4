"""The files of clkit one library call passes: a first call of the process, then a warm one.

    python benchmarks/call_walk.py [DEVICE] [--size WxH]

``sys.setprofile`` records the file of every Python function clkit runs during one
``clkit.kernels.convolve`` call (numpy image, 5x5 mask, numpy result) after the package is
imported; each file is named once, in the order first reached. docs/architecture.md walks
the warm call.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import clkit
import clkit.kernels as ck

ROOT = os.path.dirname(clkit.__file__)


def walk(call) -> list[str]:
    """The clkit files ``call()`` passes, in the order first reached."""
    seen: dict = {}

    def profile(frame, event, arg):
        if event == "call":
            name = frame.f_code.co_filename
            if name.startswith(ROOT):
                seen.setdefault(os.path.relpath(name, ROOT), None)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return list(seen)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("device", nargs="?", default=None)
    ap.add_argument("--size", default="96x64", help="image WxH (default 96x64)")
    opts = ap.parse_args(argv)
    width, _, height = opts.size.lower().partition("x")
    device = clkit.select(opts.device)
    rng = np.random.default_rng(0)
    image = rng.random((int(height), int(width)), dtype=np.float32)
    mask = rng.random((5, 5))
    for name in ("first", "warm"):
        files = walk(lambda: ck.convolve(image, mask, device=device))
        print(f"{name}: {len(files)} files: {', '.join(files)}")


if __name__ == "__main__":
    main()
