"""07 - Depth image to point cloud: back-projection through a pinhole camera.

    python examples/07_depth_to_points.py

A depth camera (Kinect, RealSense, a phone's LiDAR) gives, for each pixel,
the distance along the viewing axis.  With the camera's intrinsics (focal
lengths fx, fy and principal point cx, cy, in pixels) each pixel (u, v) with
depth z becomes the 3-D point

    x = (u - cx) * z / fx,    y = (v - cy) * z / fy,    z

This script draws a synthetic depth image (a ball in front of a wall, with a
hole where the sensor saw nothing), turns it into coloured points on the
device, checks them against numpy and writes a PLY file that MeshLab,
CloudCompare or Open3D open.
"""

from pathlib import Path

import numpy as np

import clkit
from clkit.kernels import depth_to_points

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "output"
OUTPUT.mkdir(exist_ok=True)

# A 640x480 camera with the Kinect's usual intrinsics; depth in millimetres (uint16), as a
# 16-bit PNG from such a camera holds it.
width, height = 640, 480
fx = fy = 525.0
cx, cy = 319.5, 239.5
depth_scale = 1000.0                                   # depth units per metre

v, u = np.mgrid[0:height, 0:width]
depth = np.full((height, width), 2500, np.uint16)      # a flat wall 2.5 m away
ball = (u - 400.0) ** 2 + (v - 220.0) ** 2 < 120.0 ** 2  # a ball, seen as a disc...
bulge = np.sqrt(np.clip(120.0 ** 2 - (u - 400.0) ** 2 - (v - 220.0) ** 2, 0, None))
depth[ball] = (1800 - 2.0 * bulge[ball]).astype(np.uint16)  # ...nearer in the middle
depth[40:100, 60:200] = 0                              # no measurement: a hole in the data

# Colours: the wall in a checkerboard, the ball orange.
rgb = np.where((((u // 40) + (v // 40)) % 2 == 0)[..., None], 200, 120).astype(np.uint8)
rgb = np.repeat(rgb, 3, axis=2)
rgb[ball] = (255, 140, 0)

device = clkit.select()
points, colors = depth_to_points(depth, fx, fy, cx, cy, depth_scale=depth_scale, rgb=rgb,
                                 device=device)

# The same in numpy: every pixel, then drop those without depth (z == 0).
z = depth.astype(np.float32) / np.float32(depth_scale)
x = (u.astype(np.float32) - np.float32(cx)) * z / np.float32(fx)
y = (v.astype(np.float32) - np.float32(cy)) * z / np.float32(fy)
valid = (z != 0).reshape(-1)
expected = np.stack([x, y, z], axis=-1).reshape(-1, 3)[valid]
assert points.shape == expected.shape and points.dtype == np.float32
assert np.allclose(points, expected, rtol=1e-5, atol=1e-6)
assert np.array_equal(colors, rgb.reshape(-1, 3)[valid])
print(f"{width}x{height} depth image -> {len(points):,} points "
      f"({valid.size - len(points):,} pixels without depth dropped), equal to numpy")
print(f"x from {points[:, 0].min():.2f} to {points[:, 0].max():.2f} m, "
      f"y from {points[:, 1].min():.2f} to {points[:, 1].max():.2f} m, "
      f"z from {points[:, 2].min():.2f} to {points[:, 2].max():.2f} m")

# PLY: a text header naming the properties, then one binary record per point.
vertex = np.empty(len(points), dtype=[("x", "<f4"), ("y", "<f4"), ("z", "<f4"),
                                      ("red", "u1"), ("green", "u1"), ("blue", "u1")])
vertex["x"], vertex["y"], vertex["z"] = points.T
vertex["red"], vertex["green"], vertex["blue"] = colors.T
header = (f"ply\nformat binary_little_endian 1.0\nelement vertex {len(points)}\n"
          "property float x\nproperty float y\nproperty float z\n"
          "property uchar red\nproperty uchar green\nproperty uchar blue\nend_header\n")
path = OUTPUT / "07_points.ply"
path.write_bytes(header.encode("ascii") + vertex.tobytes())
print(f"wrote {path}: open it in MeshLab or with open3d.io.read_point_cloud")
print(f"the clkit command does the same for depth files: clkit points DEPTH.png OUT.ply "
      f"--fx {fx:g} --fy {fy:g} --cx {cx:g} --cy {cy:g} --depth-scale {depth_scale:g}")
