"""clkit.mpi under mpiexec (MPICH from PyPI): results on the root equal one process's."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from _reference import assert_counts_equal, mandelbrot_reference
from _where import CWD, REPO, child_env
from clkit import kernels

HERE = os.path.dirname(os.path.abspath(__file__))


def mpiexec():
    found = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or \
        shutil.which("mpiexec")
    assert found, "mpiexec not found: pip install 'clkit[mpi]' (mpi4py and mpich)"
    return found


# The ranks' device, and the one-process reference's: only the CPU driver unless CLKIT_DEVICE
# names another (ranks share it, and the simulator would make this slow).
RANK_DEVICE = os.environ.get("CLKIT_DEVICE", "cpu")


def run_mpi(n, *args, timeout=300):
    return subprocess.run([mpiexec(), "-n", str(n), sys.executable, *args], capture_output=True,
                          text=True, timeout=timeout, cwd=CWD,
                          env=child_env(CLKIT_DEVICE=RANK_DEVICE))


@pytest.mark.parametrize("ranks", [2, 3])
def test_every_function_equals_one_process(ranks):
    run = run_mpi(ranks, os.path.join(HERE, "check_functions.py"))
    assert run.returncode == 0, run.stdout + run.stderr
    for name in ("convolve", "convolve-tiny", "gaussian_blur", "grayscale", "mandelbrot",
                 "vector_add"):
        assert f"ok {name}\n" in run.stdout
    # the root's mistake: the root raises it, every other rank learns of it
    assert run.stdout.count("ValueError convolve: mask must be a non-empty 2-D array") == 1
    assert run.stdout.count("RankError rank") == ranks - 1


@pytest.mark.parametrize("ranks", [2, 3])
def test_command_line(tmp_path, ranks, rng):
    image = rng.random((59, 41), dtype=np.float32)
    np.save(tmp_path / "in.npy", image)
    out = tmp_path / "out.npy"
    run = run_mpi(ranks, "-m", "clkit.mpi", "convolve", str(tmp_path / "in.npy"), str(out),
                  "--mask", "sobel-x", "--mode", "nearest")
    assert run.returncode == 0, run.stderr
    from clkit._io.masks import mask_from_spec
    expected = kernels.convolve(image, mask_from_spec("sobel-x"), mode="nearest",
                                device=RANK_DEVICE)
    np.testing.assert_array_equal(np.load(out), expected)
    run = run_mpi(ranks, "-m", "clkit.mpi", "blur", str(tmp_path / "in.npy"), str(out),
                  "--sigma", "2")
    assert run.returncode == 0, run.stderr
    expected = kernels.gaussian_blur(image, 2.0, device=RANK_DEVICE)
    np.testing.assert_array_equal(np.load(out), expected)


def test_mandelbrot_command_draws_what_clkit_mandelbrot_draws(tmp_path):
    # No --window: both fit the whole set to the 3:1 picture, x from -5 to 4, y from -1.5 to 1.5.
    run = run_mpi(2, "-m", "clkit.mpi", "mandelbrot", str(tmp_path / "mpi.npy"), "--size",
                  "60x20", "--max-iter", "40")
    assert run.returncode == 0, run.stderr
    one = subprocess.run([sys.executable, "-m", "clkit", "mandelbrot", str(tmp_path / "one.npy"),
                          "--size", "60x20", "--max-iter", "40", "--device", RANK_DEVICE],
                         capture_output=True, text=True, cwd=CWD, env=child_env(), timeout=120)
    assert one.returncode == 0, one.stderr
    counts = np.load(tmp_path / "mpi.npy")
    np.testing.assert_array_equal(counts, np.load(tmp_path / "one.npy"))
    assert_counts_equal(counts, mandelbrot_reference(60, 20, xmin=-5, xmax=4, ymin=-1.5,
                                                     ymax=1.5, max_iter=40))


def test_command_line_errors_end_every_rank(tmp_path):
    missing = tmp_path / "missing.png"
    run = run_mpi(3, "-m", "clkit.mpi", "blur", str(missing), str(tmp_path / "o.png"),
                  "--sigma", "1", timeout=120)
    assert run.returncode != 0
    assert run.stderr.count("clkit.mpi: error:") == 1 and "missing.png" in run.stderr
    assert not (tmp_path / "o.png").exists()
    run = run_mpi(2, "-m", "clkit.mpi", "convolve", str(missing), str(tmp_path / "o.png"),
                  "--mask", "nonsense", timeout=120)
    assert run.returncode != 0 and run.stderr.count("clkit.mpi: error:") == 1


def test_tutorial_under_mpiexec():
    run = run_mpi(2, str(REPO / "examples" / "09_mpi.py"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "across 2 rank(s); equal to the single-process result" in run.stdout
