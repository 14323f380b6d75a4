"""Running cases: every variant measured, checked against the reference, as one report."""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import sys
from typing import Callable

from ._case import Case
from ._optional import Unavailable, optional, torch_device
from ._sizes import Sizes
from ._timing import BUDGET_S, Timing, Variant, measure


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info(devices) -> dict:
    """Where and with what the numbers were measured."""
    from .. import __version__
    versions = {"python": platform.python_version(), "clkit": __version__}
    for name in ("numpy", "scipy", "cv2", "torch", "cupy", "pyopencl", "matplotlib"):
        mod = optional(name)
        versions[name] = getattr(mod, "__version__", None) if mod is not None else None
    info = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu": cpu_model(), "cores": os.cpu_count(), "platform": platform.platform(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "versions": versions,
        "devices": [d.as_dict() for d in devices],
        "torch_device": torch_device(),
    }
    if torch_device() == "cuda":
        info["cuda_device"] = optional("torch").cuda.get_device_name(0)
    return info


def result_record(case: Case, variant: Variant, timing: Timing | None, error: str | None,
                  check: str | None) -> dict:
    rec = {"key": variant.key, "label": variant.label, "clock": variant.clock,
           "device": variant.device.id if variant.device is not None else None,
           "note": variant.note, "scale": variant.scale, "error": error, "check": check}
    if timing is not None:
        median = timing.median_ms * variant.scale
        nbytes = variant.nbytes if variant.nbytes is not None else case.nbytes
        rec.update({
            "median_ms": median, "runs": len(timing.times_ms),
            "times_ms": [t * variant.scale for t in timing.times_ms],
            "warmup_ms": timing.warmup_ms * variant.scale,
            "bytes": nbytes, "gbps": nbytes / (median * 1e6) if nbytes and median > 0 else None,
        })
        if variant.clock in ("events", "event", "cuda"):
            rec["wall_median_ms"] = statistics.median(timing.wall_ms)
    return rec


def run_case(case: Case, devices, repeat: int, budget_s: float = BUDGET_S,
             progress: Callable[[str], None] | None = None) -> dict:
    """Measure every variant of one case; returns its record (the JSON's ``cases`` entry)."""
    record = case.describe()
    record["results"] = []
    record["unavailable"] = {}
    reference = None
    try:
        variants = case.variants(devices)
    except Unavailable as exc:  # pragma: no cover - every case has some variant
        record["unavailable"]["all"] = str(exc)
        return record
    for variant in variants:
        if isinstance(variant, tuple):
            record["unavailable"][variant[0]] = variant[1]
            continue
        if progress:
            progress(f"{case.id}: {variant.label}")
        timing = error = check = None
        try:
            timing = measure(variant, repeat, budget_s)
        except Exception as exc:  # reported in the table; the other variants still run
            error = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        if timing is not None and variant.key == case.reference:
            reference = timing.result
        elif timing is not None and reference is not None and variant.key in case.device_keys:
            try:
                problem = case.check(timing.result, reference)
            except Exception as exc:  # a result that cannot even be compared is wrong
                problem = f"{type(exc).__name__}: {exc}"
            check = "ok" if problem is None else f"MISMATCH: {problem}"
        if timing is not None:
            timing.result = None
        record["results"].append(result_record(case, variant, timing, error, check))
    record["bytes"] = case.nbytes
    record.update(case.extra())
    case.release()
    return record


def run(cases, devices, sizes: Sizes, repeat: int, budget_s: float = BUDGET_S,
        on_case: Callable[[dict], None] | None = None,
        progress: Callable[[str], None] | None = None) -> dict:
    """Measure ``cases`` on ``devices``; returns the whole report (what ``--json`` writes)."""
    report = {"machine": machine_info(devices), "size": sizes.name, "sizes": {
        "image": list(sizes.image), "vector": sizes.vector, "fractal": list(sizes.fractal),
        "max_iter": sizes.max_iter}, "repeat": repeat, "budget_s": budget_s,
        "argv": sys.argv, "cases": []}
    for case in cases:
        record = run_case(case, devices, repeat, budget_s, progress)
        report["cases"].append(record)
        if on_case:
            on_case(record)
    report["machine"]["load_average_after"] = \
        list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    return report


# ---------------------------------------------------------------------------------------------
