"""grayscale: a weighted sum of each pixel's R, G and B."""

from __future__ import annotations

import numpy as np

from .._engine.checks import array, check_dtype, check_ndim
from .._engine.dispatch import run
from .._engine.operation import CL_TYPES, Operation, program, round_up
from .._errors import ArgumentTypeError, ArgumentValueError
from .._launch.kernel import Prepared

GROUP = 256  # GPU work-group: full warps, a warp reading contiguous spans
#: The R, G, B weights of ITU-R BT.601 (what ``cv2.COLOR_RGB2GRAY`` uses) and BT.709.
WEIGHTS = {"bt601": (0.299, 0.587, 0.114), "bt709": (0.2126, 0.7152, 0.0722)}


def gray_weights(weights="bt601") -> tuple[float, float, float]:
    """The (R, G, B) weights of a gray conversion, as :func:`grayscale` reads them.

    Parameters
    ----------
    weights : {"bt601", "bt709"} or sequence of 3 floats

    Returns
    -------
    tuple of 3 floats

    Raises
    ------
    ArgumentValueError
        A name other than ``"bt601"`` and ``"bt709"``, or not three finite numbers.

    Examples
    --------
    >>> from clkit.kernels import gray_weights
    >>> gray_weights("bt601")
    (0.299, 0.587, 0.114)
    """
    name = "grayscale"
    if isinstance(weights, str):
        try:
            return WEIGHTS[weights.lower()]
        except KeyError:
            raise ArgumentValueError(f"{name}: unknown weights {weights!r}; use 'bt601', 'bt709' "
                                     "or three numbers") from None
    try:
        values = tuple(float(w) for w in weights)
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"{name}: weights must be 'bt601', 'bt709' or three numbers, "
                                f"not {weights!r}") from None
    if len(values) != 3 or not all(np.isfinite(values)):
        raise ArgumentValueError(f"{name}: weights must be 3 finite numbers (R, G, B), got "
                                 f"{weights!r}")
    return values


def int_lanes(device) -> int:
    """The uint8 kernel's LANES on a CPU: blocks in fours where the device's native int vectors
    have 16 lanes (AVX-512), else in pairs."""
    return 16 if device.cl_device.native_vector_width_int >= 16 else 8


class _Gray(Operation):
    name = "grayscale"

    def __init__(self, shape, dtype, weights):
        self.shape = shape[:2]
        self.channels = shape[2]
        self.dtype = dtype
        self.weights = weights
        self.key = ("grayscale", shape, dtype, weights)

    def plan(self, rt, r0, r1):
        n = (r1 - r0) * self.shape[1]
        block = 16 if self.dtype == np.uint8 else 4  # pixels per 16-byte access
        # GPU: one block per work-item, so that a warp reads contiguous spans. CPU: 16 blocks
        # per work-item in groups of 64 measured fastest on PoCL (fewer, longer work-items).
        ppw, group = (block, GROUP) if rt.device.type == "gpu" else (16 * block, 64)
        lanes = int_lanes(rt.device) if self.dtype == np.uint8 and ppw > block else 4
        prg = program("grayscale", T=CL_TYPES[self.dtype], CN=self.channels, PPW=ppw,
                      LANES=lanes)
        gray = Prepared(prg, "grayscale", rt, (None, None, n, *self.weights),
                        round_up(-(-n // ppw), group), group)

        def launch(queue, srcs, dst):
            gray(queue, srcs[0], dst)
        return launch


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

    Raises
    ------
    ArgumentTypeError
        An image dtype other than uint8 or float32.
    ArgumentValueError
        An image that is not HxWx3 or HxWx4, unknown ``weights``, or an ``out`` of another
        shape or dtype.
    DeviceNotFoundError
        ``device`` names no visible device.

    Examples
    --------
    >>> import numpy as np
    >>> from clkit.kernels import grayscale
    >>> rgb = np.array([[[255, 0, 0], [255, 255, 255]]], np.uint8)
    >>> grayscale(rgb, device="cpu")
    array([[ 76, 255]], dtype=uint8)
    """
    name = "grayscale"
    image = array(image, name, "image")
    check_ndim(name, "image", image.shape, (3,), "HxWx3 (RGB) or HxWx4 (RGBA)")
    if image.shape[2] not in (3, 4):
        raise ArgumentValueError(f"{name}: image must have 3 (RGB) or 4 (RGBA) channels; got "
                                 f"shape {tuple(image.shape)}")
    dtype = check_dtype(name, "image", image.dtype, (np.uint8, np.float32))
    op = _Gray(tuple(image.shape), dtype, gray_weights(weights))
    return run(op, [image], out, device)
