"""Library builds print nothing, also the first ones, with every driver's kernel cache empty.

PoCL's compiler writes its count of warnings ("12 warnings generated.") straight to the
process's stderr; a fresh install has an empty PoCL cache, so every library program is compiled
from source the first time.  A child process with empty PoCL and clkit caches runs every library
kernel on every visible device; its stderr must stay empty.
"""

import os
import subprocess
import sys

import clkit
from _where import child_env

SCRIPT = r"""
import warnings
import numpy as np
import clkit
from clkit.kernels import (convolve, depth_to_points, gaussian_blur, grayscale, hello,
                           mandelbrot, vector_add)

warnings.simplefilter("error")  # a CompilerWarning from a library build fails the run too
rng = np.random.default_rng(5)
for dev in clkit.devices():
    assert hello(device=dev) == "Hello, World!"
    for dtype in (np.float32, np.int64) + ((np.float64,) if dev.fp64 else ()):
        a = np.arange(37).astype(dtype)
        assert (vector_add(a, a, device=dev) == a + a).all()
    for dtype in (np.uint8, np.float32):
        grayscale(rng.integers(0, 256, (5, 7, 3)).astype(dtype), device=dev)
    image = rng.random((6, 41)).astype(np.float32)
    convolve(image, rng.random((3, 4)), device=dev)             # direct
    convolve(image, np.outer([1, 2, 1], [1, 0, -1]), device=dev)  # two passes, zero taps
    convolve(image.astype(np.int64), np.ones((3, 3)), mode="wrap", device=dev)
    gaussian_blur(image, 1.5, device=dev)
    gaussian_blur(np.dstack([image] * 3), 0.8, mode="constant", device=dev)
    if dev.fp64:
        gaussian_blur(image.astype(np.float64), 1.0, device=dev)
    mandelbrot(9, 5, max_iter=20, device=dev)
    depth_to_points(rng.integers(0, 900, (4, 6)).astype(np.uint16), 5.0, 5.0, 3.0, 2.0,
                    device=dev)
    # A library program whose build makes the compiler warn (a macro of clkit.h redefined):
    # the warning is in the build's log, nothing on stderr.
    prg = clkit.load("grayscale", defines={"T": "float", "CN": 3, "CLK_VSTORE": "x"},
                     device=dev)
    assert "CLK_VSTORE" in prg.build(dev).log, prg.build(dev).log
print("ok")
"""


def test_library_builds_print_nothing_with_empty_driver_caches(tmp_path):
    env = child_env(POCL_CACHE_DIR=str(tmp_path / "pocl"), CLKIT_CACHE_DIR=str(tmp_path / "clkit"))
    env.pop("CLKIT_DEBUG", None)
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=900, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr
    assert proc.stderr == ""


FAILING = r"""
import sys
import numpy as np
import clkit

for dev in clkit.devices():
    try:
        clkit.Program.from_source(
            "__kernel void bad(__global float* x) { x[get_global_id(0)] = undeclared; }",
            device=dev).bad(np.zeros(4, np.float32), device=dev)
    except clkit.BuildError as exc:
        assert "undeclared" in str(exc), str(exc)
        print(dev.id)
"""


def test_a_failed_build_prints_nothing_beside_its_build_error(tmp_path):
    # Clang-based compilers write "1 error generated." to the process's stderr themselves
    env = child_env(POCL_CACHE_DIR=str(tmp_path / "pocl"), CLKIT_CACHE_DIR=str(tmp_path / "clkit"))
    env.pop("CLKIT_DEBUG", None)
    proc = subprocess.run([sys.executable, "-c", FAILING], env=env, capture_output=True,
                          text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.split() == [d.id for d in clkit.devices()]
    assert proc.stderr == ""


def test_only_the_compilers_counts_are_kept_from_stderr_while_a_library_program_builds(capfd):
    # The redirection is process-wide: what other threads write meanwhile (a background build
    # runs beside the caller) comes out afterwards; the counts stay in the build's log.
    from clkit._build import build as _build
    held = []
    with _build._driver_output_held(held):
        os.write(2, b"12 warnings generated.\nanother thread's line\n1 warning and 2 errors "
                    b"generated.\n")
    err = capfd.readouterr().err
    assert err == "another thread's line\n"
    assert "12 warnings generated." in held[0] and "another thread's line" in held[0]
