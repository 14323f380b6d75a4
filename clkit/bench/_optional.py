"""The baselines' packages, each optional: a missing one leaves its rows out."""

from __future__ import annotations

import functools
import importlib


@functools.lru_cache(maxsize=None)
def optional(name: str):
    """The module ``name``, or None when it is not installed (or fails to import)."""
    try:
        return importlib.import_module(name)
    except Exception:  # a broken install (missing shared library, ...) counts as absent
        return None


@functools.lru_cache(maxsize=None)
def torch_device() -> str | None:
    """``"cuda"`` when torch sees a GPU, ``"cpu"`` with torch alone, None without torch."""
    torch = optional("torch")
    if torch is None:
        return None
    return "cuda" if torch.cuda.is_available() else "cpu"


@functools.lru_cache(maxsize=None)
def has_cupy() -> bool:
    cupy = optional("cupy")
    if cupy is None:
        return False
    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no driver or no GPU: cupy imports but cannot run
        return False


class Unavailable(Exception):
    """A variant that cannot run here (a package or a GPU is missing)."""
