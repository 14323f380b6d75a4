"""scipy's imported filter tests: the markers they carry (registered here, as scipy's own
conftest does), the ones that fail by design and why, and the selection of these and of
clkit's own tests that also runs on the Oclgrind simulator."""

import pytest

SCIPY_MARKERS = [
    "array_api_backends: a scipy test that runs on each array API backend",
    "skip_xp_backends(backends, reason=None, np_only=False, cpu_only=False, eager_only=False, "
    "exceptions=None): scipy's skips per array API backend",
    "xfail_xp_backends(backends, reason=None, np_only=False, cpu_only=False, eager_only=False, "
    "exceptions=None): scipy's expected failures per array API backend",
    "thread_unsafe: a scipy test that runs single-threaded",
    "parallel_threads_limit(n): scipy's limit on threads for a test",
    "iterations(n): scipy's repetitions of a test per thread",
    "xslow: a very slow scipy test",
    "fail_slow: scipy's time limit for a test",
    "timeout: scipy's time limit for a test",
    "uses_xp_capabilities(*args, **kwargs): scipy's record of the array API backends a test "
    "covers (scipy 1.18)",
]


def pytest_configure(config):
    for line in SCIPY_MARKERS:
        config.addinivalue_line("markers", line)


COMPLEX = ("complex64", "complex128")

#: scipy tests that fail by design, with the reason, by test function name.
EXPECTED_FAILURES = {
    "test_gaussian_filter_float16": "clkit.ndimage accepts float16 (computed in float32), "
                                    "which scipy refuses with RuntimeError",
}
COMPLEX_REASON = ("complex data is not supported by clkit.ndimage (documented): the linear "
                  "filters raise NotImplementedError")

#: The scipy tests that also run on the Oclgrind simulator (slow: it interprets every
#: work-item), one or two per filter.
SIMULATOR_SUBSET = {
    "test_correlate01", "test_correlate03", "test_correlate14", "test_correlate1d_origin",
    "test_gauss01", "test_gauss03", "test_gauss06", "test_uniform01", "test_uniform06",
    "test_minimum_filter01", "test_maximum_filter01", "test_minimum_filter09", "test_rank01",
    "test_rank08", "test_median_filter", "test_percentile_filter", "test_sobel01",
    "test_laplace01", "test_gaussian_laplace01", "test_gaussian_gradient_magnitude01",
}

#: Of clkit's own tests (test_filters.py), those that also run on the simulator: the
#: filter-by-filter comparisons for these (dtype, number of dimensions) cases, and every
#: test without such cases.
SIMULATOR_CASES = {("float32", 2), ("uint8", 1), ("int16", 3), ("float64", 3)}
SIMULATOR_OWN = {"test_device_arrays_stay_on_the_device", "test_zero_dimensional_arrays_as_scipy",
                 "test_complex_is_refused_clearly",
                 "test_scipy_exception_types_for_bad_arguments",
                 "test_out_of_range_values_convert_as_scipys", "test_public_names_are_scipys"}

_calls_none = []


def _on_simulator(item) -> bool:
    """Whether an item of tests/ndimage runs on the simulator (which interprets every
    work-item, about 1000 times slower than a CPU driver): a chosen subset."""
    params = item.callspec.params if hasattr(item, "callspec") else {}
    if item.nodeid.startswith("tests/ndimage/test_scipy_filters.py"):
        return item.originalname in SIMULATOR_SUBSET
    if "dtype" in params and "ndim" in params:
        return (str(params["dtype"]), params["ndim"]) in SIMULATOR_CASES
    return item.originalname in SIMULATOR_OWN


def _is_complex(item) -> bool:
    """A test of complex data with clkit's functions (scipy's vectorized_filter tests call
    none of them)."""
    if item.cls is not None and item.cls.__name__ == "TestVectorizedFilter":
        return False
    if "complex" in item.originalname:
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    return any("complex" in str(v) for v in params.values())


def _plain_traceback(excinfo, style=None):
    """The report of an expected failure of complex data: Python's own traceback. pytest's
    (which every failure gets, an expected one too) parses the whole of scipy's test module
    for each frame, about 0.3 s a test, half a minute per device for these alone."""
    return str(excinfo.getrepr(style="native"))


def pytest_collection_modifyitems(config, items):
    kept, dropped = [], []
    for item in items:
        if not item.nodeid.startswith("tests/ndimage/"):
            kept.append(item)
            continue
        device = item.callspec.params.get("device") if hasattr(item, "callspec") else None
        if device is not None and device.simulator and not _on_simulator(item):
            dropped.append(item)
            continue
        if not item.nodeid.startswith("tests/ndimage/test_scipy_filters.py"):
            pass
        elif item.originalname in EXPECTED_FAILURES:
            item.add_marker(pytest.mark.xfail(reason=EXPECTED_FAILURES[item.originalname],
                                              strict=True))
        elif _is_complex(item):
            item.add_marker(pytest.mark.xfail(reason=COMPLEX_REASON, strict=True,
                                              raises=(NotImplementedError,)))
            item.repr_failure = _plain_traceback
        kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item):
    if getattr(item, "clkit_calls", None) == 0:
        _calls_none.append(item.nodeid)


def pytest_terminal_summary(terminalreporter):
    if _calls_none:
        terminalreporter.write_line(
            f"clkit.ndimage: {len(_calls_none)} of scipy's tests called no clkit function "
            "(they test scipy.ndimage's functions that clkit does not provide)")
