"""Depth image to point cloud, compacted on the device."""

from __future__ import annotations

import numpy as np

from .._engine.checks import array, check_dtype, check_ndim, check_number, is_device_array
from .._engine.dispatch import run
from .._engine.operation import CL_TYPES, Operation, program
from .._errors import ArgumentTypeError, ArgumentValueError
from .._memory import transfer as _transfer
from .._memory import pools as _memory


def _shape(device, dtype) -> tuple[int, int]:
    """(work-group size, pixels per work-item): one 16-byte load per work-item in full
    work-groups on GPUs; 16 pixels and small groups on CPUs (the faster with PoCL)."""
    return (16, 16) if device.type == "cpu" else (256, 16 // np.dtype(dtype).itemsize)


class _Points(Operation):
    """Points (and colours) of a band of rows; only the point count (4 bytes) comes home
    before the points are written, to size them."""

    name = "depth_to_points"
    gathers = True

    def __init__(self, shape, dtype, rgb, intrinsics, depth_scale, drop_invalid):
        self.shape = shape
        self.depth_dtype = dtype
        self.rgb = rgb
        self.intrinsics = intrinsics
        self.depth_scale = depth_scale
        self.drop_invalid = drop_invalid
        self.key = ("depth_to_points", shape, dtype, rgb, intrinsics, depth_scale, drop_invalid)
        self.result_row_bytes = 15 * shape[1]  # up to 12 bytes of point and 3 of colour a pixel
        self.align = 16 * dtype.itemsize  # a work-item's depths, read as one vector

    @property
    def speed_key(self):
        return (self.name, self.shape[1], self.depth_dtype, self.rgb, self.drop_invalid)

    def empty(self):
        return (np.empty((0, 3), np.float32),) + ((np.empty((0, 3), np.uint8),) if self.rgb
                                                   else ())

    def plan(self, rt, r0, r1):
        width = self.shape[1]
        n = (r1 - r0) * width
        wg, ppw = _shape(rt.device, self.depth_dtype)
        prg = program("depth_to_points", T=CL_TYPES[self.depth_dtype],
                      DROP_INVALID=int(self.drop_invalid), RGB=int(self.rgb), WG=wg, PPW=ppw)
        blocks = -(-n // (wg * ppw))
        common = dict(local_size=wg, device=rt.device, wait=False)
        # Rows r0.. of the image are rows 0.. of the band: shift the principal point to match.
        fx, fy, cx, cy = self.intrinsics
        scale, drop, rgb = self.depth_scale, self.drop_invalid, self.rgb
        count_pass, scan, points_pass = (prg.depth_to_points_count, prg.depth_to_points_scan,
                                         prg.depth_to_points)

        def launch(queue, srcs, dst):
            depth, colours = srcs[0], srcs[1] if rgb else None
            offsets, count = None, n
            if drop:
                offsets = _memory.empty(rt, blocks + 1, np.uint32, queue)  # all written
                count_pass(depth, offsets, n, scale, global_size=blocks * wg, queue=queue,
                           **common)
                scan(offsets, blocks, global_size=wg, queue=queue, **common)
                count = int(_transfer.download(rt, offsets[blocks:])[0])
            points = _memory.empty(rt, (count, 3), np.float32, queue)
            colors = _memory.empty(rt, (count, 3), np.uint8, queue) if rgb else None
            if count:
                points_pass(depth, colours, offsets, points, colors, width, n, fx, fy, cx,
                            cy - r0, scale, global_size=blocks * wg, queue=queue, **common)
            return (points, colors) if rgb else (points,)
        return launch


def depth_to_points(depth, fx, fy, cx, cy, *, depth_scale=1.0, rgb=None, drop_invalid=True,
                    device=None):
    """Back-project a depth image through a pinhole camera into 3-D points.

    For column u and row v: ``z = depth / depth_scale``,
    ``x = (u - cx) z / fx``, ``y = (v - cy) z / fy``.

    Parameters
    ----------
    depth : ndarray or device array
        HxW, uint16 (e.g. millimetres from a 16-bit PNG) or float32.
    fx, fy, cx, cy : float
        Focal lengths and principal point, in pixels.
    depth_scale : float
        Depth units per unit of z (1000 for millimetres to metres).
    rgb : ndarray or device array, optional
        HxWx3 uint8 colours of the same pixels.
    drop_invalid : bool
        Leave out pixels whose z is 0 or not finite (default).
    device : Device or str, optional
        Where to run: a spec, ``"all"`` or a list of specs.

    Returns
    -------
    points : ndarray or device array
        (N, 3) float32, in row-major pixel order.
    colors : ndarray or device array
        (N, 3) uint8, only when ``rgb`` is given (then a tuple is returned).

    Raises
    ------
    ArgumentTypeError
        A depth dtype other than uint16 or float32.
    ArgumentValueError
        A depth image that is not HxW, a ``depth_scale`` of 0, or ``rgb`` that is not HxWx3
        uint8 of the depth's size.
    DeviceNotFoundError
        ``device`` names no visible device.

    Examples
    --------
    >>> import numpy as np
    >>> from clkit.kernels import depth_to_points
    >>> depth = np.array([[1000, 0], [2000, 1000]], np.uint16)  # millimetres
    >>> depth_to_points(depth, 1.0, 1.0, 0.0, 0.0, depth_scale=1000.0, device="cpu")
    array([[0., 0., 1.],
           [0., 2., 2.],
           [1., 1., 1.]], dtype=float32)
    """
    name = "depth_to_points"
    depth = array(depth, name, "depth")
    check_ndim(name, "depth", depth.shape, (2,), "an HxW depth image")
    check_dtype(name, "depth", depth.dtype, (np.uint16, np.float32))
    intrinsics = tuple(check_number(name, n, v) for n, v in zip(("fx", "fy", "cx", "cy"),
                                                                  (fx, fy, cx, cy)))
    if intrinsics[0] == 0 or intrinsics[1] == 0:
        raise ArgumentValueError(f"{name}: fx and fy must not be 0")
    depth_scale = check_number(name, "depth_scale", depth_scale)
    if depth_scale == 0:
        raise ArgumentValueError(f"{name}: depth_scale must not be 0")
    if rgb is not None:
        if is_device_array(rgb) != is_device_array(depth):
            raise ArgumentTypeError(f"{name}: pass depth and rgb both as numpy arrays or both as "
                                    "device arrays")
        rgb = array(rgb, name, "rgb")
        if tuple(rgb.shape) != tuple(depth.shape) + (3,) or rgb.dtype != np.uint8:
            raise ArgumentValueError(f"{name}: rgb must be HxWx3 uint8 matching depth "
                                     f"{tuple(depth.shape)}; got shape {tuple(rgb.shape)} and "
                                     f"dtype {rgb.dtype}")
    op = _Points(tuple(depth.shape), np.dtype(depth.dtype), rgb is not None, intrinsics,
                 depth_scale, bool(drop_invalid))
    results = run(op, [depth] + ([rgb] if rgb is not None else []), None, device)
    return results if rgb is not None else results[0]
