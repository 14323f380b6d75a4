"""``clkit points DEPTH OUT.ply --fx --fy --cx --cy``: depth images to 3-D point clouds."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import kernels
from .._errors import ArgumentValueError
from .._io import imageio as _imageio
from . import _types
from ._batch import devices_of, for_each_file
from ._command import Command, UsageError
from ._images import add_io

_DEPTH_FORMS = ("a depth map is one channel of 16-bit integers (a 16-bit PNG or TIFF, or a "
                "uint16 .npy) or of float32 (a float TIFF or .npy)")


def read_depth(src: Path) -> np.ndarray:
    """A depth map as uint16 or float32, HxW."""
    depth = _imageio.read_image(src)
    if depth.ndim == 3 and depth.shape[2] == 1:
        depth = depth[:, :, 0]  # an HxWx1 array is one channel too
    if depth.ndim != 2:
        raise ArgumentValueError(f"{src}: has {depth.shape[2]} channels; {_DEPTH_FORMS}")
    if depth.dtype == np.uint8:
        raise ArgumentValueError(f"{src}: is an 8-bit image; {_DEPTH_FORMS}")
    if depth.dtype.kind == "f":
        return depth.astype(np.float32, copy=False)
    if depth.dtype != np.uint16:
        low, high = int(depth.min()), int(depth.max())
        if low < 0 or high > 65535:
            raise ArgumentValueError(f"{src}: holds {depth.dtype} values from {low} to {high}; "
                                     f"{_DEPTH_FORMS}")
        depth = depth.astype(np.uint16)
    return depth


def find_rgb(rgb, depth_src: Path, batch: bool) -> Path | None:
    """The colour image of one depth map: ``--rgb`` itself, or its same-named file."""
    if rgb is None:
        return None
    rgb = Path(rgb)
    if not batch:
        if rgb.is_dir():
            raise UsageError(f"--rgb {rgb} is a folder; with one depth map give one image")
        return rgb
    if not rgb.is_dir():
        raise UsageError(f"--rgb {rgb} must be a folder when DEPTH is a folder "
                         "(with an image of the same name for each depth map)")
    same = rgb / depth_src.name
    if same.is_file():
        return same
    for candidate in _imageio.list_images(rgb):
        if candidate.stem == depth_src.stem:
            return candidate
    raise FileNotFoundError(f"{depth_src}: no colour image named {depth_src.stem}.* in {rgb}")


def read_rgb(path: Path, depth: np.ndarray, depth_src: Path) -> np.ndarray:
    rgb = _imageio.read_image(path, color=True)[:, :, :3]
    if rgb.dtype != np.uint8:
        raise ArgumentValueError(f"{path}: the colours must be an 8-bit image, not {rgb.dtype}")
    if rgb.shape[:2] != depth.shape:
        raise ArgumentValueError(f"{path} is {rgb.shape[1]}x{rgb.shape[0]} but the depth map "
                                 f"{depth_src} is {depth.shape[1]}x{depth.shape[0]}; they must "
                                 "match")
    return np.ascontiguousarray(rgb)


class Points(Command):
    def arguments(self, p):
        add_io(p, "a depth map (16-bit PNG/TIFF, float TIFF, .npy) or a folder of them",
               "the point cloud, binary PLY (a folder when DEPTH is one)", "DEPTH", "OUT.ply")
        intrinsics = p.add_argument_group("camera intrinsics, in pixels")
        intrinsics.add_argument("--fx", type=_types.nonzero, required=True,
                                help="focal length along x")
        intrinsics.add_argument("--fy", type=_types.nonzero, required=True,
                                help="focal length along y")
        intrinsics.add_argument("--cx", type=_types.finite, required=True,
                                help="principal point, column")
        intrinsics.add_argument("--cy", type=_types.finite, required=True,
                                help="principal point, row")
        p.add_argument("--depth-scale", type=_types.positive, default=1.0, metavar="S",
                       help="depth units per metre (z = depth / S): 1000 for millimetres, 5000 "
                            "for the TUM RGB-D data (default: 1)")
        p.add_argument("--rgb", metavar="IMG",
                       help="colour the points from this image (same size as the depth map; a "
                            "folder of same-named images when DEPTH is a folder)")
        p.add_argument("--keep-invalid", action="store_true",
                       help="keep the pixels with no depth (z = 0, NaN, inf): one point per "
                            "pixel")

    def run(self, args):
        devices = devices_of(args.device)
        out = Path(args.output)
        batch = Path(args.input).is_dir()
        if not batch and not out.is_dir() and out.suffix.lower() != ".ply":
            raise UsageError(f"{out}: the point cloud is written as PLY; name it .ply")

        def process(src, dst, device):
            depth = read_depth(src)
            rgb_path = find_rgb(args.rgb, src, batch)
            rgb = None if rgb_path is None else read_rgb(rgb_path, depth, src)
            result = kernels.depth_to_points(depth, args.fx, args.fy, args.cx, args.cy,
                                             depth_scale=args.depth_scale, rgb=rgb,
                                             drop_invalid=not args.keep_invalid, device=device)
            points, colors = result if rgb is not None else (result, None)
            _imageio.write_ply(dst, points, colors)
            if len(points) == 0:
                return " (0 points: every pixel's depth is 0 or not finite)"
            return f" ({len(points):,} points{', with colours' if rgb is not None else ''})"

        for_each_file(args, process, devices, out_suffix=".ply", unit="point cloud")
