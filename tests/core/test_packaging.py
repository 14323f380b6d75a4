"""An installed (not editable) clkit finds its kernel sources from any directory."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import clkit

ROOT = Path(__file__).resolve().parents[2]


def test_installed_copy_finds_its_kernels(tmp_path):
    target = tmp_path / "site"
    # Build offline with this environment's setuptools when it can make wheels (setuptools 70.1
    # and later, or the wheel package); otherwise let pip fetch the build requirements.
    can_build = (importlib.util.find_spec("setuptools.command.bdist_wheel") is not None
                 if importlib.util.find_spec("setuptools") else False)
    can_build = can_build or importlib.util.find_spec("wheel") is not None
    isolation = ["--no-build-isolation", "--no-index"] if can_build else []
    build = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet",
                            *isolation, "--target", str(target), str(ROOT)],
                           capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert build.returncode == 0, build.stdout + build.stderr
    assert (target / "clkit" / "kernels_cl" / "grayscale.cl").is_file()
    assert (target / "clkit" / "kernels_cl" / "clkit.h").is_file()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # ahead of whatever the environment adds (pyopencl may live on PYTHONPATH)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [
        str(target), os.environ.get("PYTHONPATH")])))
    code = ("import clkit, clkit._source as s; print(clkit.__file__); print(s.library_dir()); "
            "print(clkit.load('grayscale').origin)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=elsewhere, timeout=120)
    assert run.returncode == 0, run.stderr
    module, library, origin = run.stdout.split()
    assert module.startswith(str(target)) and library.startswith(str(target))
    assert origin == str(target / "clkit" / "kernels_cl" / "grayscale.cl")
    devices = subprocess.run([sys.executable, "-m", "clkit", "devices", "--json"],
                             capture_output=True, text=True, env=env, cwd=elsewhere, timeout=120)
    assert devices.returncode == 0, devices.stderr
    # the installed copy sees the devices this process sees, whichever implementations they are
    assert [(d["id"], d["name"]) for d in json.loads(devices.stdout)] == \
        [(d.id, d.name) for d in clkit.devices()]
