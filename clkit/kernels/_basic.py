"""hello, vector_add and grayscale: one work-item per few elements, no neighbours."""

from __future__ import annotations

import numpy as np

from .._devices import select
from .._errors import ArgumentTypeError, ArgumentValueError
from ._common import (CL_TYPES, apply, check_dtype, check_ndim, check_out, host_array,
                      is_device_array, program, require_fp64, round_up)

GROUP = 256  # work-group size of the element-wise kernels: valid everywhere, full warps on GPUs


def hello(device=None) -> str:
    """The classic first OpenCL program: the device writes "Hello, World!".

    Each work-item of ``kernels_cl/hello.cl`` writes one character; the host
    reads the characters back.

    Parameters
    ----------
    device : Device or str, optional
        Where to run (default: :func:`clkit.select`).

    Returns
    -------
    str
        ``"Hello, World!"``, as read back from the device.

    Examples
    --------
    >>> from clkit.kernels import hello
    >>> hello(device="cpu")
    'Hello, World!'
    """
    dev = select(device)
    text = np.zeros(13, np.int8)  # OpenCL char
    program("hello").hello(text, global_size=round_up(text.size, 16), local_size=16, device=dev)
    return text.tobytes().decode("ascii")


def vector_add(a, b, out=None, device=None):
    """Element-wise ``a + b``.

    Parameters
    ----------
    a, b : ndarray or device array
        Equal shapes and equal dtypes: float32, float64 (where the device has
        fp64), int8 to int64 or uint8 to uint64.  Integers wrap as in numpy.
    out : ndarray or device array, optional
        Where to write the result (same shape and dtype; the same kind as ``a``).
    device : Device or str, optional
        Where to run: a spec, ``"all"`` or a list of specs.

    Returns
    -------
    ndarray or device array
        Numpy in gives numpy out; device arrays in give a device array.

    Examples
    --------
    >>> import numpy as np
    >>> from clkit.kernels import vector_add
    >>> vector_add(np.arange(3, dtype=np.float32), np.ones(3, np.float32), device="cpu")
    array([1., 2., 3.], dtype=float32)
    """
    func = "vector_add"
    if not is_device_array(a):
        a = host_array(a, func, "a")
    if not is_device_array(b):
        b = host_array(b, func, "b")
    if a.dtype != b.dtype:
        raise ArgumentTypeError(f"{func}: a has dtype {a.dtype} and b {b.dtype}; convert one "
                                f"(e.g. b.astype(a.dtype)) so that both match")
    if tuple(a.shape) != tuple(b.shape):
        raise ArgumentValueError(f"{func}: a has shape {tuple(a.shape)} and b {tuple(b.shape)}; "
                                 "clkit does not broadcast: pass arrays of equal shape")
    dtype = check_dtype(func, "a", a.dtype, list(CL_TYPES))

    # Each work-item adds one 16-byte vector (VW elements): a GPU thread's widest load; on
    # PoCL as fast as 64 bytes, and numpy's own 16-byte alignment lets a CPU driver use
    # numpy memory in place.
    vw = max(1, 16 // dtype.itemsize)

    def launch(rt, srcs, dst, queue):
        if dtype == np.float64:
            require_fp64(func, rt.device, "float64")
        n = dst.size
        prg = program("vector_add", T=CL_TYPES[dtype], VW=vw)
        prg.vector_add(srcs[0], srcs[1], dst, n, global_size=round_up(-(-n // vw), GROUP),
                       local_size=GROUP, device=rt.device, wait=False, queue=queue)

    if is_device_array(a):
        return apply(func, device, [a, b], out, a.shape, dtype, launch)
    # Numpy arrays go flat, so that bands (for several devices, or arrays larger than a
    # device) are runs of elements whatever the shape.
    check_out(func, out, a.shape, dtype, on_device=False)
    flat_out = out.reshape(-1) if out is not None and out.flags.c_contiguous else None
    result = apply(func, device, [np.ravel(a), np.ravel(b)], flat_out, (a.size,), dtype,
                   launch).reshape(a.shape)
    if out is not None and flat_out is None:
        out[...] = result
    return out if out is not None else result


WEIGHTS = {"bt601": (0.299, 0.587, 0.114), "bt709": (0.2126, 0.7152, 0.0722)}


def _weights(func, weights) -> tuple:
    if isinstance(weights, str):
        try:
            return WEIGHTS[weights.lower()]
        except KeyError:
            raise ArgumentValueError(f"{func}: unknown weights {weights!r}; use 'bt601', 'bt709' "
                                     "or three numbers") from None
    try:
        values = tuple(float(w) for w in weights)
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"{func}: weights must be 'bt601', 'bt709' or three numbers, "
                                f"not {weights!r}") from None
    if len(values) != 3 or not all(np.isfinite(values)):
        raise ArgumentValueError(f"{func}: weights must be 3 finite numbers (R, G, B), got "
                                 f"{weights!r}")
    return values


def grayscale(image, weights="bt601", out=None, device=None):
    """Convert an RGB or RGBA image to gray.

    Parameters
    ----------
    image : ndarray or device array
        HxWx3 (RGB) or HxWx4 (RGBA, alpha ignored), uint8 or float32.
    weights : {"bt601", "bt709"} or sequence of 3 floats
        The R, G, B weights.  For uint8, the result equals
        ``cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)`` within 1 (bt601);
        for float32, ``image[..., :3] @ weights``.
    out : ndarray or device array, optional
        HxW, the image's dtype.
    device : Device or str, optional
        Where to run: a spec, ``"all"`` or a list of specs.

    Returns
    -------
    ndarray or device array
        HxW, the image's dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from clkit.kernels import grayscale
    >>> rgb = np.array([[[255, 0, 0], [255, 255, 255]]], np.uint8)
    >>> grayscale(rgb, device="cpu")
    array([[ 76, 255]], dtype=uint8)
    """
    func = "grayscale"
    if not is_device_array(image):
        image = host_array(image, func, "image")
    check_ndim(func, "image", image.shape, (3,), "HxWx3 (RGB) or HxWx4 (RGBA)")
    channels = image.shape[2]
    if channels not in (3, 4):
        raise ArgumentValueError(f"{func}: image must have 3 (RGB) or 4 (RGBA) channels; got "
                                 f"shape {tuple(image.shape)}")
    dtype = check_dtype(func, "image", image.dtype, (np.uint8, np.float32))
    wr, wg, wb = _weights(func, weights)
    block = 16 if dtype == np.uint8 else 4  # pixels per 16-byte access

    def launch(rt, srcs, dst, queue):
        # GPU: one block per work-item, so that a warp reads contiguous spans. CPU: 16 blocks
        # per work-item in groups of 64 measured fastest on PoCL (fewer, longer work-items).
        gpu = rt.device.type == "gpu"
        ppw, group = (block, GROUP) if gpu else (16 * block, 64)
        n = dst.size
        prg = program("grayscale", T=CL_TYPES[dtype], CN=channels, PPW=ppw)
        prg.grayscale(srcs[0], dst, n, wr, wg, wb, global_size=round_up(-(-n // ppw), group),
                      local_size=group, device=rt.device, wait=False, queue=queue)

    return apply(func, device, [image], out, image.shape[:2], dtype, launch)
