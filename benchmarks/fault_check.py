"""Faults by hand: a kernel that writes far outside its buffer, forked and spawned workers.

    python benchmarks/fault_check.py OUT_DIR [--device SPEC]

Each check runs in a child process of its own, so that a crash (a CPU driver can let a wild
write kill the process) is recorded instead of ending the run:

- ``out_of_bounds``: a device array is made, then a user kernel writes 64 GiB past its buffer;
  then ten 512x512 ``convolve`` calls (each checked against ``scipy.ndimage.convolve``) and one
  launch with the device array made before the fault. Recorded: each call's outcome, type and
  message.
- ``fork_pool``: the parent runs ``convolve``, then a ``fork`` pool of 2 maps it over 4 images
  (60 s limit): the error the pool raises, and how long it took.
- ``spawn_pool`` and ``forkserver_pool``: the same with those start methods; the results are
  checked against scipy.

Writes ``OUT_DIR/fault_check.json`` and prints one line per outcome.
"""

import argparse
import json
import multiprocessing
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

WILD = """__kernel void wild(__global float* x) {
    x[(size_t)get_global_id(0) * 4096 * 4096 + 16 * 1024 * 1024 * 1024UL] = 1.0f;
}"""
FILL = "__kernel void fill(__global float* x, const float v) { x[get_global_id(0)] = v; }"
MASK = np.array([[1, 2, 0], [0.5, 1, -1], [3, 0, 1]], np.float32)


def _outcome(call):
    start = time.perf_counter()
    try:
        call()
        result = {"outcome": "ok"}
    except Exception as exc:  # noqa: BLE001 - what happened is the measurement
        result = {"outcome": "error", "type": type(exc).__name__, "message": str(exc),
                  "context_lost": getattr(exc, "context_lost", None)}
    result["seconds"] = round(time.perf_counter() - start, 4)
    return result


def _convolve_checked(image, device):
    import scipy.ndimage

    from clkit.kernels import convolve
    got = convolve(image, MASK, device=device)
    want = scipy.ndimage.convolve(image, MASK)
    if not np.allclose(got, want, rtol=1e-5, atol=1e-4):
        raise AssertionError(f"wrong result: largest difference {np.abs(got - want).max():g}")


def out_of_bounds(device):
    import clkit
    rng = np.random.default_rng(0)
    report = {"device": str(clkit.select(device))}
    before = clkit.to_device(np.zeros(1024, np.float32), device=device)
    fill = clkit.Program.from_source(FILL, device=device).fill
    wild = clkit.Program.from_source(WILD, device=device).wild
    report["wild_kernel"] = _outcome(lambda: wild(before, global_size=1024))
    report["convolve_after"] = [
        _outcome(lambda: _convolve_checked(rng.random((512, 512), dtype=np.float32), device))
        for _ in range(10)]
    report["array_from_before"] = _outcome(lambda: fill(before, 1.0))
    return report


def _convolve(image, device):
    from clkit.kernels import convolve
    return convolve(image, MASK, device=device)


def pool(method, device):
    import functools

    import scipy.ndimage
    rng = np.random.default_rng(1)
    images = [rng.random((256, 256), dtype=np.float32) for _ in range(4)]
    if method == "fork":
        _convolve(images[0], device)  # the parent has used OpenCL before it forks

    def run():
        with multiprocessing.get_context(method).Pool(2) as workers:
            results = workers.map_async(functools.partial(_convolve, device=device),
                                        images).get(timeout=60)
        for image, result in zip(images, results):
            if not np.allclose(result, scipy.ndimage.convolve(image, MASK), rtol=1e-5,
                               atol=1e-4):
                raise AssertionError("wrong result")
    return _outcome(run)


CHECKS = {
    "out_of_bounds": out_of_bounds,
    "fork_pool": lambda device: pool("fork", device),
    "spawn_pool": lambda device: pool("spawn", device),
    "forkserver_pool": lambda device: pool("forkserver", device),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--device", default=None, help="device spec (default: the best device)")
    ap.add_argument("--check", choices=sorted(CHECKS), help=argparse.SUPPRESS)  # one, in a child
    opts = ap.parse_args(argv)
    if opts.check:
        print(json.dumps(CHECKS[opts.check](opts.device)))
        return
    opts.out_dir.mkdir(parents=True, exist_ok=True)
    report = {}
    for name in CHECKS:
        cmd = [sys.executable, __file__, str(opts.out_dir), "--check", name]
        if opts.device:
            cmd += ["--device", opts.device]
        start = time.perf_counter()
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
        except subprocess.TimeoutExpired:
            report[name] = {"outcome": "hung", "seconds": 240}
        else:
            lines = done.stdout.strip().splitlines()
            if done.returncode == 0 and lines:
                report[name] = json.loads(lines[-1])
            else:
                report[name] = {"outcome": "crashed", "returncode": done.returncode,
                                "stderr": done.stderr[-2000:]}
        report[name]["wall_seconds"] = round(time.perf_counter() - start, 2)
        print(f"{name}: {json.dumps(report[name])[:600]}", flush=True)
    (opts.out_dir / "fault_check.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
