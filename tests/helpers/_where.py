"""Which clkit the suite tests, and how a child process gets the same one.

The suite runs against the source checkout (``pytest`` from the repository's
root, as ``make test`` does) or against an installed copy (CI installs the
wheel into a new environment and runs ``pytest`` on this folder from a folder
outside the tree).  A child process must import the clkit the tests import:
from the checkout, the repository goes first on its ``PYTHONPATH``; installed,
nothing is added, and it runs in a folder outside the tree, where
``python -m clkit`` and ``python -c`` cannot pick up the checkout's ``clkit/``
from the current directory.
"""

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import clkit

#: The source tree these tests belong to (its examples/, benchmarks/, setup.cfg).
REPO = Path(__file__).resolve().parents[2]

#: True when the clkit under test is an installed copy, not the checkout's clkit/.
INSTALLED = REPO not in Path(clkit.__file__).resolve().parents

#: Where child processes run: the repository's root, or for an installed copy an empty folder.
CWD = REPO
if INSTALLED:
    CWD = Path(tempfile.mkdtemp(prefix="clkit-tests-"))
    atexit.register(shutil.rmtree, CWD, ignore_errors=True)


#: What goes first on a child process's ``PYTHONPATH`` so that it imports the same clkit.
SOURCE = [] if INSTALLED else [str(REPO)]


def pythonpath(*first, inherited=None) -> str:
    """``PYTHONPATH`` for a child process: ``first``, :data:`SOURCE`, then ``inherited``
    (default: this process's)."""
    inherited = os.environ.get("PYTHONPATH") if inherited is None else inherited
    return os.pathsep.join(filter(None, [*map(str, first), *SOURCE, inherited]))


def child_env(base=None, **more) -> dict:
    """``base`` (default: this process's environment) with :func:`pythonpath`, then ``more``."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = pythonpath(inherited=env.get("PYTHONPATH", ""))
    env.update(more)
    return env
