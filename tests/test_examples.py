"""Every tutorial script runs on its own and passes its own checks (exit status 0).

The scripts assert their results against numpy/scipy/OpenCV themselves; this
runs them as a user would, ``python examples/NN_name.py``, with the clkit
under test (the checkout's or an installed copy), on the default device.  Their pictures go to
``examples/output/`` (ignored by git).
"""

import subprocess
import sys

import pytest

import clkit
from _where import REPO, child_env

EXAMPLES = sorted((REPO / "examples").glob("[0-9][0-9]_*.py")) + [REPO / "examples" / "demo.py"]


def test_the_tutorials_are_there():
    names = [p.name for p in EXAMPLES]
    for expected in ("01_hello_world.py", "02_devices.py", "03_vector_add.py", "04_grayscale.py",
                     "05_convolution.py", "06_mandelbrot.py", "07_depth_to_points.py",
                     "08_multi_device.py", "09_mpi.py", "10_where_time_goes.py"):
        assert expected in names


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(script):
    proc = subprocess.run([sys.executable, str(script)], cwd=REPO, env=child_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{script.name} failed:\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.strip(), f"{script.name} printed nothing"


@pytest.mark.parametrize("pair", [False, True], ids=["one device", "two devices"])
def test_the_multi_device_tutorial_says_how_many_devices_it_used(pair):
    env = child_env(CLKIT_VISIBLE_DEVICES=clkit.select().id)
    if pair:
        pocl = [d for d in clkit.devices() if d.short_platform == "pocl"]
        if not pocl:
            pytest.skip("needs PoCL to make two CPU devices")
        kind = "pthread" if pocl[0].driver.split(".")[0] in ("1", "2", "3") else "cpu"
        env.update(POCL_DEVICES=f"{kind} {kind}", CLKIT_VISIBLE_DEVICES="pocl")
    env.pop("CLKIT_DEVICE", None)
    proc = subprocess.run([sys.executable, str(REPO / "examples" / "08_multi_device.py")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = proc.stdout.strip().splitlines()
    if pair:
        assert "on 2 devices together" in last[-1] and "default device" in last[-1], last
    else:
        assert "on the only device" in last[-2] and "device(s)" not in proc.stdout, last
        assert last[-1].startswith("For two CPU devices: POCL_DEVICES=")
