"""The cross-cutting reliability suites (Oclgrind, property-based, bad inputs and files,
concurrency, resource use): every test collected here is marked ``reliability``."""

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items):
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.reliability)
