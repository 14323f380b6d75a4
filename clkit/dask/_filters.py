"""clkit's filters on dask arrays: each describes itself (halo, modes, result dtype) as a
:class:`~._graph.Filter` and leaves the rest to :func:`~._graph.filtered`."""

from __future__ import annotations

import numbers

import numpy as np

from .. import ArgumentTypeError, ArgumentValueError
from ._graph import Filter, check_mode, filtered

#: The modes of clkit.kernels' convolve and gaussian_blur.
KERNEL_MODES = ("reflect", "constant", "nearest", "mirror", "wrap")


def dask_array(x, name: str, arg: str = "image"):
    import dask.array as da
    if isinstance(x, da.Array):
        return x
    if isinstance(x, np.ndarray):
        return da.from_array(x)
    raise ArgumentTypeError(f"{name}: {arg} must be a dask array (or a numpy array), not "
                            f"{type(x).__name__}; e.g. dask.array.from_array(a, chunks=1024)")


def device_spec(device, name: str):
    """A device as what a task carries: a spec string (or None for each worker's own)."""
    from .. import Device
    if device is None or isinstance(device, str) and device != "all":
        return device
    if isinstance(device, Device):
        return device.id
    raise ArgumentValueError(f"{name}: device must be one device spec (such as '1:0' or 'gpu') "
                             f"or None (each worker's own device), not {device!r}; clkit.dask "
                             "spreads the blocks over the workers, each on its device")


def halo_of(halo, ndim: int, name: str) -> tuple:
    """``halo``: a number for every axis, or one per leading axis, each a number or
    (before, after); the rest 0."""
    items = [halo] * ndim if isinstance(halo, numbers.Integral) else list(halo)
    if len(items) > ndim:
        raise ArgumentValueError(f"{name}: halo has {len(items)} entries for an array of "
                                 f"{ndim} axes")
    out = []
    for h in items + [0] * (ndim - len(items)):
        pair = (h, h) if isinstance(h, numbers.Integral) else tuple(h)
        if len(pair) != 2 or not all(isinstance(v, numbers.Integral) and v >= 0 for v in pair):
            raise ArgumentValueError(f"{name}: a halo is a whole number of at least 0 or a pair "
                                     f"(before, after) of them, not {h!r}")
        out.append((int(pair[0]), int(pair[1])))
    return tuple(out)


def apply(function, image, *args, halo=0, mode="reflect", dtype=None, drop_last=False,
          device=None, **kwargs):
    """Any clkit filter on a dask array, exact at every seam and edge.

    Each output block is computed on its worker's device from a window of the input that
    reaches ``halo`` pixels past it (built from the neighbouring chunks, or across the array
    for ``wrap``); at the array's edges the filter's own border mode applies, as in the
    unchunked call.  Filters applied one after another to a clkit.dask result run in one pass
    over the chunks, the intermediates staying on the device.

    Parameters
    ----------
    function : callable
        ``function(image, *args, mode=mode, device=..., **kwargs)`` on device arrays, such as
        a :mod:`clkit.kernels` filter.  ``mode`` is passed on only when given (not None).
    image : dask.array.Array
    *args
        Passed on after the image.
    halo : int or sequence
        How far an output pixel reads: a number for every axis, or one entry per leading
        axis (the rest 0), each a number or ``(before, after)``.  Along an axis where a
        mask has ``m`` weights, scipy.ndimage's ``correlate`` with ``origin`` reads
        ``m // 2 + origin`` before and ``(m - 1) // 2 - origin`` after; its ``convolve``
        ``(m - 1) // 2 - origin`` before and ``m // 2 + origin`` after.
    mode : str or sequence of str or None
        The border mode (scipy.ndimage's names), or one per axis.
    dtype : numpy dtype, optional
        The result's dtype; by default the image's.
    drop_last : bool
        The result lacks the image's last axis (read whole), as :func:`grayscale`'s.
    device : str, optional
        A device spec for every task; by default each worker's own
        (:func:`worker_device`).
    **kwargs
        Passed on to ``function``.

    Returns
    -------
    dask.array.Array

    Examples
    --------
    >>> import numpy as np, dask.array as da, clkit.dask, clkit.kernels
    >>> image = da.from_array(np.arange(36, dtype=np.float32).reshape(6, 6), chunks=3)
    >>> blurred = clkit.dask.apply(clkit.kernels.convolve, image, np.ones((3, 3)) / 9,
    ...                            halo=1, mode="wrap", dtype=np.float32)
    >>> round(float(blurred[0, 0].compute()), 3)   # (35 + 30 + 31 + 5 + 0 + 1 + 11 + 6 + 7) / 9
    14.0
    """
    name = getattr(function, "__name__", "apply")
    image = dask_array(image, name)
    ndim = image.ndim
    halo = halo_of(halo, ndim, name)
    modes = ("constant",) * ndim if mode is None else check_mode(name, mode, ndim)
    if mode is not None:
        kwargs = dict(kwargs, mode=mode)
    elif any(lo or hi for lo, hi in halo):
        raise ArgumentValueError(f"{name}: a filter with a halo needs its border mode "
                                 "(mode=...)")
    return filter_array(function, image, args, kwargs, halo, modes, dtype, device, drop_last)


def filter_array(function, image, args, kwargs, halo, modes, dtype=None, device=None,
                 drop_last=False, name=None):
    """:func:`apply` with its arguments checked: ``halo`` and ``modes`` one per axis,
    ``kwargs`` what the function takes (its ``mode`` included)."""
    name = name or getattr(function, "__name__", "apply")
    out_dtype = image.dtype if dtype is None else np.dtype(dtype)
    f = Filter(function, tuple(args), kwargs, tuple(halo), tuple(modes), out_dtype,
               bool(drop_last), name)
    return filtered(image, f, device_spec(device, name))


def worker_device(device=None):
    """The OpenCL device that clkit.dask's tasks use in this process.

    The rule, in order: ``device`` when given; ``CLKIT_DEVICE`` when set (the
    :func:`local_cluster` sets it for each worker); on a dask worker named by a number (as
    ``LocalCluster`` and ``dask-mpi`` name them), the device at that number modulo the count
    of devices of the default device's type (simulators left out); else the default device
    (:func:`clkit.select`).  The context is made on first use, in the worker.

    Parameters
    ----------
    device : Device or str, optional

    Returns
    -------
    Device

    Examples
    --------
    >>> import clkit.dask
    >>> clkit.dask.worker_device("cpu").type
    'cpu'
    """
    from ._blocks import worker_device as resolve
    return resolve(device)


