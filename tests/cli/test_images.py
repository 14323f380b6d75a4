"""The image commands through the real entry point: ``python -m clkit ...`` in a subprocess.

Each test writes small real files (PNG, JPEG, 16-bit PNG, .npy, folders) into
tmp_path, runs the command on the default device, and checks the files it
wrote against numpy, scipy and OpenCV.  Bad input must give exactly one line
``clkit: error: ...`` on stderr, exit status 2, and leave no output file.
"""

import os
import threading
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from _cli import INTRINSICS, clkit, fails, intrinsic_args, ok, read, save
from _reference import assert_counts_equal, mandelbrot_reference

scipy_ndimage = pytest.importorskip("scipy.ndimage")
cv2 = pytest.importorskip("cv2")

def leftovers(folder):
    """Temporary files an interrupted write would leave (hidden, .tmp)."""
    return [p.name for p in Path(folder).iterdir() if p.name.startswith(".")]


@pytest.fixture
def rgb(rng):
    return rng.integers(0, 256, (17, 23, 3), dtype=np.uint8)


def read_ply(path):
    """Parse a binary little-endian PLY file independently of clkit's writer."""
    data = Path(path).read_bytes()
    end = data.index(b"end_header\n") + len(b"end_header\n")
    header = data[:end].decode("ascii").splitlines()
    assert header[:2] == ["ply", "format binary_little_endian 1.0"]
    count = int(next(line.split()[2] for line in header if line.startswith("element vertex")))
    types = {"float": "<f4", "uchar": "u1"}
    fields = [(line.split()[2], types[line.split()[1]]) for line in header
              if line.startswith("property")]
    vertices = np.frombuffer(data[end:], dtype=fields)
    assert len(vertices) == count
    return vertices


def pinhole(depth, fx, fy, cx, cy, scale):
    v, u = np.mgrid[0:depth.shape[0], 0:depth.shape[1]].astype(np.float32)
    z = depth.astype(np.float32) / np.float32(scale)
    x = (u - np.float32(cx)) * z / np.float32(fx)
    y = (v - np.float32(cy)) * z / np.float32(fy)
    return np.stack([x, y, z], axis=-1).reshape(-1, 3)


# --- hello, gray ----------------------------------------------------------------------------

def test_hello():
    proc = ok(clkit("hello"))
    assert proc.stdout.strip() == "Hello, World!"


def test_gray_png_equals_opencv(tmp_path, rgb):
    src = save(tmp_path / "in.png", rgb)
    proc = ok(clkit("gray", src, tmp_path / "out.png"))
    assert "out.png" in proc.stdout
    out = read(tmp_path / "out.png")
    assert out.dtype == np.uint8 and out.shape == rgb.shape[:2]
    np.testing.assert_array_equal(out, cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY))


def test_gray_jpeg_rgba_and_palette(tmp_path, rgb, rng):
    save(tmp_path / "in.jpg", rgb)
    ok(clkit("gray", tmp_path / "in.jpg", tmp_path / "jpg.png"))
    decoded = read(tmp_path / "in.jpg")
    np.testing.assert_array_equal(read(tmp_path / "jpg.png"),
                                  cv2.cvtColor(decoded, cv2.COLOR_RGB2GRAY))

    rgba = np.dstack([rgb, rng.integers(0, 256, rgb.shape[:2], dtype=np.uint8)])
    save(tmp_path / "rgba.png", rgba)
    ok(clkit("gray", tmp_path / "rgba.png", tmp_path / "rgba_out.png"))
    np.testing.assert_array_equal(read(tmp_path / "rgba_out.png"),
                                  cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY))

    # A palette image is read as the colours its indices stand for, not as the indices.
    Image.fromarray(rgb).convert("P").save(tmp_path / "pal.png")
    ok(clkit("gray", tmp_path / "pal.png", tmp_path / "pal_out.png"))
    colours = np.asarray(Image.open(tmp_path / "pal.png").convert("RGB"))
    np.testing.assert_array_equal(read(tmp_path / "pal_out.png"),
                                  cv2.cvtColor(colours, cv2.COLOR_RGB2GRAY))


def test_gray_npy_float_with_weights(tmp_path, rng):
    image = rng.random((9, 11, 3), dtype=np.float32)
    np.save(tmp_path / "in.npy", image)
    ok(clkit("gray", tmp_path / "in.npy", tmp_path / "709.npy", "--weights", "bt709"))
    out = np.load(tmp_path / "709.npy")
    assert out.dtype == np.float32 and out.shape == (9, 11)
    assert np.allclose(out, image @ np.float32([0.2126, 0.7152, 0.0722]), rtol=1e-5, atol=1e-6)

    ok(clkit("gray", tmp_path / "in.npy", tmp_path / "own.npy", "--weights", "0.5,0.25,0.25"))
    assert np.allclose(np.load(tmp_path / "own.npy"), image @ np.float32([0.5, 0.25, 0.25]),
                       rtol=1e-5, atol=1e-6)


def test_gray_of_a_gray_image_is_itself(tmp_path, rgb):
    save(tmp_path / "in.png", rgb[:, :, 0])
    ok(clkit("gray", tmp_path / "in.png", tmp_path / "out.png"))
    assert np.array_equal(read(tmp_path / "out.png"), rgb[:, :, 0])


# --- convolve, blur -------------------------------------------------------------------------

@pytest.mark.parametrize("spec, mask", [
    ("box:3", np.full((3, 3), 1 / 9)),
    ("sharpen", np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]])),
])
def test_convolve_named_masks_npy(tmp_path, rgb, spec, mask):
    np.save(tmp_path / "in.npy", rgb[:, :, 1])
    ok(clkit("convolve", tmp_path / "in.npy", tmp_path / "out.npy", "--mask", spec))
    out = np.load(tmp_path / "out.npy")
    assert out.dtype == np.float32  # integer images give float32 results
    expected = scipy_ndimage.convolve(rgb[:, :, 1].astype(np.float64), mask, mode="reflect")
    assert np.allclose(out, expected, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("axis, spec", [(1, "sobel-x"), (0, "sobel-y")])
def test_sobel_masks_equal_scipy_sobel(tmp_path, rgb, axis, spec):
    image = rgb[:, :, 0].astype(np.float32)
    np.save(tmp_path / "in.npy", image)
    ok(clkit("convolve", tmp_path / "in.npy", tmp_path / "out.npy", "--mask", spec))
    expected = scipy_ndimage.sobel(image.astype(np.float64), axis=axis, mode="reflect")
    assert np.allclose(np.load(tmp_path / "out.npy"), expected, rtol=1e-5, atol=1e-3)


def test_convolve_gaussian_mask_equals_gaussian_filter(tmp_path, rng):
    image = rng.random((19, 13), dtype=np.float32) * 255
    np.save(tmp_path / "in.npy", image)
    ok(clkit("convolve", tmp_path / "in.npy", tmp_path / "out.npy", "--mask", "gaussian:1.3",
             "--mode", "nearest"))
    expected = scipy_ndimage.gaussian_filter(image.astype(np.float64), 1.3, mode="nearest")
    assert np.allclose(np.load(tmp_path / "out.npy"), expected, rtol=1e-5, atol=1e-3)


def test_blur_of_a_float16_npy(tmp_path, rng):
    image = (rng.random((11, 14)) * 100).astype(np.float16)  # as gray takes it
    np.save(tmp_path / "in.npy", image)
    ok(clkit("blur", tmp_path / "in.npy", tmp_path / "out.npy", "--sigma", "1.5"))
    out = np.load(tmp_path / "out.npy")
    assert out.dtype == np.float32
    expected = scipy_ndimage.gaussian_filter(image.astype(np.float64), 1.5)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-4)


def test_convolve_rgb_png_with_mask_file_constant_mode(tmp_path, rgb, rng):
    mask = rng.standard_normal((2, 4)) / 4  # even sizes, asymmetric
    np.save(tmp_path / "mask.npy", mask)
    src = save(tmp_path / "in.png", rgb)
    ok(clkit("convolve", src, tmp_path / "out.png", "--mask", tmp_path / "mask.npy",
             "--mode", "constant", "--cval", "40"))
    out = read(tmp_path / "out.png")
    assert out.dtype == np.uint8 and out.shape == rgb.shape
    expected = np.stack([scipy_ndimage.convolve(rgb[:, :, c].astype(np.float64), mask,
                                                mode="constant", cval=40) for c in range(3)], -1)
    # PNG holds 0..255: the result is clipped and rounded (within 1 of the float rounding)
    assert np.abs(out.astype(int) - np.clip(np.rint(expected), 0, 255)).max() <= 1


def test_convolve_16bit_png_stays_16bit(tmp_path, rng):
    depth = rng.integers(0, 65536, (13, 10), dtype=np.uint16)
    save(tmp_path / "in.png", depth)
    ok(clkit("convolve", tmp_path / "in.png", tmp_path / "out.png", "--mask", "box:3"))
    out = read(tmp_path / "out.png")
    assert out.dtype == np.uint16
    expected = scipy_ndimage.convolve(depth.astype(np.float64), np.full((3, 3), 1 / 9))
    assert np.abs(out.astype(np.int64) - np.rint(expected)).max() <= 1


def test_a_16bit_pgm_stays_16bit(tmp_path, rng):
    depth = rng.integers(0, 65536, (13, 10), dtype=np.uint16)
    save(tmp_path / "in.pgm", depth)
    expected = np.rint(scipy_ndimage.gaussian_filter(depth.astype(np.float64), 1.0))
    for name in ("out.png", "out.pgm"):
        ok(clkit("blur", tmp_path / "in.pgm", tmp_path / name, "--sigma", "1"))
        out = read(tmp_path / name)
        assert out.dtype in (np.uint16, np.int32) and out.max() > 255, name
        assert np.abs(out.astype(np.int64) - expected).max() <= 1, name


@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=["float", "integer"])
def test_a_32bit_tiff_gives_a_float_tiff(tmp_path, rng, dtype):
    values = (rng.random((12, 15)) * 3e5).astype(dtype)  # beyond 16 bits
    save(tmp_path / "in.tif", values)
    proc = ok(clkit("blur", tmp_path / "in.tif", tmp_path / "out.tif", "--sigma", "1.5"))
    assert "32-bit float" in proc.stdout
    out = read(tmp_path / "out.tif")
    assert out.dtype == np.float32
    expected = scipy_ndimage.gaussian_filter(values.astype(np.float64), 1.5)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


def test_blur_equals_gaussian_filter(tmp_path, rng):
    image = rng.random((16, 21, 3), dtype=np.float32)
    np.save(tmp_path / "in.npy", image)
    ok(clkit("blur", tmp_path / "in.npy", tmp_path / "out.npy", "--sigma", "1.5",
             "--mode", "wrap"))
    expected = scipy_ndimage.gaussian_filter(image.astype(np.float64), (1.5, 1.5, 0),
                                             mode="wrap")
    out = np.load(tmp_path / "out.npy")
    assert out.dtype == np.float32
    assert np.allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_blur_jpeg(tmp_path, rgb):
    save(tmp_path / "in.jpg", rgb)
    ok(clkit("blur", tmp_path / "in.jpg", tmp_path / "out.jpg", "--sigma", "1"))
    # The blur of what the JPEG decodes to, rounded to 8 bits and saved as a JPEG of quality 95:
    # that JPEG decodes to within a level or two of the same encoding of scipy's result (a wrong
    # mode or sigma is 12 to 30 levels off at the worst pixel, a flip more).
    decoded = read(tmp_path / "in.jpg").astype(np.float64)
    blurred = scipy_ndimage.gaussian_filter(decoded, (1, 1, 0))
    Image.fromarray(np.clip(np.rint(blurred), 0, 255).astype(np.uint8)).save(
        tmp_path / "expected.jpg", quality=95)
    out = read(tmp_path / "out.jpg").astype(int)
    assert out.shape == rgb.shape
    assert np.abs(out - read(tmp_path / "expected.jpg")).max() <= 2


# --- mandelbrot -----------------------------------------------------------------------------

def test_mandelbrot_counts_npy(tmp_path):
    ok(clkit("mandelbrot", tmp_path / "m.npy", "--size", "37x29", "--max-iter", "50",
             "--window", "-2,1,-1.5,1.5"))
    counts = np.load(tmp_path / "m.npy")
    assert counts.dtype == np.int32 and counts.shape == (29, 37)
    expected = mandelbrot_reference(37, 29, xmin=-2, xmax=1, ymin=-1.5, ymax=1.5, max_iter=50)
    assert_counts_equal(counts, expected)


def test_mandelbrot_png(tmp_path):
    proc = ok(clkit("mandelbrot", tmp_path / "m.png", "--size", "48x32"))
    picture = read(tmp_path / "m.png")
    assert picture.shape == (32, 48, 3) and picture.dtype == np.uint8
    assert (picture == 0).all(axis=2).any()  # points inside the set are black
    assert len(np.unique(picture.reshape(-1, 3), axis=0)) > 5  # and the rest is colour-mapped
    assert "48x32" in proc.stdout


# --- points ---------------------------------------------------------------------------------

def test_points_16bit_png_with_colours(tmp_path, rng, rgb):
    depth = rng.integers(500, 4000, (17, 23), dtype=np.uint16)
    depth[rng.random(depth.shape) < 0.2] = 0  # no measurement
    save(tmp_path / "depth.png", depth)
    save(tmp_path / "colour.png", rgb)
    proc = ok(clkit("points", tmp_path / "depth.png", tmp_path / "cloud.ply", *intrinsic_args(),
                    "--depth-scale", "1000", "--rgb", tmp_path / "colour.png"))
    valid = (depth != 0).reshape(-1)
    assert f"{valid.sum():,} points" in proc.stdout
    cloud = read_ply(tmp_path / "cloud.ply")
    assert cloud.dtype.names == ("x", "y", "z", "red", "green", "blue")
    expected = pinhole(depth, **INTRINSICS, scale=1000)[valid]
    got = np.stack([cloud["x"], cloud["y"], cloud["z"]], axis=-1)
    assert np.allclose(got, expected, rtol=1e-5, atol=1e-6)
    colours = np.stack([cloud["red"], cloud["green"], cloud["blue"]], axis=-1)
    assert np.array_equal(colours, rgb.reshape(-1, 3)[valid])


def test_points_float_npy_keep_invalid(tmp_path, rng):
    depth = rng.random((7, 5), dtype=np.float32) * 3
    depth[0, 0], depth[3, 2], depth[6, 4] = 0, np.nan, np.inf
    np.save(tmp_path / "depth.npy", depth)
    ok(clkit("points", tmp_path / "depth.npy", tmp_path / "all.ply", *intrinsic_args(),
             "--keep-invalid"))
    cloud = read_ply(tmp_path / "all.ply")
    assert cloud.dtype.names == ("x", "y", "z") and len(cloud) == 35
    expected = pinhole(depth, **INTRINSICS, scale=1)
    got = np.stack([cloud["x"], cloud["y"], cloud["z"]], axis=-1)
    finite = np.isfinite(expected).all(axis=1)
    assert np.allclose(got[finite], expected[finite], rtol=1e-5, atol=1e-6)

    ok(clkit("points", tmp_path / "depth.npy", tmp_path / "valid.ply", *intrinsic_args()))
    assert len(read_ply(tmp_path / "valid.ply")) == 32


# --- folders --------------------------------------------------------------------------------

def test_batch_folder(tmp_path, rng, rgb):
    src = tmp_path / "in"
    src.mkdir()
    save(src / "a.png", rgb)
    save(src / "b.jpg", rgb[::-1])
    np.save(src / "c.npy", rgb[:5].astype(np.float32))
    (src / "notes.txt").write_text("not an image")
    (src / "sub").mkdir()
    save(src / "sub" / "deeper.png", rgb)  # folders are not entered
    proc = ok(clkit("gray", src, tmp_path / "out"))
    assert "3 images" in proc.stdout
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["a.png", "b.jpg", "c.npy"]
    np.testing.assert_array_equal(read(out / "a.png"), cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY))
    assert np.load(out / "c.npy").dtype == np.float32


def test_batch_points_with_colour_folder(tmp_path, rng, rgb):
    depths, colours = tmp_path / "depth", tmp_path / "rgb"
    depths.mkdir()
    colours.mkdir()
    for name in ("f1", "f2"):
        save(depths / f"{name}.png", rng.integers(1, 3000, (17, 23), dtype=np.uint16))
        save(colours / f"{name}.jpg", rgb)
    ok(clkit("points", depths, tmp_path / "clouds", *intrinsic_args(), "--rgb", colours))
    assert sorted(p.name for p in (tmp_path / "clouds").iterdir()) == ["f1.ply", "f2.ply"]
    assert len(read_ply(tmp_path / "clouds" / "f2.ply")) == 17 * 23


def test_batch_with_a_bad_file(tmp_path, rgb):
    src = tmp_path / "in"
    src.mkdir()
    save(src / "a.png", rgb)
    data = save(src / "b.png", rgb).read_bytes()
    (src / "b.png").write_bytes(data[: len(data) // 2])  # truncated
    save(src / "c.png", rgb)
    line = fails(clkit("blur", src, tmp_path / "out", "--sigma", "1"), "b.png", "truncated",
                 "2 of 3")
    assert "a.png" not in line
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["a.png", "c.png"]  # whole files only
    assert read(out / "c.png").shape == rgb.shape


def test_batch_of_many_sizes_equals_the_reference_file_by_file(tmp_path, rng):
    src = tmp_path / "in"
    src.mkdir()
    images = {f"{i:02d}.npy": rng.random((9 + 3 * i, 30 - 2 * i, 1 + i % 3), dtype=np.float32)
              for i in range(9)}
    for name, image in images.items():
        np.save(src / name, image[..., 0] if image.shape[2] == 2 else image)
    ok(clkit("blur", src, tmp_path / "out", "--sigma", "1.2", "--mode", "mirror"))
    for name, image in images.items():
        image = image[..., 0] if image.shape[2] == 2 else image
        sigmas = (1.2, 1.2) + (0,) * (image.ndim - 2)
        expected = scipy_ndimage.gaussian_filter(image.astype(np.float64), sigmas, mode="mirror")
        out = np.load(tmp_path / "out" / name)
        assert out.shape == image.shape and np.allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_a_folder_runs_its_files_through_clkit_map(tmp_path, monkeypatch):
    """Several files in flight: each is processed on a lane of clkit.map, in input order."""
    import threading
    from types import SimpleNamespace

    from clkit.cli import _batch
    src = tmp_path / "in"
    src.mkdir()
    for i in range(6):
        np.save(src / f"{i}.npy", np.zeros((2, 2), np.float32))
    threads, done = set(), []

    def process(path, dst, device):
        threads.add(threading.current_thread().name)
        done.append(path.name)
        dst.write_bytes(b"x")
        return ""

    args = SimpleNamespace(input=str(src), output=str(tmp_path / "out"), command="test")
    _batch.for_each_file(args, process, _batch.devices_of("cpu"))
    assert sorted(done) == [f"{i}.npy" for i in range(6)]
    assert all(name.startswith("clkit-map") for name in threads)
    assert len(list((tmp_path / "out").iterdir())) == 6


# --- bad input: one line, exit 2, nothing written ---------------------------------------------

def test_missing_input(tmp_path):
    fails(clkit("gray", tmp_path / "nope.png", tmp_path / "out.png"), "nope.png", "no such file")
    assert not (tmp_path / "out.png").exists()


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "bad-crc"])
def test_corrupt_input(tmp_path, rgb, damage):
    data = save(tmp_path / "in.png", rgb).read_bytes()
    if damage == "garbage":
        data = b"this is not a PNG file at all" * 10
    elif damage == "truncated":
        data = data[: len(data) * 2 // 3]
    elif damage == "empty":
        data = b""
    else:
        data = bytearray(data)
        data[len(data) // 2] ^= 0xFF
        data = bytes(data)
    (tmp_path / "in.png").write_bytes(data)
    fails(clkit("gray", tmp_path / "in.png", tmp_path / "out.png"), "in.png")
    assert sorted(os.listdir(tmp_path)) == ["in.png"]


def test_failure_keeps_an_existing_output(tmp_path, rgb):
    data = save(tmp_path / "in.png", rgb).read_bytes()
    (tmp_path / "in.png").write_bytes(data[:100])
    (tmp_path / "out.png").write_bytes(b"previous result")
    fails(clkit("gray", tmp_path / "in.png", tmp_path / "out.png"), "in.png")
    assert (tmp_path / "out.png").read_bytes() == b"previous result"


@pytest.mark.parametrize("make, words", [
    (lambda d: save(d / "d.png", np.zeros((4, 5), np.uint8)), ["d.png", "8-bit"]),
    (lambda d: save(d / "d.png", np.zeros((4, 5, 3), np.uint8)), ["d.png", "3 channels"]),
    (lambda d: np.save(d / "d.npy", np.full((4, 5), -3, np.int32)) or d / "d.npy",
     ["d.npy", "int32"]),
])
def test_points_wrong_depth_type(tmp_path, make, words):
    src = make(tmp_path)
    fails(clkit("points", src, tmp_path / "out.ply", *intrinsic_args()), *words)
    assert not (tmp_path / "out.ply").exists()


def test_points_colour_size_mismatch(tmp_path, rgb):
    save(tmp_path / "d.png", np.ones((4, 5), np.uint16))
    save(tmp_path / "c.png", rgb)
    fails(clkit("points", tmp_path / "d.png", tmp_path / "out.ply", *intrinsic_args(),
                "--rgb", tmp_path / "c.png"), "c.png", "must match")
    assert not (tmp_path / "out.ply").exists()


def test_unwritable_output(tmp_path, rgb):
    src = save(tmp_path / "in.png", rgb)
    fails(clkit("gray", src, tmp_path / "missing" / "out.png"), "does not exist")
    fails(clkit("gray", src, tmp_path / "in.png" / "out.png"), "not a folder")
    fails(clkit("gray", src, tmp_path / "out.xyz"), "out.xyz")
    fails(clkit("gray", src, f"{tmp_path / 'newdir'}/"), "newdir/: no such folder")
    assert sorted(os.listdir(tmp_path)) == ["in.png"]


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root may write into read-only folders")
def test_read_only_output_folder(tmp_path, rgb):
    src = save(tmp_path / "in.png", rgb)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        fails(clkit("gray", src, locked / "out.png"), "permission denied")
        assert os.listdir(locked) == []
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize("args, words", [
    (["convolve", "IN", "OUT", "--mask", "box:0"], ["box:N"]),
    (["convolve", "IN", "OUT", "--mask", "box:two"], ["box:N"]),
    (["convolve", "IN", "OUT", "--mask", "gaussian:-1"], ["greater than 0"]),
    (["convolve", "IN", "OUT", "--mask", "laplace"], ["unknown mask", "sobel-x"]),
    (["convolve", "IN", "OUT", "--mask", "missing.npy"], ["missing.npy", "no such file"]),
    (["convolve", "IN", "OUT", "--mask", "box:3", "--mode", "edge"], ["--mode"]),
    (["convolve", "IN", "OUT"], ["--mask"]),
    (["blur", "IN", "OUT", "--sigma", "-2"], ["sigma", "0 or more"]),
    (["blur", "IN", "OUT", "--sigma", "nan"], ["sigma"]),
    (["gray", "IN", "OUT", "--weights", "1,2"], ["weights"]),
    (["mandelbrot", "OUT", "--size", "0x10"], ["size"]),
    (["mandelbrot", "OUT", "--size", "640"], ["WIDTHxHEIGHT"]),
    (["mandelbrot", "OUT", "--max-iter", "0"], ["--max-iter"]),
    (["mandelbrot", "OUT", "--window", "1,-2,-1,1"], ["XMIN < XMAX"]),
    (["points", "IN", "OUT", "--fx", "0", "--fy", "1", "--cx", "0", "--cy", "0"], ["--fx"]),
    (["points", "IN", "OUT", "--fx", "1", "--fy", "1", "--cx", "0"], ["--cy"]),
    (["points", "IN", "OUT", "--depth-scale", "-1", *intrinsic_args()], ["--depth-scale"]),
    (["gray", "IN", "OUT", "--device", "no-such-device"], ["no-such-device"]),
])
def test_bad_arguments(tmp_path, rgb, args, words):
    src = save(tmp_path / "in.png", rgb)
    out = tmp_path / ("out.png" if args[0] != "points" else "out.ply")
    args = [src if a == "IN" else out if a == "OUT" else a for a in args]
    fails(clkit(*args), *words)
    assert not out.exists()


def test_points_output_must_be_ply(tmp_path):
    save(tmp_path / "d.png", np.ones((4, 5), np.uint16))
    fails(clkit("points", tmp_path / "d.png", tmp_path / "cloud.png", *intrinsic_args()),
          ".ply")


def test_device_option(tmp_path, rgb, monkeypatch, capsys):
    # In this process, so that every kernel launch is seen with its queue's device: each
    # device named runs the kernels, the default device (when another is named) none of them.
    import clkit as ck
    from clkit._launch import kernel as _launch
    from clkit.cli import main
    used = []
    enqueue = _launch._enqueue  # where every clkit kernel launch is enqueued

    def spy(queue, *args, **kwargs):
        # a background build's first launch, of an earlier test's variant, is not the command's
        if threading.current_thread().name != "clkit-builds":
            used.append(queue.device)
        return enqueue(queue, *args, **kwargs)

    monkeypatch.setattr(_launch, "_enqueue", spy)
    src = save(tmp_path / "in.png", rgb)
    for device in ck.devices():
        used.clear()
        assert main(["gray", str(src), str(tmp_path / "out.png"), "--device", device.id]) == 0
        assert used and all(d == device.cl_device for d in used), (device, used)
        np.testing.assert_array_equal(read(tmp_path / "out.png"),
                                      cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY))
    assert "wrote" in capsys.readouterr().out


def test_device_option_takes_several_devices(tmp_path, rng, monkeypatch, capsys):
    # A comma-separated list (or "all"): a folder's files are shared out among the devices, a
    # single file is cut into bands across them; the results are the same.
    import clkit as ck
    from clkit._launch import kernel as _launch
    from clkit.cli import main
    used = set()
    enqueue = _launch._enqueue

    def spy(queue, *args, **kwargs):
        if threading.current_thread().name != "clkit-builds":
            used.add(queue.device.int_ptr)
        return enqueue(queue, *args, **kwargs)

    monkeypatch.setattr(_launch, "_enqueue", spy)
    devices = ck.devices()
    spec = ",".join(d.id for d in devices)
    (tmp_path / "in").mkdir()
    images = [rng.integers(0, 256, (9 + i, 13, 3), dtype=np.uint8) for i in range(2 * len(devices))]
    for i, image in enumerate(images):
        save(tmp_path / "in" / f"{i}.png", image)
    assert main(["gray", str(tmp_path / "in"), str(tmp_path / "out"), "--device", spec]) == 0
    assert used == {d.cl_device.int_ptr for d in devices}
    for i, image in enumerate(images):
        np.testing.assert_array_equal(read(tmp_path / "out" / f"{i}.png"),
                                      cv2.cvtColor(image, cv2.COLOR_RGB2GRAY))
    assert main(["gray", str(tmp_path / "in" / "0.png"), str(tmp_path / "one.png"),
                 "--device", spec]) == 0
    np.testing.assert_array_equal(read(tmp_path / "one.png"),
                                  cv2.cvtColor(images[0], cv2.COLOR_RGB2GRAY))
    assert "wrote" in capsys.readouterr().out


def test_file_into_an_existing_folder_keeps_its_name(tmp_path, rgb):
    src = save(tmp_path / "photo.png", rgb)
    (tmp_path / "out").mkdir()
    ok(clkit("gray", src, tmp_path / "out"))
    assert read(tmp_path / "out" / "photo.png").shape == rgb.shape[:2]


def test_a_file_never_replaces_itself(tmp_path, rgb):
    src = save(tmp_path / "photo.png", rgb)
    fails(clkit("gray", src, tmp_path), "input file", "replace the original")
    fails(clkit("gray", src, src), "input file")
    np.testing.assert_array_equal(read(src), rgb)


def test_a_batch_checks_its_output_folder_before_any_work(tmp_path, rgb, monkeypatch):
    # (as a test, not a run as root, which may write into read-only folders)
    from clkit.cli import _batch
    (tmp_path / "in").mkdir()
    save(tmp_path / "in" / "a.png", rgb)
    locked = tmp_path / "locked"
    real_access = os.access
    monkeypatch.setattr(_batch.os, "access", lambda p, mode: Path(p) != locked
                        and real_access(p, mode))
    with pytest.raises(PermissionError, match="cannot write into .*locked: permission denied"):
        _batch.jobs(tmp_path / "in", locked)


def test_sigterm_finishes_or_removes_every_file(tmp_path, rng):
    import signal
    import subprocess
    import sys
    import time
    from _cli import CWD, child_env
    src, dst = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    for i in range(40):
        save(src / f"{i:02}.png", rng.integers(0, 256, (384, 512, 3), dtype=np.uint8))
    proc = subprocess.Popen([sys.executable, "-m", "clkit", "blur", src, dst, "--sigma", "3"],
                            cwd=CWD, env=child_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (dst.is_dir() and any(p.suffix == ".png" for p in dst.iterdir())):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143 and err.strip() == "clkit: terminated", (proc.returncode, err)
    assert leftovers(dst) == []
    written = sorted(dst.iterdir())
    assert 0 < len(written) < 40
    for path in written:  # each whole: it decodes
        assert read(path).shape == (384, 512, 3)


def test_batch_refuses_two_inputs_with_one_output(tmp_path):
    src = tmp_path / "depth"
    src.mkdir()
    save(src / "a.png", np.ones((4, 5), np.uint16))
    np.save(src / "a.npy", np.ones((4, 5), np.float32))
    fails(clkit("points", src, tmp_path / "out", *intrinsic_args()), "a.ply", "rename")
    assert not (tmp_path / "out").exists()


def test_batch_of_an_empty_folder(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "notes.txt").write_text("no images here")
    fails(clkit("gray", tmp_path / "in", tmp_path / "out"), "no image files")
    assert not (tmp_path / "out").exists()


def test_batch_refuses_to_overwrite_its_input_folder(tmp_path, rgb):
    save(tmp_path / "a.png", rgb)
    fails(clkit("gray", tmp_path, tmp_path), "input folder")
    assert read(tmp_path / "a.png").shape == rgb.shape


def test_progress_bar_draws_on_a_terminal_only():
    import io

    from clkit.cli._batch import progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    screen = Terminal()
    with progress(3, "gray", stream=screen, mininterval=0) as bar:  # every step drawn
        for name in ("a.png", "b.png", "c.png"):
            bar.set_postfix_str(name, refresh=False)
            bar.update()
    drawn = screen.getvalue()
    assert "gray" in drawn and "3/3" in drawn and "c.png" in drawn
    assert drawn.endswith("\r")  # the line is cleared at the end

    for stream, total in ((io.StringIO(), 3), (Terminal(), 1)):  # a pipe; a single file
        with progress(total, "gray", stream=stream) as bar:
            bar.update()
        assert stream.getvalue() == ""
