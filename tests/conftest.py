"""Test set-up: every device test runs once per visible OpenCL device.

A test that takes a ``device`` argument is parametrised over every device
clkit sees (PoCL and Oclgrind in CI), with ids such as ``pocl-cpu-1:0``.
``CLKIT_TEST_DEVICES`` (comma-separated device specs) narrows the set.
With no device at all the run stops with an error rather than skipping.

The suite tests the clkit it imports: the checkout's (``pytest`` from the
repository's root) or an installed copy (``pytest`` run on this folder from
elsewhere, as CI's wheel leg does; ``CLKIT_TEST_INSTALLED=1`` then makes sure
of it).  ``tests/helpers/_where.py`` gives child processes the same one.
"""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

# The helpers every suite imports (_reference, _cli, ...) are in tests/helpers.
sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))

import clkit  # noqa: E402
from clkit._memory import transfer as _transfer  # noqa: E402
from clkit._platform.devices import select_many  # noqa: E402

from _reference import reporting, skip_on_simulator  # noqa: E402
from _where import INSTALLED  # noqa: E402


def _test_devices():
    found = clkit.devices()
    narrow = os.environ.get("CLKIT_TEST_DEVICES")
    if narrow:
        chosen = select_many([s for s in narrow.split(",") if s.strip()])
        found = [d for d in found if d in chosen]
    return found


def pytest_configure(config):
    if os.environ.get("CLKIT_TEST_INSTALLED") == "1" and not INSTALLED:
        raise pytest.UsageError(
            f"CLKIT_TEST_INSTALLED=1, but the clkit imported is the checkout's ({clkit.__file__}): "
            "run pytest from a folder outside the source tree")
    try:
        devices = _test_devices()
    except clkit.ClkitError as exc:
        raise pytest.UsageError(f"clkit tests need an OpenCL device: {exc}") from exc
    if not devices:
        raise pytest.UsageError("clkit tests need an OpenCL device; none is visible "
                                "(CLKIT_TEST_DEVICES / CLKIT_VISIBLE_DEVICES hide them all?)")
    config.clkit_devices = devices


def pytest_report_header(config):
    return [f"clkit {clkit.__version__} from {Path(clkit.__file__).parent}"
            f" ({'an installed copy' if INSTALLED else 'the source checkout'})",
            "clkit devices: " + "; ".join(str(d) for d in config.clkit_devices)]


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        devices = metafunc.config.clkit_devices
        metafunc.parametrize("device", devices, ids=[d.label for d in devices])


@pytest.fixture
def rng():
    """A random generator seeded per test, so that failures reproduce."""
    return np.random.default_rng(12345)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A fresh, empty disk cache and no in-memory builds."""
    from clkit._platform.runtime import drop_held
    folder = tmp_path / "cache"
    monkeypatch.setenv("CLKIT_CACHE_DIR", str(folder))
    monkeypatch.delenv("CLKIT_CACHE", raising=False)
    drop_held()
    yield folder
    drop_held()


@pytest.fixture
def discrete(device, monkeypatch):
    """``device`` as if its memory were its own (a GPU's), with the staged copies counted.

    CPU drivers share memory with the host, so clkit uses numpy memory in place there and the
    staged path only runs on GPUs; this fixture makes it run here too.
    """
    skip_on_simulator(device, "megabytes of staged data")
    staged = {"upload": 0, "download": 0}

    def counted(name):
        original = getattr(_transfer.Staging, name)

        def run(self, *args, **kwargs):
            staged[name] += 1
            return original(self, *args, **kwargs)
        return run

    monkeypatch.setattr(_transfer.Staging, "upload", counted("upload"))
    monkeypatch.setattr(_transfer.Staging, "download", counted("download"))
    # a queue's staging buffers are made before its first transfer needs them, not beside it
    made = _transfer.staging
    monkeypatch.setattr(_transfer, "staging", lambda rt, queue, wait=True: made(rt, queue))
    with reporting(device, unified_memory=False):
        yield device, staged
