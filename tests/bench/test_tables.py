"""benchmarks/tables.py: the performance page's table, from a real clkit bench report."""

import json
import subprocess
import sys

import pytest
from _cli import REPO, child_env


def test_a_platform_table_shows_each_case_with_its_peers_and_speed_up(device, tmp_path):
    if device.simulator:
        pytest.skip("a benchmark on the simulator measures nothing")
    report_path = tmp_path / "report.json"
    subprocess.run([sys.executable, "-m", "clkit", "bench", "grayscale", "vector_add",
                    "--size", "64x48", "--repeat", "3", "--device", device.id,
                    "--json", str(report_path)],
                   check=True, capture_output=True, text=True, timeout=300, env=child_env())
    report = json.loads(report_path.read_text())
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import tables
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    text = tables.table([report])

    first_table = text.split("\n\n")[0].splitlines()
    rows = {line.split(" | ")[0].lstrip("| "): line.strip("| ").split(" | ")
            for line in first_table[2:]}
    assert len(rows) == 2 and [r.split()[0] for r in sorted(rows)] == ["grayscale", "vector_add"]
    head = first_table[0].strip("| ").split(" | ")
    for case in report["cases"]:
        if case["id"] not in ("grayscale", "vector_add"):
            continue
        row = dict(zip(head, rows[next(r for r in rows if r.startswith(case["id"]))]))
        median = {r["key"]: r["median_ms"] for r in case["results"] if r.get("median_ms")}
        # each time shown is the report's median, to its printed precision
        for key, column in (("clkit_kernel", "clkit kernel"), ("clkit_e2e",
                                                                 "clkit, numpy in and out"),
                            ("numpy", "numpy")):
            assert float(row[column].replace(",", "")) == pytest.approx(median[key], rel=0.01,
                                                                        abs=0.001)
        # the speed-up is the fastest host library's median over clkit's numpy call
        peers = {k: v for k, v in median.items() if k in ("numpy", "scipy", "cv2")}
        fastest = min(peers, key=peers.get)
        value, name = row["speed-up over the fastest peer"].split("x ")
        assert name == dict(tables.PEERS)[fastest]
        assert float(value.replace(",", "")) == pytest.approx(
            peers[fastest] / median["clkit_e2e"], rel=0.01, abs=0.01)
    assert f"measured {report['machine']['date'][:10]}" in text
