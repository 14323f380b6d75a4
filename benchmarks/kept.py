"""The table of a benchmark's kept report: ``--json FILE`` keeps the measurements, ``--render
FILE`` writes their markdown table beside them (``FILE`` with ``.md``), which the
performance page includes."""

from __future__ import annotations

import json


def write_table(report: str, render) -> None:
    """Write ``render(the report)`` beside the kept ``report``."""
    with open(report) as f:
        table = render(json.load(f))
    with open(report.rsplit(".", 1)[0] + ".md", "w") as f:
        f.write(table)
