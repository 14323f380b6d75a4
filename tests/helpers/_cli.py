"""Running the ``clkit`` command as a user would, and reading what it wrote.

Shared by the command's tests (images, bad files, bench): ``clkit(...)``
runs ``python -m clkit`` in a subprocess, with the clkit the tests import; ``ok``
and ``fails`` check its exit status and stderr; ``save`` and ``read`` write
and read images with Pillow, independently of clkit's own image code.
"""

import subprocess
import sys

import numpy as np
from PIL import Image
from _where import CWD, REPO, child_env  # noqa: F401 (REPO: for the command's tests)


#: Camera intrinsics of the point-cloud tests, in pixels.
INTRINSICS = dict(fx=50.0, fy=45.5, cx=9.5, cy=6.25)


def clkit(*args, env=None, timeout=300):
    """Run ``python -m clkit ARGS`` as a user would (``env`` gets :func:`_where.child_env`)."""
    return subprocess.run([sys.executable, "-m", "clkit", *map(str, args)], cwd=CWD,
                          capture_output=True, text=True, timeout=timeout, env=child_env(env))


def ok(proc):
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr
    return proc


def fails(proc, *words):
    """Exit status 2 and one line on stderr that contains every word."""
    assert proc.returncode == 2, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("clkit: error: "), lines[0]
    for word in words:
        assert word in lines[0], f"{word!r} not in {lines[0]!r}"
    return lines[0]


def save(path, array):
    Image.fromarray(array).save(path)
    return path


def read(path):
    with Image.open(path) as img:
        return np.asarray(img)


def intrinsic_args(**kw):
    values = {**INTRINSICS, **kw}
    return [arg for k, v in values.items() for arg in (f"--{k}", v)]
