"""The first call of each library function and of each new variant, from empty caches.

    python benchmarks/first_call.py OUTDIR [--device SPEC] [--size N] [--loop] [--warm]

Each measurement runs in a new Python process whose clkit cache and driver
caches (PoCL's, NVIDIA's) are new, empty folders, as on a fresh install.  In
that process every line of the table calls a function twice on an NxN image
(512 by default) and prints both times: the first call of a function, then
calls that each need a new variant of it (mask size, border mode, image
dtype, Gaussian sigma).  ``--warm`` runs the same lines a second time in a
new process that keeps the first one's caches (a later session).
``--loop`` also times ten sigmas and ten mask sizes on a 3840x2160 float32
image, cold (new variants, in the process of the table) and warm (the same
calls again with every specialised variant built, untimed, before).  With
``CLKIT_BACKGROUND_BUILDS=0`` a call waits for its specialised build, as
clkit did before it had tiers.

Writes OUTDIR/first_call.json and prints the tables (markdown).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The table: (label, function, arguments).  The arguments are built in the child process.
LINES = [
    ("vector_add", "vector_add", {}),
    ("vector_add, int32 after float32", "vector_add", {"dtype": "int32"}),
    ("a one-line kernel of its own", "one_line", {}),
    ("grayscale", "grayscale", {}),
    ("convolve 3x3, reflect", "convolve", {"mask": 3}),
    ("convolve 5x5, reflect", "convolve", {"mask": 5}),
    ("convolve 7x7, reflect", "convolve", {"mask": 7}),
    ("convolve 5x5, wrap", "convolve", {"mask": 5, "mode": "wrap"}),
    ("convolve 5x5, uint8 image", "convolve", {"mask": 5, "dtype": "uint8"}),
    ("gaussian_blur sigma 2", "gaussian_blur", {"sigma": 2.0}),
    ("gaussian_blur sigma 3", "gaussian_blur", {"sigma": 3.0}),
    ("mandelbrot", "mandelbrot", {}),
]
SIGMAS = [0.8, 1.1, 1.5, 1.9, 2.4, 3.0, 3.6, 4.3, 5.1, 6.0]
MASKS = [3, 4, 5, 6, 7, 8, 9, 11, 13, 15]


def _random_mask(n: int, rng):
    # a general (not separable) mask, as a user's own filter would be
    return rng.standard_normal((n, n)) / (n * n)


def _input(kind: str, args: dict, size, rng, cache):
    """The call's input image, made on first use and kept (made outside the timed calls)."""
    import numpy as np
    h, w = size
    dtype = args.get("dtype", "float32")
    key = (kind, dtype, h, w)
    if key not in cache:
        if kind == "vector_add":
            cache[key] = (rng.random(h * w) * 100).astype(dtype)
        elif kind == "grayscale":
            cache[key] = (rng.random((h, w, 3)) * 255).astype(np.uint8)
        elif kind in ("convolve", "gaussian_blur"):
            cache[key] = (rng.random((h, w)) * 255).astype(dtype)
    return cache.get(key)


def _call(fn, kind: str, args: dict, size, device, rng, cache):
    import numpy as np
    h, w = size
    image = _input(kind, args, size, rng, cache)
    if kind == "vector_add":
        return fn(image, image, device=device)
    if kind == "one_line":
        # the least a driver compiles: what any new kernel costs at least
        prg = fn.Program.from_source(f"__kernel void one_line_{len(cache)}(__global float* a) "
                                     "{ a[get_global_id(0)] += 1.0f; }")
        cache[len(cache)] = prg
        return prg.kernel(prg.kernel_names[0])(np.zeros(64, np.float32), device=device)
    if kind == "grayscale":
        return fn(image, device=device)
    if kind == "convolve":
        mask = _random_mask(args["mask"], np.random.default_rng(args["mask"]))
        return fn(image, mask, mode=args.get("mode", "reflect"), device=device)
    if kind == "gaussian_blur":
        return fn(image, args["sigma"], mode=args.get("mode", "reflect"), device=device)
    return fn(w, h, device=device)


def _tier_counts():
    try:
        from clkit._build import tiers as _tiers
    except ImportError:
        return None
    return _tiers.stats()


def child(opts) -> dict:
    """Run the table (and the loops) in this process; return the figures."""
    import numpy as np
    import clkit
    from clkit import kernels

    device = clkit.select(opts.device)
    rng = np.random.default_rng(0)
    cache: dict = {}
    rows = []
    for label, kind, args in LINES:
        fn = clkit if kind == "one_line" else getattr(kernels, kind)
        _input(kind, args, (opts.size, opts.size), rng, cache)
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            _call(fn, kind, args, (opts.size, opts.size), device, rng, cache)
            times.append((time.perf_counter() - t0) * 1e3)
        rows.append({"line": label, "first_ms": times[0], "second_ms": times[1]})
    result = {"device": str(device), "size": opts.size, "table": rows}
    if opts.loop:
        big = (2160, 3840)
        loops = {}
        for name, kind, values in (("ten sigmas", "gaussian_blur", SIGMAS),
                                   ("ten mask sizes", "convolve", MASKS)):
            fn = getattr(kernels, kind)
            calls = [{"sigma": v} if kind == "gaussian_blur" else {"mask": v} for v in values]

            def lap():
                t0 = time.perf_counter()
                for args in calls:
                    _call(fn, kind, args, big, device, rng, cache)
                return time.perf_counter() - t0

            _input(kind, calls[0], big, rng, cache)
            cold = lap()
            # warm: every specialised build done (untimed), as in a later session
            with _forced("specialised"):
                lap()
                warm = lap()
            loops[name] = {"cold_s": cold, "warm_s": warm}
        result["loops"] = loops
    result["tiers"] = _tier_counts()
    return result


def _forced(tier: str):
    """Force a tier where clkit has tiers (a no-op before them)."""
    try:
        from clkit._build import tiers as _tiers
    except ImportError:
        return contextlib.nullcontext()
    return _tiers.tier(tier)


def _run_child(opts, cache_root: Path, extra_env=None) -> dict:
    env = dict(os.environ)
    for var, sub in (("CLKIT_CACHE_DIR", "clkit"), ("POCL_CACHE_DIR", "pocl"),
                     ("CUDA_CACHE_PATH", "nvidia")):
        env[var] = str(cache_root / sub)
    env.pop("CLKIT_CACHE", None)
    env.pop("CUDA_CACHE_DISABLE", None)
    env.update(extra_env or {})
    args = [sys.executable, __file__, "--child", "--size", str(opts.size)]
    if opts.device:
        args += ["--device", opts.device]
    if opts.loop:
        args.append("--loop")
    out = subprocess.run(args, env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _table(run: dict, title: str) -> str:
    lines = [f"{title} ({run['device']}, {run['size']}x{run['size']})", "",
             "| first call of | first call | second call |", "| --- | ---: | ---: |"]
    for row in run["table"]:
        lines.append(f"| {row['line']} | {row['first_ms']:,.1f} ms | {row['second_ms']:,.1f} ms |")
    for name, lap in (run.get("loops") or {}).items():
        lines.append(f"| {name}, 3840x2160: cold / warm | {lap['cold_s']:.2f} s | "
                     f"{lap['warm_s']:.2f} s ({lap['cold_s'] / lap['warm_s']:.1f}x) |")
    if run.get("tiers"):
        lines += ["", f"tiers: {run['tiers']}"]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--device", default=None)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--loop", action="store_true", help="also the 3840x2160 loops")
    ap.add_argument("--warm", action="store_true", help="also a second session, caches kept")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    opts = ap.parse_args(argv)
    if opts.child:
        print(json.dumps(child(opts)))
        return
    if not opts.outdir:
        ap.error("give OUTDIR, the folder for first_call.json")
    outdir = Path(opts.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    runs = {}
    with tempfile.TemporaryDirectory(prefix="clkit-first-call-") as tmp:
        runs["cold"] = _run_child(opts, Path(tmp))
        print(_table(runs["cold"], "Empty caches"), "\n", flush=True)
        if opts.warm:
            runs["later session"] = _run_child(opts, Path(tmp))
            print(_table(runs["later session"], "Caches of the run above"), "\n", flush=True)
    (outdir / "first_call.json").write_text(json.dumps(runs, indent=1))
    print(f"wrote {outdir / 'first_call.json'}")


if __name__ == "__main__":
    main()
