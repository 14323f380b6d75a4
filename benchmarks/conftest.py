"""Benchmarks: each group compares clkit with its baselines in the same run.

Every benchmark is named ``test_<group>__<variant>``; a group is one case of
:mod:`clkit.bench` (one kernel at one size) and holds its variants: the
baselines (serial Python, numpy, scipy, OpenCV, torch, cupy, where installed)
and clkit's (``clkit_kernel``, ``clkit_e2e``).  ``python benchmarks/report.py
RESULTS.json`` prints, per group, each variant's median and its ratio to the
baselines.

Environment: ``CLKIT_BENCH_DEVICE`` (a device spec, as ``CLKIT_DEVICE`` takes)
chooses the device; without it, the best device (``CLKIT_DEVICE`` if set).
``CLKIT_BENCH_SIZE`` chooses the sizes (see ``test_kernels.py``).
"""

import os

import pytest

import clkit


@pytest.fixture(scope="session")
def device():
    """The device benchmarks run on: CLKIT_BENCH_DEVICE, else clkit.select()'s choice."""
    return clkit.select(os.environ.get("CLKIT_BENCH_DEVICE") or None)
