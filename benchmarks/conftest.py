"""Benchmarks: each group compares clkit with its baseline in the same run.

Every benchmark is named ``test_<group>__<variant>``; the baseline of a group
is the variant whose name ends with ``baseline``-free reference names listed in
``BASELINES``.  ``python benchmarks/report.py RESULTS.json`` prints, per group,
each variant's median and its ratio to the group's baseline.
"""

import os

import pytest

import clkit


@pytest.fixture(scope="session")
def device():
    """The device benchmarks run on: CLKIT_DEVICE, else the best one."""
    return clkit.select(os.environ.get("CLKIT_BENCH_DEVICE") or None)
