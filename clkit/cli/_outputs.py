"""Checks of a command's output files, made before any work so that a mistake costs nothing."""

from __future__ import annotations

import os

from ._command import UsageError


def output_folder(path: str, option: str) -> None:
    """``option``'s file ``path`` can be created: its folder exists and is writable."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"{option} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"{option} {path}: the folder {folder} is not writable")


def check_plot(path: str) -> None:
    """``--plot path`` can be drawn: matplotlib is there and knows the file's format."""
    output_folder(path, "--plot")
    try:
        import matplotlib
    except Exception:  # a broken install counts as absent
        raise UsageError("--plot needs matplotlib: pip install 'clkit[plot]' (or matplotlib)") \
            from None
    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    formats = Figure().canvas.get_supported_filetypes()
    ext = os.path.splitext(path)[1].lstrip(".").lower()
    if ext not in formats:
        raise UsageError(f"--plot {path}: give a file name ending in one of "
                         f"{', '.join('.' + f for f in sorted(formats))} (e.g. bench.png)")
