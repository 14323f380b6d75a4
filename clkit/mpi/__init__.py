"""The kernel library across MPI ranks (``pip install clkit[mpi]``: mpi4py and MPICH).

The root rank cuts the image into row bands, one per rank, each with the
halo rows its kernel reads, and scatters them; every rank runs its band on
its own local device; the root gathers the bands.  The result on the root
equals the single-process result; other ranks get ``None``.

Each rank picks a device by its rank within its node, over the devices that
``CLKIT_DEVICE`` admits (all of them when it is unset, best first): with two
GPUs per node and ``CLKIT_DEVICE=gpu``, local ranks 0 and 1 take GPU 0 and 1.

An error on any rank is raised on every rank (:class:`RankError` on the
others), so that no rank waits for ever.

Run from the command line with ``mpiexec -n N python -m clkit.mpi convolve IN
OUT --mask ...`` (also ``gray``, ``blur``, ``mandelbrot``: the same commands,
arguments and outputs as ``clkit``'s, on one file).
"""

from __future__ import annotations

import numpy as np

from .._engine import dispatch as _dispatch
from .._engine.filter import Filter, loadable
from .._errors import ClkitError
from .._platform.devices import ranked
from ..kernels import _elementwise, _grayscale, _mandelbrot

__all__ = ["RankError", "convolve", "gaussian_blur", "grayscale", "local_device", "mandelbrot",
           "vector_add"]


class RankError(ClkitError, RuntimeError):
    """Another rank failed; the message says which and why."""


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise ClkitError("clkit.mpi needs mpi4py: pip install 'clkit[mpi]' (mpi4py and "
                         "MPICH from PyPI)") from exc
    return MPI


def _comm(comm):
    return comm if comm is not None else _mpi().COMM_WORLD


def local_device(comm=None):
    """This rank's device: its rank within the node, over the devices ``CLKIT_DEVICE`` admits.

    Examples
    --------
    >>> import clkit.mpi
    >>> clkit.mpi.local_device().type  # doctest: +SKIP
    'gpu'
    """
    comm = _comm(comm)
    node = comm.Split_type(_mpi().COMM_TYPE_SHARED)
    local_rank = node.Get_rank()
    node.Free()
    admitted = ranked()
    return admitted[local_rank % len(admitted)]


def _together(comm, fn, *args):
    """Run ``fn`` on this rank; if it fails on any rank, raise on every rank."""
    try:
        value, error = fn(*args), None
    except Exception as exc:  # shared with the other ranks below, then raised again
        value, error = None, exc
    messages = comm.allgather(None if error is None else f"{type(error).__name__}: {error}")
    if error is not None:
        raise error
    for rank, message in enumerate(messages):
        if message is not None:
            raise RankError(f"rank {rank} failed: {message}")
    return value


def _bands(n: int, size: int) -> list[tuple[int, int]]:
    return [(n * r // size, n * (r + 1) // size) for r in range(size)]


def _scatter_rows(comm, root, arrays, needed):
    """Send each rank the rows ``needed(rank)`` of each root array; returns this rank's rows."""
    rank, size = comm.Get_rank(), comm.Get_size()
    meta = None
    if rank == root:
        meta = [(a.shape[1:], a.dtype.str) for a in arrays]
    meta = comm.bcast(meta, root=root)
    received = []
    for i, (tail, dtype) in enumerate(meta):
        row_items = int(np.prod(tail, dtype=np.int64))
        dtype = np.dtype(dtype)
        if rank == root:
            parts = [np.ascontiguousarray(arrays[i][needed(r)]) for r in range(size)]
            counts = [p.nbytes for p in parts]
            send = np.concatenate([p.reshape(-1).view(np.uint8) for p in parts]) \
                if sum(counts) else np.empty(0, np.uint8)
            spec = [send, (counts, np.cumsum([0] + counts[:-1]).tolist()), _mpi().BYTE]
        else:
            spec = None
        rows = len(needed(rank))
        mine = np.empty(rows * row_items * dtype.itemsize, np.uint8)
        comm.Scatterv(spec, mine, root=root)
        received.append(mine.view(dtype).reshape((rows,) + tuple(tail)))
    return received


def _gather_rows(comm, root, part, height):
    """Gather every rank's band of rows into one array on the root."""
    rank = comm.Get_rank()
    counts = comm.gather(part.nbytes, root=root)
    result = None
    spec = None
    if rank == root:
        result = np.empty((height,) + part.shape[1:], part.dtype)
        spec = [result.reshape(-1).view(np.uint8),
                (counts, np.cumsum([0] + counts[:-1]).tolist()), _mpi().BYTE]
    comm.Gatherv(np.ascontiguousarray(part).reshape(-1).view(np.uint8), spec, root=root)
    return result


def _run(comm, root, arrays_on_root, height_on_root, needed_for, compute):
    """Scatter, compute every band on its rank's device, gather; errors reach every rank."""
    comm = _comm(comm)
    rank, size = comm.Get_rank(), comm.Get_size()
    height = comm.bcast(height_on_root if rank == root else None, root=root)
    if isinstance(height, Exception):
        raise height
    bands = _bands(height, size)
    device = _together(comm, local_device, comm)
    rows = _scatter_rows(comm, root, arrays_on_root, lambda r: needed_for(*bands[r]))
    part = _together(comm, compute, rows, *bands[rank], device)
    return _gather_rows(comm, root, part, height)


def _root_check(comm, root, check):
    """Validate the root's arguments; a problem is raised on every rank."""
    comm = _comm(comm)
    return _together(comm, check if comm.Get_rank() == root else (lambda: None))


def grayscale(image, weights="bt601", comm=None, root=0):
    """:func:`clkit.kernels.grayscale` across the ranks of ``comm``; the result on ``root``.

    Examples
    --------
    >>> import numpy as np, clkit.mpi  # run under mpiexec
    >>> gray = clkit.mpi.grayscale(np.zeros((4, 4, 3), np.uint8))  # doctest: +SKIP
    """
    def check():
        img = np.ascontiguousarray(image)
        _grayscale.grayscale(img[:0], weights)  # the library's own checks, on no rows
        return img
    img = _root_check(comm, root, check)
    height = img.shape[0] if img is not None else None
    return _run(comm, root, [img] if img is not None else [], height,
                lambda r0, r1: np.arange(r0, r1),
                lambda rows, r0, r1, dev: _grayscale.grayscale(rows[0], weights, device=dev))


def vector_add(a, b, comm=None, root=0):
    """:func:`clkit.kernels.vector_add` across the ranks of ``comm``; the result on ``root``.

    Examples
    --------
    >>> import numpy as np, clkit.mpi  # run under mpiexec
    >>> total = clkit.mpi.vector_add(np.ones(8), np.ones(8))  # doctest: +SKIP
    """
    def check():
        x, y = np.asarray(a), np.asarray(b)
        _elementwise.vector_add(x.reshape(-1)[:0], y.reshape(-1)[:0])
        if x.shape != y.shape:
            _elementwise.vector_add(x, y)  # raises the library's message
        return x.reshape(-1), y.reshape(-1), x.shape
    checked = _root_check(comm, root, check)
    arrays, shape = (list(checked[:2]), checked[2]) if checked is not None else ([], None)
    result = _run(comm, root, arrays, arrays[0].size if arrays else None,
                  lambda r0, r1: np.arange(r0, r1),
                  lambda rows, r0, r1, dev: _elementwise.vector_add(rows[0], rows[1], device=dev))
    return result.reshape(shape) if result is not None else None


def mandelbrot(width, height, comm=None, root=0, **kwargs):
    """:func:`clkit.kernels.mandelbrot` across the ranks of ``comm``; the result on ``root``.

    Examples
    --------
    >>> import clkit.mpi  # run under mpiexec
    >>> counts = clkit.mpi.mandelbrot(640, 480, max_iter=100)  # doctest: +SKIP
    """
    def check():
        _mandelbrot.mandelbrot(1, 1, **kwargs)
        return _mandelbrot.check_args("mandelbrot", width, height, (0, 0, 0, 0), 1,
                                      kwargs.get("dtype", np.float32))[1]

    h = _root_check(comm, root, check)

    def compute(rows, r0, r1, dev):
        return _mandelbrot.mandelbrot_rows(width, height, r0, r1, device=dev, **kwargs)
    return _run(comm, root, [], h, lambda r0, r1: np.arange(0), compute)


def convolve(image, mask, mode="reflect", cval=0.0, comm=None, root=0):
    """:func:`clkit.kernels.convolve` across the ranks of ``comm``; the result on ``root``.

    Examples
    --------
    >>> import numpy as np, clkit.mpi  # run under mpiexec
    >>> out = clkit.mpi.convolve(np.ones((64, 64), np.float32), np.ones((3, 3)))  # doctest: +SKIP
    """
    return _filter(comm, root, image, lambda img: Filter.for_mask(
        "convolve", img, mask, mode, cval))


def gaussian_blur(image, sigma, mode="reflect", cval=0.0, truncate=4.0, comm=None, root=0):
    """:func:`clkit.kernels.gaussian_blur` across the ranks of ``comm``; the result on ``root``.

    Examples
    --------
    >>> import numpy as np, clkit.mpi  # run under mpiexec
    >>> out = clkit.mpi.gaussian_blur(np.ones((64, 64), np.float32), 2.0)  # doctest: +SKIP
    """
    return _filter(comm, root, image, lambda img: Filter.for_gaussian(
        "gaussian_blur", img, sigma, mode, cval, truncate))


def _filter(comm, root, image, make):
    """Scatter bands with their halo rows, filter each on its rank, gather."""
    comm = _comm(comm)

    def check():
        img = np.ascontiguousarray(image)
        return loadable(img), make(img)  # the filter of the image, the rows the kernels read
    checked = _root_check(comm, root, check)
    img, flt = checked if checked is not None else (None, None)
    flt = comm.bcast(flt, root=root)
    return _run(comm, root, [img] if img is not None else [],
                img.shape[0] if img is not None else None,
                lambda r0, r1: _dispatch.rows_needed(flt, r0, r1),
                lambda rows, r0, r1, dev: _dispatch.run_rows(flt, rows, r0, r1, dev))
