"""Each library kernel against its baselines: one benchmark group per case.

The cases are those of ``clkit bench`` (:mod:`clkit.bench`: the same inputs,
calls and sizes), at the size ``CLKIT_BENCH_SIZE`` names (``small``,
``default``, ``gpu`` or ``WxH``), on the device of the
``device`` fixture (``CLKIT_BENCH_DEVICE``, else the best one).  A group
``<case>`` holds ``test_<case>__<variant>`` for the variants:

- ``serial``: plain Python on a subset; ``extra_info["scale"]`` scales its
  time to the full size (report.py does);
- ``numpy``, ``scipy``, ``cv2``, ``torch``, ``torch_e2e``, ``cupy``: the
  baselines, skipped where the package (or CUDA) is missing;
- ``clkit_kernel``: the library call on device arrays (``out=``), the queue
  finished before and after; ``extra_info["kernel_ms"]`` holds the median of
  the kernels' own device time (profiling events);
- ``clkit_e2e``: numpy in, numpy out, transfers included.

The result of each clkit variant's warm-up call is checked against the case's
reference variant (``numpy``) with the case's own check, as ``clkit bench``
does: a benchmark of a wrong result fails instead of reporting a speed.

pytest-benchmark times every variant by the wall clock, so device calls
include their launch and synchronisation (``clkit bench`` reads device events
instead).  Each benchmark warms up once, then runs for about two seconds
(3 to 20 rounds).  ``python benchmarks/report.py RESULTS.json`` prints the
ratios of the acceptance targets (``targets.py``) from a ``--benchmark-json`` file.
"""

import os
import statistics

import pytest

import clkit
from clkit import bench as _bench

SIZE = _bench.parse_size(os.environ.get("CLKIT_BENCH_SIZE", "default"))
CASES = _bench.make_cases(SIZE)
BUDGET_MS = 2000.0
MAX_ROUNDS = 20


def kernel_ms(recorded) -> float:
    """The summed device time of the kernels a :func:`clkit.trace` recorded, in ms."""
    return sum(e["end_ms"] - e["start_ms"] for e in recorded.events if e["kind"] == "kernel")


def _bench_variant(benchmark, case, key, device):
    try:
        variant = case.variant(key, device)
    except _bench.Unavailable as exc:
        pytest.skip(str(exc))
    warm_ms, result, _ = variant.warm_up()  # builds, caches, first touch of the memory
    if key in ("clkit_kernel", "clkit_e2e"):
        problem = case.check(result, _reference(case))
        assert problem is None, f"{case.id} {key} on {device}: {problem}"
    del result
    rounds = max(_bench.MIN_RUNS, min(MAX_ROUNDS, int(BUDGET_MS / max(warm_ms, 1e-3))))
    sync = variant.sync or (lambda: None)
    device_ms = []

    def call():
        if variant.clock == "events":
            with clkit.trace() as recorded:
                variant.run()
            sync()
            device_ms.append(kernel_ms(recorded))
        else:
            variant.run()
            sync()

    nbytes = variant.nbytes if variant.nbytes is not None else case.nbytes
    benchmark.extra_info.update({
        "case": case.id, "variant": key, "label": variant.label, "bytes": nbytes,
        "scale": variant.scale, "note": variant.note, "size": SIZE.name,
        "device": variant.device.id if variant.device is not None else None,
        "device_type": variant.device.type if variant.device is not None else None,
    })
    benchmark.pedantic(call, setup=sync, rounds=rounds, iterations=1, warmup_rounds=0)
    if device_ms:
        benchmark.extra_info["kernel_ms"] = statistics.median(device_ms)


#: The reference result of each case whose group is running (dropped with its inputs).
_REFERENCES: dict = {}


def _reference(case):
    if case.id not in _REFERENCES:
        _REFERENCES[case.id] = case.variant(case.reference).run()
    return _REFERENCES[case.id]


def _make(case, key):
    last = key == case.variant_keys[-1]

    @pytest.mark.benchmark(group=case.id)
    def test(benchmark, device):
        try:
            _bench_variant(benchmark, case, key, device)
        finally:
            if last:
                case.release()  # the group is done: free its inputs and reference
                _REFERENCES.pop(case.id, None)

    test.__name__ = test.__qualname__ = f"test_{case.id}__{key}"
    test.__doc__ = f"{case.title}: {key}"
    return test


for _case in CASES:
    for _key in _case.variant_keys:
        _test = _make(_case, _key)
        globals()[_test.__name__] = _test
del _case, _key, _test
