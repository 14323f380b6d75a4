"""scipy.ndimage's own filter tests, run with clkit.ndimage's functions in scipy.ndimage's place.

scipy ships ``scipy/ndimage/tests/test_filters.py``. Its tests call ``ndimage.<name>`` and also
take scipy's functions as parameters (captured when the module is imported), so each filter
clkit implements is replaced in ``scipy.ndimage`` by a :class:`Replacement` before that module
is imported here. Nothing of scipy's suite is copied: its tests are imported and collected as
they are. A replacement runs clkit's function on the device of the test under way; outside
these tests (other test modules using scipy as their reference) it is scipy's own function.

The tests that fail by design are marked in ``conftest.py`` (EXPECTED_FAILURES), each with
its reason.
"""

import functools

import pytest
import scipy.ndimage

from clkit import ndimage as clkit_ndimage

#: The device of the scipy test under way (None: not one of these tests); a module global, not
#: a context variable, so that the threads some of scipy's tests start see it too.
current = {"device": None}


class Replacement:
    """scipy.ndimage.<name> as clkit's function while a test here runs, else scipy's own."""

    def __init__(self, name, original):
        self.name, self.original = name, original
        self.ours = getattr(clkit_ndimage, name)
        self.calls = 0
        functools.update_wrapper(self, original)

    # Equal to scipy's function, as scipy's tables of functions (keyed by them) look it up.
    def __eq__(self, other):
        return self is other or other is self.original

    def __hash__(self):
        return hash(self.original)

    def __call__(self, *args, **kwargs):
        device = current["device"]
        if device is None:
            return self.original(*args, **kwargs)
        self.calls += 1
        return self.ours(*args, device=device, **kwargs)


REPLACEMENTS = {}
for _name in clkit_ndimage.__all__:
    _found = getattr(scipy.ndimage, _name)
    if not isinstance(_found, Replacement):
        _found = Replacement(_name, _found)
        setattr(scipy.ndimage, _name, _found)
    REPLACEMENTS[_name] = _found

from scipy.conftest import num_parallel_threads, xp  # noqa: E402,F401  (fixtures scipy's tests take)
from scipy.ndimage.tests.test_filters import *  # noqa: E402,F401,F403


@pytest.fixture(autouse=True)
def clkit_in_place_of_scipy(device, request):
    """scipy.ndimage's filters are clkit's, on ``device``, for the test; a test that does not
    call one of them is reported (it tests scipy only)."""
    before = sum(r.calls for r in REPLACEMENTS.values())
    current["device"] = device
    try:
        yield
    finally:
        current["device"] = None
    request.node.clkit_calls = sum(r.calls for r in REPLACEMENTS.values()) - before
