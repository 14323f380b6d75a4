"""benchmarks/gpu_e2e.py runs end to end at a small size on any device and writes its report."""

import json
import subprocess
import sys

import pytest
from _cli import REPO, child_env


def run_small(script, device, tmp_path, *more):
    """``benchmarks/<script>.py`` on ``device`` at a small size; its JSON report."""
    if device.simulator:
        pytest.skip("a benchmark on the simulator measures nothing")
    subprocess.run([sys.executable, str(REPO / "benchmarks" / f"{script}.py"), str(tmp_path),
                    "--device", device.id, "--size", "96x64", "--batch", "3", "--repeat", "2",
                    *more], check=True, capture_output=True, text=True, timeout=300,
                   env=child_env())
    return json.loads((tmp_path / f"{script}.json").read_text())


def test_gpu_e2e_writes_every_figure(device, tmp_path):
    res = run_small("gpu_e2e", device, tmp_path)
    assert res["device"] == str(device)
    assert [r["case"] for r in res["single"]] == ["grayscale uint8", "convolve 5x5 float32"]
    assert res["single"][0]["bytes_up"] == 96 * 64 * 3 and res["single"][0]["bytes_down"] == 96 * 64
    for row in res["single"] + res["batch"]:
        assert row["numpy_ms"] > 0 and row["pinned_ms"] > 0
    assert res["batch"][1]["images"] == 3 and res["batch"][1]["bytes_up"] == 3 * 96 * 64 * 4
    assert [r["case"] for r in res["filters"]["rows"]] == [
        "gaussian_blur sigma 2", "gaussian_blur sigma 10", "convolve 9x9"]
    assert all(r["kernel_ms"] > 0 for r in res["filters"]["rows"])
    assert all(res["fresh_uploads"][k] > 0 for k in ("pageable", "host_ptr", "staged"))
    assert "link limit" in (tmp_path / "gpu_e2e.txt").read_text()

