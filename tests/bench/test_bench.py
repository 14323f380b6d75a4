"""``clkit bench`` through the real entry point (``python -m clkit`` in a subprocess).

No timing is asserted: only that every kernel and every installed baseline
is measured, the results check out, and the table and the JSON say so.
"""

import importlib.util
import json
import subprocess
import sys

import pytest

from _cli import REPO, clkit, fails

FILTER_CASES = ("convolve_5x5", "convolve_9x9", "gaussian_blur", "gaussian_blur_sigma10")
KERNEL_CASES = ("grayscale", *FILTER_CASES, "vector_add", "mandelbrot", "depth_to_points")
#: clkit.ndimage's cases: scipy is their reference (no serial or numpy variant); those with an
#: OpenCV equivalent second.
NDIMAGE_CASES = ("ndimage_gaussian_filter_sigma2_float32", "ndimage_gaussian_filter_sigma2_uint8",
                 "ndimage_gaussian_gradient_magnitude_sigma2_float32")
NDIMAGE_CV2_CASES = ("ndimage_uniform_filter_5_float32", "ndimage_sobel_float32",
                     "ndimage_minimum_filter_5_uint8", "ndimage_minimum_filter_31_uint8",
                     "ndimage_minimum_filter_9_float32", "ndimage_maximum_filter_5_uint8",
                     "ndimage_median_filter_5_uint8", "ndimage_median_filter_9_uint8",
                     "ndimage_median_filter_5_float32")


def installed(name):
    return importlib.util.find_spec(name) is not None


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """One small run on the CPU device, shared by the tests that read its output."""
    out = tmp_path_factory.mktemp("bench") / "bench.json"
    proc = clkit("bench", "--size", "small", "--device", "cpu", "--repeat", "3", "--json", out,
                 timeout=600)
    return proc, out


def test_small_run_prints_every_case(small_run):
    proc, _ = small_run
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    for title in ("grayscale RGB->gray uint8 640x360", "convolve 5x5 float32 640x360",
                  "convolve 9x9 float32 640x360", "gaussian_blur sigma 2",
                  "gaussian_blur sigma 10 (81 taps)",
                  "vector_add float32 1,048,576 elements", "mandelbrot 480x270",
                  "depth_to_points uint16 640x360", "transfers of 4.00 MiB"):
        assert title in text
    assert "serial Python (1)" in text and "scaled" in text
    assert "clkit kernel 1:0" in text or "clkit kernel" in text
    assert "4 B/pixel" in text and "8 B/pixel" in text and "12 B/element" in text
    assert "MISMATCH" not in text and "failed" not in text


def test_small_run_json_has_every_kernel_and_baseline(small_run):
    proc, out = small_run
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    machine = report["machine"]
    assert machine["cpu"] and machine["cores"] >= 1 and machine["date"]
    assert machine["versions"]["numpy"] and machine["versions"]["pyopencl"]
    assert [d["type"] for d in machine["devices"]] == ["cpu"]
    cases = {c["id"]: c for c in report["cases"]}
    assert set(KERNEL_CASES) | {"transfers"} | set(NDIMAGE_CASES + NDIMAGE_CV2_CASES) == \
        set(cases)
    expected = {cid: {"serial", "numpy", "clkit_kernel", "clkit_e2e"} for cid in KERNEL_CASES}
    for cid in FILTER_CASES:
        if installed("scipy"):
            expected[cid].add("scipy")
    for cid in ("grayscale", *FILTER_CASES):
        if installed("cv2"):
            expected[cid].add("cv2")
    if installed("torch"):
        for cid in ("grayscale", *FILTER_CASES, "vector_add"):
            expected[cid].add("torch")
    for cid, keys in expected.items():
        results = {r["key"]: r for r in cases[cid]["results"]}
        assert keys <= set(results), (cid, keys - set(results))
        for key in keys:
            r = results[key]
            assert r["error"] is None, (cid, key, r["error"])
            assert r["median_ms"] > 0 and r["runs"] >= 1 and len(r["times_ms"]) == r["runs"]
        assert results["serial"]["scale"] > 1  # a subset, scaled to the full size
        assert results["clkit_kernel"]["check"] == "ok"
        assert results["clkit_e2e"]["check"] == "ok"
    if installed("scipy"):
        for cid in NDIMAGE_CASES + NDIMAGE_CV2_CASES:
            results = {r["key"]: r for r in cases[cid]["results"]}
            keys = {"scipy", "clkit_kernel", "clkit_e2e"} | \
                ({"cv2"} if cid in NDIMAGE_CV2_CASES and installed("cv2") else set())
            assert keys <= set(results), (cid, keys - set(results))
            assert all(results[k]["error"] is None for k in keys), cid
            assert results["clkit_kernel"]["check"] == "ok", cid
            assert results["clkit_e2e"]["check"] == "ok", cid
    for cid, per_unit in (("grayscale", 4), ("convolve_5x5", 8), ("vector_add", 12)):
        assert cases[cid]["bytes"] == per_unit * cases[cid]["count"]
        kernel = next(r for r in cases[cid]["results"] if r["key"] == "clkit_kernel")
        assert kernel["gbps"] > 0
    transfers = {r["key"] for r in cases["transfers"]["results"]}
    assert {"numpy_copy", "clkit_h2d", "clkit_d2h"} <= transfers
    depth = cases["depth_to_points"]  # 10% of its pixels have no depth
    assert 0.85 < depth["valid_points"] / depth["count"] < 0.95


def test_targets_are_evaluated_from_the_json(small_run):
    proc, out = small_run
    assert proc.returncode == 0, proc.stderr
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "targets.py"), str(out)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("Targets (ratios from this run's medians), at size small")
    for case, target in (("grayscale", "kernel <= 2.0x cv2.cvtColor time"),
                         ("convolve_5x5", ">= 10x scipy.ndimage.convolve"),
                         ("gaussian_blur", "kernel <= 1.5x cv2.GaussianBlur"),
                         ("vector_add", ">= 0.9x numpy add(out=) bandwidth"),
                         ("mandelbrot", ">= 20x a vectorized numpy version")):
        line = next(line for line in lines if f"{case}: " in line and target in line)
        assert line.rstrip().endswith(("met", "NOT MET", "-")), line


@pytest.mark.skipif(not installed("matplotlib"), reason="matplotlib is not installed")
def test_plot_writes_a_png(tmp_path):
    out = tmp_path / "bench.png"
    proc = clkit("bench", "vector_add", "mandelbrot", "--size", "64x48", "--device", "cpu",
                 "--repeat", "1", "--plot", out)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["bench.png"]  # no temporary left


def test_named_kernels_only(tmp_path):
    out = tmp_path / "b.json"
    proc = clkit("bench", "gray", "convolve", "--size", "64x48", "--device", "cpu",
                 "--repeat", "1", "--json", out)
    assert proc.returncode == 0, proc.stderr
    ids = [c["id"] for c in json.loads(out.read_text())["cases"]]
    assert ids == ["grayscale", "convolve_5x5", "convolve_9x9"]


@pytest.mark.parametrize("args, message", [
    (["--device", "cpu", "nosuchkernel"], "unknown kernel 'nosuchkernel'"),
    (["--size", "huge"], "size must be one of small, default, gpu or WxH"),
    (["--size", "0x10"], "size must be one of"),
    (["--repeat", "0"], "must be 1 or more"),
    (["--repeat", "many"], "must be a whole number"),
    (["--device", "nosuchdevice"], "nosuchdevice"),
    (["--json", "/nonexistent-folder/x.json"], "does not exist"),
])
def test_bad_arguments_give_one_line_and_status_2(args, message):
    line = fails(clkit("bench", "--size", "small", *args))
    assert message in line


def test_plot_without_matplotlib_is_a_clear_error(tmp_path):
    fake = tmp_path / "fake"
    (fake / "matplotlib").mkdir(parents=True)
    (fake / "matplotlib" / "__init__.py").write_text("raise ImportError('no matplotlib')\n")
    import os
    env = dict(os.environ, PYTHONPATH=f"{fake}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    out = tmp_path / "p.png"
    line = fails(clkit("bench", "vector_add", "--size", "small", "--plot", out, env=env))
    assert "matplotlib" in line and "clkit[plot]" in line
    assert not out.exists()


@pytest.mark.skipif(not installed("matplotlib"), reason="matplotlib is not installed")
def test_plot_to_an_unknown_format_is_refused(tmp_path):
    line = fails(clkit("bench", "vector_add", "--plot", tmp_path / "chart.xyz"))
    assert ".png" in line
