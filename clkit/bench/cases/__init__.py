"""The cases of ``clkit bench``, one module per kernel, and the choice among them.

Each module registers its cases (:func:`clkit.bench._case.register`) when it
is imported, and :data:`MODULES` imports them in the order of the tables: a
new case is a new module plus its name here.
"""

from __future__ import annotations

import importlib

from ..._errors import ArgumentValueError
from .._case import REGISTRY, Case
from .._sizes import Sizes

MODULES = ("grayscale", "convolve", "gaussian_blur", "vector_add", "mandelbrot",
           "depth_to_points", "transfers", "ndimage")

#: Short names ``clkit bench`` also accepts.
ALIASES = {"gray": "grayscale", "blur": "gaussian_blur", "points": "depth_to_points",
           "add": "vector_add"}

for _name in MODULES:
    importlib.import_module(f"{__name__}.{_name}")


def kernel_names() -> list[str]:
    """The kernels that have cases, in table order."""
    return list(REGISTRY)


def make_cases(sizes: Sizes, names=None) -> list[Case]:
    """The cases named (kernel names, case ids or aliases; all when empty), in table order.

    Raises
    ------
    ArgumentValueError
        For a name that is none of them.
    """
    every = [make(sizes) for kernel in kernel_names() for make in REGISTRY[kernel]]
    if not names:
        return every
    wanted = set()
    for name in names:
        key = ALIASES.get(name.lower(), name.lower())
        ids = [c.id for c in every if c.kernel == key or c.id == key]
        if not ids:
            choices = ", ".join(list(REGISTRY) + [c.id for c in every if c.id not in REGISTRY])
            raise ArgumentValueError(f"unknown kernel {name!r}; choose from {choices}")
        wanted.update(ids)
    return [c for c in every if c.id in wanted]
