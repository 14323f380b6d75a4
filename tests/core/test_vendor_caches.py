"""Drivers' own caches follow clkit's cache home when it moves to the temp folder.

Where the user's cache folder cannot be written, clkit points ``XDG_CACHE_HOME`` at a folder
of the temp folder (see :func:`clkit._cache.make_cache_home_usable`); PoCL, Intel's and AMD's
runtimes and Mesa follow it, but NVIDIA's driver keeps its JIT cache in ``$HOME/.nv`` unless
``CUDA_CACHE_PATH`` says otherwise, and made the home folder that was not there.
"""

import os
import subprocess
import sys

from _where import CWD, child_env

SCRIPT = "import os, clkit; clkit.devices(); print(os.environ.get('CUDA_CACHE_PATH'))"


def run_without_home(tmp_path, **more):
    env = child_env({k: v for k, v in os.environ.items()
                     if k not in ("XDG_CACHE_HOME", "CLKIT_CACHE_DIR", "POCL_CACHE_DIR",
                                  "CUDA_CACHE_PATH")},
                    HOME=str(tmp_path / "no-such-home"), TMPDIR=str(tmp_path / "tmp"), **more)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300, cwd=CWD)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_nvidia_s_jit_cache_moves_with_the_cache_home(tmp_path):
    moved = tmp_path / "tmp" / f"clkit-cache-{os.getuid()}"
    assert run_without_home(tmp_path) == str(moved / "nv" / "ComputeCache")


def test_a_jit_cache_the_user_placed_stays(tmp_path):
    mine = str(tmp_path / "my-nv-cache")
    assert run_without_home(tmp_path, CUDA_CACHE_PATH=mine) == mine
