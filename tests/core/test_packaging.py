"""The package as a user installs it: every module and kernel source shipped, every module
imports, every command answers ``--help``, from any directory.

The first tests check the clkit the suite imports: the source checkout in a normal run, the
installed wheel in CI's installed leg (there they check what the wheel holds against this tree).
The last one installs a copy built from this tree into a folder and runs it from elsewhere.
"""

import configparser
import importlib
import importlib.util
import json
import os
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import clkit
import clkit.cli
from clkit._build.source import library_dir

from _where import CWD, INSTALLED, REPO, child_env, pythonpath

KERNEL_SUFFIXES = (".cl", ".h")


def source_modules(package: Path) -> list:
    """The modules of the ``.py`` files under ``package`` (a folder of the source tree)."""
    found = []
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(found)


def kernel_files(folder: Path) -> list:
    return sorted(p.name for p in folder.iterdir() if p.suffix in KERNEL_SUFFIXES)


def reraise(name):
    raise  # (pkgutil calls this inside its except clause, where ImportErrors would be ignored)


def test_every_module_is_shipped_and_imports():
    walked = sorted(["clkit"] + [name for _, name, _ in pkgutil.walk_packages(
        clkit.__path__, "clkit.", onerror=reraise)])
    # a folder without __init__.py is no package: find_packages would leave it out of the wheel
    assert walked == source_modules(REPO / "clkit")
    for name in walked:
        if not name.endswith(".__main__"):  # (running it is the command's business)
            importlib.import_module(name)


def test_every_kernel_source_is_shipped_with_the_type_marker():
    assert kernel_files(library_dir()) == kernel_files(REPO / "kernels_cl")
    assert "grayscale.cl" in kernel_files(library_dir())
    assert (Path(clkit.__file__).parent / "py.typed").is_file()
    assert clkit.load("grayscale").origin == str(library_dir() / "grayscale.cl")


def test_child_processes_import_the_clkit_under_test():
    run = subprocess.run([sys.executable, "-c", "import clkit; print(clkit.__file__)"],
                         capture_output=True, text=True, env=child_env(), cwd=CWD, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == clkit.__file__


@pytest.mark.parametrize("name", list(clkit.cli.COMMANDS))
def test_every_command_answers_help(name):
    run = subprocess.run([sys.executable, "-m", "clkit", name, "--help"], capture_output=True,
                         text=True, env=child_env(), cwd=CWD, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"usage: clkit {name}"), run.stdout
    assert "--device" in run.stdout and run.stderr == ""


def test_the_clkit_command_is_installed():
    if not INSTALLED:
        pytest.skip("a source checkout has no clkit command; CI's installed leg runs this")
    script = Path(sys.executable).parent / "clkit"
    listing = subprocess.run([str(script), "--help"], capture_output=True, text=True,
                             env=child_env(), cwd=CWD, timeout=120)
    assert listing.returncode == 0, listing.stderr
    assert all(name in listing.stdout for name in clkit.cli.COMMANDS), listing.stdout
    for name in ("warmup", "trace"):
        run = subprocess.run([str(script), name, "--help"], capture_output=True, text=True,
                             env=child_env(), cwd=CWD, timeout=120)
        assert run.returncode == 0 and run.stdout.startswith(f"usage: clkit {name}"), run.stderr


def requirement_names(lines: str) -> set:
    return {re.split(r"[<>=!~;\[ ]", line.strip(), maxsplit=1)[0].lower()
            for line in lines.splitlines() if line.strip()}


def test_the_test_extra_installs_every_optional_dependency():
    # CI installs clkit[test]: a module that imports an extra's package must find it there
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    extras = {name: requirement_names(value)
              for name, value in config["options.extras_require"].items()}
    assert {"examples", "plot", "mpi", "test", "docs"} <= set(extras)
    wanted = set().union(*(names for extra, names in extras.items()
                           if extra not in ("test", "docs")))
    assert wanted - extras["test"] == set()


def copy_of_the_tree(folder: Path) -> Path:
    """This tree's files without what builds and runs leave in it (a stale build/ folder would
    put modules long gone into the wheel)."""
    return Path(shutil.copytree(REPO, folder, ignore=shutil.ignore_patterns(
        ".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache",
        ".benchmarks", ".hypothesis", "output")))


def test_a_copy_installed_from_this_tree_runs_from_anywhere(tmp_path):
    target = tmp_path / "site"
    # Build offline with this environment's setuptools when it can make wheels (setuptools 70.1
    # and later, or the wheel package); otherwise let pip fetch the build requirements.
    can_build = (importlib.util.find_spec("setuptools.command.bdist_wheel") is not None
                 if importlib.util.find_spec("setuptools") else False)
    can_build = can_build or importlib.util.find_spec("wheel") is not None
    isolation = ["--no-build-isolation", "--no-index"] if can_build else []
    tree = copy_of_the_tree(tmp_path / "tree")
    build = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet",
                            *isolation, "--target", str(target), str(tree)],
                           capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert build.returncode == 0, build.stdout + build.stderr
    assert source_modules(target / "clkit") == source_modules(REPO / "clkit")
    assert kernel_files(target / "clkit" / "kernels_cl") == kernel_files(REPO / "kernels_cl")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # ahead of whatever the environment adds (pyopencl may live on PYTHONPATH)
    env = dict(os.environ, PYTHONPATH=pythonpath(target))
    code = ("import clkit, clkit._build.source as s; print(clkit.__file__); print(s.library_dir()); "
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


def test_the_tests_give_child_processes_the_clkit_under_test():
    # A test that put the checkout on a child process's path itself would test the checkout's
    # clkit in CI's installed leg; tests/helpers/_where.py says what a child gets.
    for path in sorted((REPO / "tests").rglob("*.py")):
        if path.name == "_where.py":
            continue
        for line in path.read_text().splitlines():
            if "PYTHONPATH" in line and "pythonpath(" not in line:
                assert not re.search(r"\b(REPO|ROOT|root|parents)\b", line), f"{path}: {line}"
