"""Depth image to point cloud, compacted on the device."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from .._errors import ArgumentTypeError, ArgumentValueError
from .._runtime import runtime
from . import _bands
from ._common import (CL_TYPES, check_dtype, check_ndim, check_number, contiguous_device,
                      device_of, devices_of, host_array, host_copy, is_device_array, is_multi,
                      program, upload)



def _shape(device, dtype) -> tuple[int, int]:
    """(work-group size, pixels per work-item): one 16-byte load per work-item in full
    work-groups on GPUs; 16 pixels and small groups on CPUs (2.5x faster with PoCL)."""
    return (16, 16) if device.type == "cpu" else (256, 16 // np.dtype(dtype).itemsize)


def launch_points(rt, depth, rgb, intrinsics, depth_scale, drop_invalid, queue=None):
    """Enqueue the kernels for one depth image on the device; return (points, colors) arrays.

    Only the point count (4 bytes) is read back, to size the output.
    """
    queue = queue or rt.queue
    height, width = depth.shape
    n = height * width
    dtype = np.dtype(depth.dtype)
    wg, ppw = _shape(rt.device, dtype)
    defines = dict(T=CL_TYPES[dtype], DROP_INVALID=int(drop_invalid),
                   RGB=int(rgb is not None), WG=wg, PPW=ppw)
    blocks = -(-n // (wg * ppw))
    prg = program("depth_to_points", **defines)
    launch = dict(local_size=wg, device=rt.device, wait=False, queue=queue)
    offsets = None
    count = n
    if drop_invalid:
        offsets = cl_array.empty(queue, blocks + 1, np.uint32)  # the kernels write every entry
        prg.depth_to_points_count(depth, offsets, n, depth_scale, global_size=blocks * wg,
                                  **launch)
        prg.depth_to_points_scan(offsets, blocks, global_size=wg, **launch)
        total = np.empty(1, np.uint32)
        cl.enqueue_copy(queue, total, offsets.base_data, src_offset=4 * blocks)
        count = int(total[0])
    points = cl_array.empty(queue, (count, 3), np.float32)
    colors = cl_array.empty(queue, (count, 3), np.uint8) if rgb is not None else None
    if count:
        fx, fy, cx, cy = intrinsics
        prg.depth_to_points(depth, rgb, offsets, points, colors, width, n, fx, fy, cx, cy,
                            depth_scale, global_size=blocks * wg, **launch)
    return points, colors


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
    func = "depth_to_points"
    on_device = is_device_array(depth)
    if not on_device:
        depth = host_array(depth, func, "depth")
    check_ndim(func, "depth", depth.shape, (2,), "an HxW depth image")
    check_dtype(func, "depth", depth.dtype, (np.uint16, np.float32))
    intrinsics = tuple(check_number(func, n, v) for n, v in zip(("fx", "fy", "cx", "cy"),
                                                                  (fx, fy, cx, cy)))
    if intrinsics[0] == 0 or intrinsics[1] == 0:
        raise ArgumentValueError(f"{func}: fx and fy must not be 0")
    depth_scale = check_number(func, "depth_scale", depth_scale)
    if depth_scale == 0:
        raise ArgumentValueError(f"{func}: depth_scale must not be 0")
    if rgb is not None:
        if is_device_array(rgb) != on_device:
            raise ArgumentTypeError(f"{func}: pass depth and rgb both as numpy arrays or both as "
                                    "device arrays")
        if not on_device:
            rgb = host_array(rgb, func, "rgb")
        if tuple(rgb.shape) != tuple(depth.shape) + (3,) or rgb.dtype != np.uint8:
            raise ArgumentValueError(f"{func}: rgb must be HxWx3 uint8 matching depth "
                                     f"{tuple(depth.shape)}; got shape {tuple(rgb.shape)} and "
                                     f"dtype {rgb.dtype}")
    inputs = [depth] + ([rgb] if rgb is not None else [])
    multi = is_multi(device)
    home = device_of(func, None if multi else device, inputs) if on_device or not multi else None
    devices = devices_of(device) if multi else [home]
    if depth.size == 0:
        points = np.empty((0, 3), np.float32)
        colors = np.empty((0, 3), np.uint8)
        if on_device:
            points, colors = (cl_array.to_device(runtime(home).queue, x) for x in (points, colors))
        return points if rgb is None else (points, colors)
    if on_device and not multi:
        rt = runtime(home)
        d_rgb = rgb if rgb is None else contiguous_device(rgb)
        points, colors = launch_points(rt, contiguous_device(depth), d_rgb, intrinsics,
                                       depth_scale, drop_invalid)
        return points if rgb is None else (points, colors)
    host_depth = host_copy(depth) if on_device else depth
    host_rgb = host_copy(rgb) if on_device and rgb is not None else rgb
    pieces = {}

    def band(rt, queue, r0, r1):
        # Rows r0.. of the image are rows 0.. of the band: shift the principal point to match.
        fx_, fy_, cx_, cy_ = intrinsics
        # depths are read as one vector of PPW per work-item, aligned to its size
        align = _shape(rt.device, host_depth.dtype)[1] * host_depth.itemsize
        d_depth = upload(rt, host_depth[r0:r1], queue, align=align)
        d_rgb = None if host_rgb is None else upload(rt, host_rgb[r0:r1], queue)
        points, colors = launch_points(rt, d_depth, d_rgb, (fx_, fy_, cx_, cy_ - r0),
                                       depth_scale, drop_invalid, queue)
        pieces[r0] = (points.get(), None if colors is None else colors.get())

    height = host_depth.shape[0]
    row_bytes = host_depth[:1].nbytes + (0 if host_rgb is None else host_rgb[:1].nbytes) \
        + 15 * host_depth.shape[1]  # up to 12 bytes of point and 3 of colour per pixel

    def probe(dev):
        rows = max(1, min(height, (1 << 22) // row_bytes))
        band(runtime(dev), runtime(dev).queue, 0, rows)
        return rows

    key = (func, host_depth.dtype, host_depth.shape[1], host_rgb is not None, drop_invalid)
    plan = _bands.proportional(devices, height, key, probe) if multi else [(home, 0, height)]
    pieces.clear()
    _bands.run(plan, band, lambda dev: _bands.tile_rows(dev, row_bytes))
    ordered = [pieces[r0] for r0 in sorted(pieces)]
    points = np.concatenate([p for p, _ in ordered])
    colors = None if host_rgb is None else np.concatenate([c for _, c in ordered])
    if on_device:
        queue = runtime(home).queue
        points = cl_array.to_device(queue, points)
        colors = None if colors is None else cl_array.to_device(queue, colors)
    return points if rgb is None else (points, colors)
