"""The ``clkit`` command on bad files: one line on stderr, exit status 2, and no output left behind.

``tests/cli/test_images.py`` covers a missing input, a few corrupt PNGs, 8-bit and colour depth
maps and a missing output folder; this covers the rest: inputs that cannot be read (folders, symlink
loops, FIFOs, paths through a file), every image format truncated or corrupt, ``.npy`` files
that are not arrays of numbers, masks that are not masks, depth maps of the wrong type, and
outputs that cannot be written, including a write that fails half-way (a disk that fills up).
Runs as root in CI, where permissions do not stop anything: the unreadable and unwritable
cases here do not rely on them.
"""

import os
import resource
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

import clkit as clkit_module

from _cli import CWD, child_env, clkit, fails, intrinsic_args, ok, read, save


def listing(folder):
    return sorted(p.name for p in Path(folder).iterdir())


@pytest.fixture
def rgb(rng):
    return rng.integers(0, 256, (21, 17, 3), dtype=np.uint8)


def encoded(tmp_path, rgb, fmt):
    path = tmp_path / f"in.{fmt}"
    Image.fromarray(rgb).save(path)
    return path.read_bytes()


# -- inputs that cannot be read ------------------------------------------------------------------

def test_input_that_is_a_symlink_loop(tmp_path):
    (tmp_path / "a.png").symlink_to(tmp_path / "b.png")
    (tmp_path / "b.png").symlink_to(tmp_path / "a.png")
    fails(clkit("gray", tmp_path / "a.png", tmp_path / "out.png"), "a.png")
    assert listing(tmp_path) == ["a.png", "b.png"]


def test_input_that_is_a_fifo_does_not_hang(tmp_path):
    os.mkfifo(tmp_path / "in.png")
    fails(clkit("gray", tmp_path / "in.png", tmp_path / "out.png", timeout=60), "in.png")
    assert listing(tmp_path) == ["in.png"]


def test_input_path_through_a_file(tmp_path, rgb):
    save(tmp_path / "photo.png", rgb)
    fails(clkit("blur", tmp_path / "photo.png" / "x.png", tmp_path / "out.png", "--sigma", "1"),
          "x.png")
    assert listing(tmp_path) == ["photo.png"]


def test_a_folder_where_the_mask_file_should_be(tmp_path, rgb):
    save(tmp_path / "in.png", rgb)
    (tmp_path / "mask.npy").mkdir()
    fails(clkit("convolve", tmp_path / "in.png", tmp_path / "out.png", "--mask",
                tmp_path / "mask.npy"), "mask.npy", "is a folder")
    assert listing(tmp_path) == ["in.png", "mask.npy"]


def test_a_folder_where_the_colour_image_should_be(tmp_path):
    save(tmp_path / "d.png", np.ones((4, 5), np.uint16))
    (tmp_path / "colour.png").mkdir()
    fails(clkit("points", tmp_path / "d.png", tmp_path / "out.ply", *intrinsic_args(),
                "--rgb", tmp_path / "colour.png"), "colour.png", "folder")
    assert listing(tmp_path) == ["colour.png", "d.png"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_input_without_read_permission(tmp_path, rgb):
    src = save(tmp_path / "in.png", rgb)
    src.chmod(0)
    try:
        fails(clkit("gray", src, tmp_path / "out.png"), "in.png", "permission denied")
    finally:
        src.chmod(0o600)


# -- inputs that are truncated or corrupt ----------------------------------------------------------

def flipped(data, start, count=16):
    damaged = bytearray(data)
    for i in range(start, min(start + count, len(data))):
        damaged[i] ^= 0x5A
    return bytes(damaged)


DAMAGE = {
    "half": lambda data: data[: len(data) // 2],
    "header-only": lambda data: data[:24],
    # the fields right after each format's signature (sizes, offsets, chunk lengths)
    "corrupt-header": lambda data: flipped(data, 6),
    # the end of the stream: a GIF's last LZW block, the others' last pixels or metadata
    "corrupt-end": lambda data: flipped(data, len(data) - 16),
}
#: Damage that Pillow reads past, checked to decode (the rest must not).
DECODES = {("jpg", "corrupt-end"), ("tif", "corrupt-end"), ("bmp", "corrupt-end"),
           ("webp", "corrupt-end")}


@pytest.mark.parametrize("how", list(DAMAGE))
@pytest.mark.parametrize("fmt", ["jpg", "tif", "bmp", "gif", "webp"])
def test_truncated_or_corrupt_images(tmp_path, rgb, fmt, how):
    data = DAMAGE[how](encoded(tmp_path, rgb, fmt))
    for p in tmp_path.iterdir():
        p.unlink()
    src = tmp_path / f"in.{fmt}"
    src.write_bytes(data)
    proc = clkit("gray", src, tmp_path / "out.png")
    if (fmt, how) in DECODES:
        # Damage Pillow reads past gives the gray of what it decodes, whole, and nothing else.
        ok(proc)
        assert listing(tmp_path) == sorted([src.name, "out.png"])
        with Image.open(src) as img:
            decoded = np.asarray(img.convert("RGB"))
        np.testing.assert_array_equal(read(tmp_path / "out.png"),
                                      cv2.cvtColor(decoded, cv2.COLOR_RGB2GRAY))
        return
    line = fails(proc, src.name)
    assert any(w in line for w in ("corrupt", "truncated", "not an image", "exceeds")), line
    assert listing(tmp_path) == [src.name]


def test_an_image_claiming_billions_of_pixels(tmp_path):
    # A valid PNG header for 100000 x 100000 pixels and nothing else: Pillow's decompression
    # bomb guard, not an attempt to allocate 30 GB.
    import struct
    import zlib
    header = struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + header
    png = (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(header)) + chunk
           + struct.pack(">I", zlib.crc32(chunk)))
    (tmp_path / "bomb.png").write_bytes(png)
    fails(clkit("gray", tmp_path / "bomb.png", tmp_path / "out.png"), "bomb.png")
    assert listing(tmp_path) == ["bomb.png"]


NPY_DAMAGE = {
    "truncated": lambda path: path.write_bytes(path.read_bytes()[:90]),
    "bad-header": lambda path: path.write_bytes(b"\x93NUMPY\x01\x00\x10\x00{'descr': <f4'}  \n"
                                                + b"\x00" * 64),
    "not-npy": lambda path: path.write_text("1,2,3\n4,5,6\n"),
    "objects": lambda path: np.save(path, np.array([[1, "a"], [2, None]], dtype=object)),
    "strings": lambda path: np.save(path, np.array([["a", "b"], ["c", "d"]])),
    "one-dimensional": lambda path: np.save(path, np.arange(10.0)),
    "npz-in-disguise": lambda path: (np.savez(path.with_suffix(".npz"), a=np.ones((3, 3))),
                                     path.with_suffix(".npz").rename(path)),
    "complex": lambda path: np.save(path, np.ones((4, 5), np.complex64)),
}


@pytest.mark.parametrize("damage", list(NPY_DAMAGE))
def test_npy_files_that_are_not_images(tmp_path, damage):
    src = tmp_path / "in.npy"
    np.save(src, np.ones((6, 7, 3), np.float32))
    NPY_DAMAGE[damage](src)
    fails(clkit("gray", src, tmp_path / "out.npy"), "in.npy")
    assert listing(tmp_path) == ["in.npy"]


@pytest.mark.parametrize("mask, words", [
    (lambda p: np.save(p, np.full((3, 3), np.nan)), ["NaN or infinity"]),
    (lambda p: np.save(p, np.ones(5)), ["mask.npy"]),
    (lambda p: np.save(p, np.ones((3, 3, 2))), ["2-D array"]),
    (lambda p: p.write_bytes(b"\x93NUMPY garbage"), ["mask.npy"]),
], ids=["nan", "1-D", "3-D", "corrupt"])
def test_mask_files_that_are_not_masks(tmp_path, rgb, mask, words):
    save(tmp_path / "in.png", rgb)
    mask(tmp_path / "mask.npy")
    fails(clkit("convolve", tmp_path / "in.png", tmp_path / "out.png", "--mask",
                tmp_path / "mask.npy"), *words)
    assert not (tmp_path / "out.png").exists()


# -- depth maps of the wrong type ----------------------------------------------------------------

@pytest.mark.parametrize("make, words", [
    (lambda d: np.save(d / "d.npy", np.ones((4, 5), bool)) or d / "d.npy", ["d.npy", "8-bit"]),
    (lambda d: np.save(d / "d.npy", np.full((4, 5), 70000, np.int64)) or d / "d.npy",
     ["d.npy", "int64 values from 70000 to 70000"]),
    (lambda d: np.save(d / "d.npy", np.ones((4, 5, 2), np.uint16)) or d / "d.npy",
     ["d.npy", "2 channels"]),
    (lambda d: save(d / "d.png", np.zeros((4, 5, 4), np.uint8)), ["d.png", "4 channels"]),
    (lambda d: Image.fromarray(np.zeros((4, 5), np.uint8)).convert("1").save(d / "d.png")
     or d / "d.png", ["d.png", "8-bit"]),
], ids=["bool", "int64-beyond-16-bit", "two-channels", "rgba-png", "1-bit-png"])
def test_depth_maps_of_the_wrong_type(tmp_path, make, words):
    src = make(tmp_path)
    fails(clkit("points", src, tmp_path / "out.ply", *intrinsic_args()), *words)
    assert not (tmp_path / "out.ply").exists()


def test_depth_maps_of_one_channel_in_three_dimensions_are_accepted(tmp_path):
    np.save(tmp_path / "d.npy", np.full((4, 5, 1), 1000, np.uint16))
    proc = ok(clkit("points", tmp_path / "d.npy", tmp_path / "out.ply", *intrinsic_args()))
    assert "20 points" in proc.stdout


# -- outputs that cannot be written --------------------------------------------------------------

def test_output_in_a_folder_that_takes_no_files(tmp_path, rgb):
    src = save(tmp_path / "in.png", rgb)
    fails(clkit("gray", src, "/proc/clkit-out.png"), "cannot write /proc/clkit-out.png")
    fails(clkit("mandelbrot", "/proc/clkit-m.png", "--size", "8x8"), "/proc/clkit-m.png")
    assert not Path("/proc/clkit-out.png").exists()


def test_batch_into_a_folder_that_cannot_be_made(tmp_path, rgb):
    (tmp_path / "in").mkdir()
    save(tmp_path / "in" / "a.png", rgb)
    (tmp_path / "taken").write_text("a file, not a folder")
    fails(clkit("gray", tmp_path / "in", tmp_path / "taken"), "taken", "file")
    fails(clkit("gray", tmp_path / "in", tmp_path / "taken" / "sub"), "taken")
    assert listing(tmp_path) == ["in", "taken"]


def test_output_name_that_is_a_folder(tmp_path, rgb):
    src = save(tmp_path / "in.png", rgb)
    (tmp_path / "out.npy").mkdir()
    # An existing folder takes the result under the input's name, as cp does...
    ok(clkit("gray", src, tmp_path / "out.npy"))
    assert listing(tmp_path / "out.npy") == ["in.png"]
    # ...but mandelbrot's picture cannot replace a folder
    (tmp_path / "m.png").mkdir()
    (tmp_path / "m.png" / "mandelbrot.png").mkdir()
    fails(clkit("mandelbrot", tmp_path / "m.png", "--size", "8x8"), "mandelbrot.png", "folder")


LIMIT = 2 << 20  # bytes: the drivers' own files fit (clkit/_build/build.py), the results do not


def small_files():
    """In the child: files of at most LIMIT bytes, as if the disk filled up while writing."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def tiny_files():
    resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))


@pytest.mark.parametrize("args, out", [
    (["gray", "IN", "OUT/g.png"], "g.png"),
    (["convolve", "IN", "OUT/c.npy", "--mask", "box:3"], "c.npy"),
    (["mandelbrot", "OUT/m.npy", "--size", "1200x800"], "m.npy"),
    (["points", "DEPTH", "OUT/p.ply", *intrinsic_args()], "p.ply"),
], ids=["gray-png", "convolve-npy", "mandelbrot-npy", "points-ply"])
def test_a_write_that_fails_half_way_leaves_nothing(tmp_path, rng, args, out):
    # results larger than LIMIT: a 1200x1800 gray PNG of noise is 2.2 MB
    src = save(tmp_path / "in.png", rng.integers(0, 256, (1200, 1800, 3), dtype=np.uint8))
    depth = save(tmp_path / "d.png", rng.integers(1, 5000, (1200, 1800), dtype=np.uint16))
    folder = tmp_path / "out"
    folder.mkdir()
    argv = [str(src) if a == "IN" else str(depth) if a == "DEPTH" else
            str(a).replace("OUT", str(folder)) for a in args]
    ok(clkit(*argv))  # compiles the kernels (drivers write their caches) and works
    (folder / out).unlink()
    (folder / out).write_bytes(b"the previous result")
    proc = subprocess.run([sys.executable, "-m", "clkit", *argv], cwd=CWD, capture_output=True,
                          text=True, timeout=300, preexec_fn=small_files, env=child_env())
    fails(proc, out)
    assert listing(folder) == [out]  # no temporary file left
    assert (folder / out).read_bytes() == b"the previous result"


def test_no_room_for_the_drivers_files_is_said_before_building(tmp_path, rng):
    """PoCL writes files to build a program, also one its cache holds; where it cannot, its
    compiler would end the process with nothing said."""
    if clkit_module.select().platform != "Portable Computing Language":
        pytest.skip("a PoCL device is the default one")
    src = save(tmp_path / "in.png", rng.integers(0, 256, (40, 60, 3), dtype=np.uint8))
    ok(clkit("gray", src, tmp_path / "g.png"))
    argv = ["gray", str(src), str(tmp_path / "h.png")]
    proc = subprocess.run([sys.executable, "-m", "clkit", *argv], cwd=CWD, capture_output=True,
                          text=True, timeout=300, preexec_fn=tiny_files, env=child_env())
    fails(proc, "grayscale.cl", "at most 1000 bytes")
    assert not (tmp_path / "h.png").exists()
