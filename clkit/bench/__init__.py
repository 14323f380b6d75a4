"""Benchmarks of the kernel library against serial Python, NumPy, OpenCV and torch.

``clkit bench`` and the pytest-benchmark suite in ``benchmarks/`` measure the
same cases, defined in :mod:`clkit.bench.cases`.  A :class:`Case` is one
kernel at one size (:data:`PRESETS`: ``default`` for 4K images and 2^24
vectors, ``small`` for quick runs, ``gpu`` for a big GPU); it makes its inputs
once and hands out :class:`Variant` s, one call each:

- ``serial``: plain Python loops over a subset of the data; the time is
  scaled by the element count to the full size, and says so;
- the baselines: ``numpy`` (a vectorised reference, also the reference
  result every clkit variant is checked against), ``scipy`` (scipy.ndimage),
  ``cv2``, ``torch`` (CUDA where available, else CPU) and, with CUDA,
  ``cupy`` and ``torch_e2e`` (numpy in and out through torch);
- per OpenCL device, ``clkit_kernel``: a library call on device arrays (with
  ``out=``), timed by the profiling events of the kernels it enqueued (see
  :func:`clkit._launch.kernel.recording`); and ``clkit_e2e``: the same call with
  numpy in and numpy out, transfers included, timed by the wall clock.

Every variant runs once to warm up (builds, caches, first touch of memory),
then up to ``repeat`` times within a time budget (at least 3 runs); the
median is reported.  Effective bandwidth counts the bytes a kernel must move
at least (stated per case: grayscale 4 B/pixel, convolve 8 B/pixel,
vector_add 12 B/element), in GB/s of 10^9 bytes.

Modules: ``_sizes`` (presets), ``_optional`` (the baselines' packages),
``_timing`` (variants and clocks), ``_references`` (serial and numpy
versions), ``_case`` (the case contract and registry), ``cases/`` (one
module per kernel), ``_run`` (a whole run as a report), ``_table`` and
``_plot`` (the report as text and as a chart).
"""

from ._case import REGISTRY, Case, register
from ._optional import Unavailable, optional, torch_device
from ._plot import plot
from ._run import machine_info, run, run_case
from ._sizes import PRESETS, Sizes, parse_size
from ._table import format_case, format_header, format_record
from ._timing import BUDGET_S, MIN_RUNS, Timing, Variant, measure
from .cases import ALIASES, kernel_names, make_cases

__all__ = ["ALIASES", "BUDGET_S", "Case", "MIN_RUNS", "PRESETS", "REGISTRY", "Sizes", "Timing",
           "Unavailable", "Variant", "format_case", "format_header", "format_record",
           "kernel_names", "machine_info", "make_cases", "measure", "optional", "parse_size",
           "plot", "register", "run", "run_case", "torch_device"]
