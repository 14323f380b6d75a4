"""The report as a picture: a grouped bar chart of the medians."""

from __future__ import annotations

import importlib
import os

from .._files import atomic_write
from ._optional import optional
from ._table import BASE_KEYS, compared, display_name


def plot(report: dict, path: str) -> None:
    """A grouped bar chart of the medians (log scale), one group per case."""
    matplotlib = optional("matplotlib")
    if matplotlib is None:
        raise ImportError("matplotlib is not installed")
    matplotlib.use("Agg")
    plt = importlib.import_module("matplotlib.pyplot")
    cases = [c for c in report["cases"] if compared(c)]
    devices = {d["id"]: d for d in report["machine"]["devices"]}
    order = BASE_KEYS + ("torch_e2e",)

    def series_of(r):
        return display_name(r, devices) if r["device"] is not None else r["key"]

    found = {}
    for c in cases:
        for r in c["results"]:
            if r.get("median_ms"):
                rank = order.index(r["key"]) if r["key"] in order else len(order)
                found.setdefault(series_of(r), (rank, len(found)))
    series = sorted(found, key=found.get)
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(cases) + 2), 5.5))
    width = 0.8 / max(1, len(series))
    colors = plt.get_cmap("tab10" if len(series) <= 10 else "tab20")
    for i, name in enumerate(series):
        xs, ys = [], []
        for j, c in enumerate(cases):
            for r in c["results"]:
                if series_of(r) == name and r.get("median_ms"):
                    xs.append(j - 0.4 + width * (i + 0.5))
                    ys.append(r["median_ms"])
        ax.bar(xs, ys, width, label=name, color=colors(i % colors.N))
    ax.set_yscale("log")
    ax.set_ylabel("median time, ms (log scale; lower is faster)")
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([c["id"] for c in cases], rotation=20, ha="right")
    m = report["machine"]
    ax.set_title(f"clkit bench ({report['size']}): {m['cpu']}, {m['date'][:10]}", fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(axis="y", which="major", alpha=0.3)
    fig.tight_layout()
    try:
        with atomic_write(path) as f:
            fig.savefig(f, dpi=120, format=os.path.splitext(path)[1].lstrip(".").lower())
    finally:
        plt.close(fig)
