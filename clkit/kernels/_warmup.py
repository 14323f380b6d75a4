"""Building the convolution kernels ahead of time (``clkit.kernels.warmup``, ``clkit warmup``)."""

from __future__ import annotations

import time

import numpy as np

from .._build import tiers as _tiers
from .._engine.stencil import MODES
from .._engine.filter import IMAGE_DTYPES
from .._errors import ArgumentTypeError, ArgumentValueError
from .._platform.devices import select
from ._convolve import convolve, gaussian_blur


def warmup(masks=(), sigmas=(), *, dtypes=("float32",), modes=("reflect",), channels=(1,),
           device=None) -> list[str]:
    """Build convolution kernels now, so that later calls wait for no compiler.

    The generic kernel of :func:`~clkit.kernels.convolve` and
    :func:`~clkit.kernels.gaussian_blur` is built for each accumulation type the
    dtypes need, and the specialised kernel of every combination of mask (or
    sigma), image dtype, border mode and channel count.  Builds go to the disk
    cache, so a deployment can run this once at install time; with background
    builds turned off (:func:`clkit.background_builds`) its calls then never
    compile.

    Parameters
    ----------
    masks : sequence of array_like
        The masks ``convolve`` will be called with (the kernel depends on the
        mask's shape, whether it is separable and which of its taps are 0).
    sigmas : sequence of float or (float, float)
        The sigmas ``gaussian_blur`` will be called with (truncate 4).
    dtypes : sequence of dtype
        Image dtypes.
    modes : sequence of str
        Border modes.
    channels : sequence of int
        Channel counts (1 for HxW images).
    device : Device or str, optional

    Returns
    -------
    list of str
        What was built, one line each, with the seconds it took.

    Raises
    ------
    ArgumentTypeError
        An image dtype that ``convolve`` does not take.
    ArgumentValueError
        An unknown mode, a mask that is not a non-empty 2-D array of numbers, or a sigma
        ``gaussian_blur`` would refuse.
    DeviceNotFoundError
        ``device`` names no visible device.

    Examples
    --------
    >>> import numpy as np
    >>> from clkit.kernels import warmup
    >>> built = warmup(masks=[np.ones((3, 3)) / 9], device="cpu")
    >>> [line.split(":")[0] for line in built]     # each line ends with the seconds it took
    ['generic float32', 'convolve 3x3 float32 reflect']
    """
    dev = select(device)
    dtypes = [np.dtype(d) for d in dtypes]
    for d in dtypes:
        if d not in [np.dtype(t) for t in IMAGE_DTYPES]:
            raise ArgumentTypeError(f"warmup: image dtype {d} is not one convolve takes; use "
                                    f"{', '.join(np.dtype(t).name for t in IMAGE_DTYPES)}")
    for m in modes:
        if m not in MODES:
            raise ArgumentValueError(f"warmup: unknown mode {m!r}; use one of {', '.join(MODES)}")
    try:
        masks = [np.asarray(m, dtype=np.float64) for m in masks]
    except (TypeError, ValueError):
        raise ArgumentValueError("warmup: masks must be 2-D arrays of numbers, as convolve "
                                 "takes them") from None
    for m in masks:
        if m.ndim != 2 or m.size == 0:
            raise ArgumentValueError(f"warmup: a mask must be a non-empty 2-D array; got shape "
                                     f"{m.shape}")
    built = []

    def timed(label, fn):
        start = time.perf_counter()
        fn()
        built.append(f"{label}: {time.perf_counter() - start:.2f} s")

    def image(dtype, c):
        # wide enough that the launches take their usual work-group size
        return np.zeros((8, 256) + ((c,) if c > 1 else ()), dtype)

    accs = dict.fromkeys(np.dtype(np.float64 if d == np.float64 else np.float32) for d in dtypes)
    with _tiers.tier("generic"):
        for acc in accs:
            timed(f"generic {acc.name}", lambda: convolve(image(acc, 1), np.ones((1, 1)),
                                                          device=dev))
    with _tiers.tier("specialised"):
        for dtype in dtypes:
            for mode in modes:
                for c in channels:
                    img = image(dtype, c)
                    for m in masks:
                        timed(f"convolve {m.shape[0]}x{m.shape[1]} {dtype.name} {mode}"
                              + (f" {c} channels" if c > 1 else ""),
                              lambda: convolve(img, m, mode=mode, device=dev))
                    for s in sigmas:
                        timed(f"gaussian_blur sigma {s} {dtype.name} {mode}"
                              + (f" {c} channels" if c > 1 else ""),
                              lambda: gaussian_blur(img, s, mode=mode, device=dev))
    return built
