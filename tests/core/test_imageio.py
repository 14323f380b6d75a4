"""clkit._io.imageio: what each kind of file reads as, whole-or-nothing writes, PLY, errors.

No OpenCL here: these are the file-format rules the ``clkit`` image commands
rely on, tested directly on small files in tmp_path.
"""

import os

import numpy as np
import pytest
from PIL import Image

from clkit._io import imageio as _imageio
from clkit._io.imageio import atomic_write, list_images, read_image, write_image, write_ply


@pytest.fixture
def rgb(rng):
    return rng.integers(0, 256, (7, 11, 3), dtype=np.uint8)


def hidden(folder):
    return [p for p in os.listdir(folder) if p.startswith(".")]


# --- reading --------------------------------------------------------------------------------

@pytest.mark.parametrize("mode, shape", [("L", (7, 11)), ("LA", (7, 11, 2)), ("RGB", (7, 11, 3)),
                                         ("RGBA", (7, 11, 4)), ("P", (7, 11, 3)),
                                         ("1", (7, 11)), ("I;16", (7, 11))])
def test_png_modes(tmp_path, rgb, mode, shape):
    Image.fromarray(rgb).convert(mode).save(tmp_path / "a.png")
    array = read_image(tmp_path / "a.png")
    assert array.shape == shape
    assert array.dtype == (np.uint16 if mode == "I;16" else np.uint8)
    assert array.flags.c_contiguous


def test_color_makes_three_or_four_channels(tmp_path, rgb):
    Image.fromarray(rgb[:, :, 0]).save(tmp_path / "g.png")
    gray = read_image(tmp_path / "g.png", color=True)
    assert gray.shape == (7, 11, 3) and (gray == rgb[:, :, :1]).all()
    Image.fromarray(rgb[:, :, :2].copy()).save(tmp_path / "la.png")  # gray + alpha
    la = read_image(tmp_path / "la.png", color=True)
    assert la.shape == (7, 11, 4) and np.array_equal(la[:, :, 3], rgb[:, :, 1])


def test_palette_with_transparency_is_rgba(tmp_path, rgb):
    img = Image.fromarray(rgb).convert("P")
    img.info["transparency"] = 0
    img.save(tmp_path / "p.png", transparency=0)
    assert read_image(tmp_path / "p.png").shape == (7, 11, 4)


def test_16bit_png_and_float_tiff_keep_their_values(tmp_path, rng):
    depth = rng.integers(0, 65536, (5, 6), dtype=np.uint16)
    Image.fromarray(depth).save(tmp_path / "d.png")
    assert np.array_equal(read_image(tmp_path / "d.png"), depth)
    Image.fromarray(depth).save(tmp_path / "d.tif")
    assert np.array_equal(read_image(tmp_path / "d.tif"), depth)
    metres = rng.random((5, 6), dtype=np.float32)
    Image.fromarray(metres).save(tmp_path / "f.tif")
    out = read_image(tmp_path / "f.tif")
    assert out.dtype == np.float32 and np.array_equal(out, metres)


def test_jpeg_cmyk_and_exif_orientation(tmp_path, rgb):
    Image.fromarray(rgb).convert("CMYK").save(tmp_path / "c.jpg")
    with Image.open(tmp_path / "c.jpg") as img:
        np.testing.assert_array_equal(read_image(tmp_path / "c.jpg"),
                                      np.asarray(img.convert("RGB")))
    for orientation, turned in [(6, lambda a: np.rot90(a, -1)),   # turn 90 degrees clockwise
                                (8, lambda a: np.rot90(a, 1)),    # counter-clockwise
                                (3, lambda a: a[::-1, ::-1]),     # half a turn
                                (2, lambda a: a[:, ::-1])]:       # mirrored left to right
        exif = Image.Exif()
        exif[0x0112] = orientation
        Image.fromarray(rgb).save(tmp_path / "r.jpg", exif=exif)
        with Image.open(tmp_path / "r.jpg") as img:
            stored = np.asarray(img)  # the pixels as stored, before the turn viewers make
        np.testing.assert_array_equal(read_image(tmp_path / "r.jpg"), turned(stored),
                                      err_msg=f"EXIF orientation {orientation}")


def test_npy(tmp_path, rng):
    a = rng.random((4, 5, 3))
    np.save(tmp_path / "a.npy", a)
    assert np.array_equal(read_image(tmp_path / "a.npy"), a)
    np.save(tmp_path / "be.npy", a.astype(">f8"))
    big_endian = read_image(tmp_path / "be.npy")
    assert big_endian.dtype == np.float64 and big_endian.dtype.isnative
    assert np.array_equal(big_endian, a)
    np.save(tmp_path / "b.npy", np.eye(3, dtype=bool))
    assert read_image(tmp_path / "b.npy").max() == 255


@pytest.mark.parametrize("make, words", [
    (lambda p: np.save(p, np.array([{}, 1], dtype=object)), ["Python objects"]),
    (lambda p: np.save(p, np.zeros(5)), ["HxW", "(5,)"]),
    (lambda p: np.save(p, np.zeros((2, 2), complex)), ["complex"]),
    (lambda p: p.write_bytes(b"\x93NUMPY garbage"), ["not a valid .npy"]),
    (lambda p: np.savez(p.with_suffix(".npz"), a=np.zeros(3)) or p.with_suffix(".npz").rename(p),
     [".npz"]),
])
def test_bad_npy(tmp_path, make, words):
    path = tmp_path / "x.npy"
    make(path)
    with pytest.raises(ValueError) as info:
        read_image(path)
    for word in [str(path), *words]:
        assert word in str(info.value)


def test_truncated_npy(tmp_path, rng):
    np.save(tmp_path / "a.npy", rng.random((20, 20)))
    data = (tmp_path / "a.npy").read_bytes()
    (tmp_path / "a.npy").write_bytes(data[:-100])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        read_image(tmp_path / "a.npy")


@pytest.mark.parametrize("content, words", [
    (None, ["no such file"]),
    (b"", ["empty"]),
    (b"GIF89a" + b"\x00" * 5, ["a.png"]),
    (b"plain text, not an image", ["not an image file"]),
])
def test_unreadable_files(tmp_path, content, words):
    path = tmp_path / "a.png"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises((OSError, ValueError)) as info:
        read_image(path)
    for word in [str(path), *words]:
        assert word in str(info.value)


def test_truncated_png(tmp_path, rgb):
    Image.fromarray(rgb).save(tmp_path / "a.png")
    data = (tmp_path / "a.png").read_bytes()
    (tmp_path / "a.png").write_bytes(data[: len(data) - 30])
    with pytest.raises(ValueError, match="truncated"):
        read_image(tmp_path / "a.png")


def test_folder_is_not_an_image(tmp_path):
    with pytest.raises(IsADirectoryError, match="is a folder"):
        read_image(tmp_path)


def test_list_images(tmp_path, rgb):
    for name in ("b.png", "a.JPG", "c.npy", "d.tiff", ".hidden.png", "notes.txt"):
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "sub.png").mkdir()
    assert [p.name for p in list_images(tmp_path)] == ["a.JPG", "b.png", "c.npy", "d.tiff"]


# --- writing --------------------------------------------------------------------------------

def test_float_to_8bit_clips_and_rounds(tmp_path):
    values = np.array([[-5.0, 0.4, 0.6, 1.5, 2.5, 254.6, 300.0, np.nan]], np.float32)
    write_image(tmp_path / "a.png", values)
    assert read_image(tmp_path / "a.png").tolist() == [[0, 0, 1, 2, 2, 255, 255, 0]]


def test_16bit_output(tmp_path):
    values = np.array([[-1.0, 1000.4, 70000.0]])
    write_image(tmp_path / "a.png", values, bits=16)
    out = read_image(tmp_path / "a.png")
    assert out.dtype == np.uint16 and out.tolist() == [[0, 1000, 65535]]
    with pytest.raises(ValueError, match="JPEG holds 8 bits"):
        write_image(tmp_path / "a.jpg", values, bits=16)
    with pytest.raises(ValueError, match="one channel"):
        write_image(tmp_path / "c.png", np.zeros((2, 2, 3)), bits=16)
    assert hidden(tmp_path) == [] and not (tmp_path / "a.jpg").exists()


def test_npy_keeps_float(tmp_path, rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    write_image(tmp_path / "a.npy", a)
    out = np.load(tmp_path / "a.npy")
    assert out.dtype == np.float32 and np.array_equal(out, a)


def test_jpeg_drops_alpha(tmp_path, rng):
    write_image(tmp_path / "a.jpg", rng.integers(0, 256, (4, 4, 4), dtype=np.uint8))
    assert read_image(tmp_path / "a.jpg").shape == (4, 4, 3)


@pytest.mark.parametrize("name, array, words", [
    ("a.xyz", np.zeros((2, 2)), ["cannot write .xyz"]),
    ("noext", np.zeros((2, 2)), ["no file extension"]),
    ("a.png", np.zeros((2, 2, 5)), ["shape (2, 2, 5)"]),
    ("a.png", np.zeros(4), ["shape (4,)"]),
    ("missing/a.png", np.zeros((2, 2)), ["does not exist"]),
])
def test_write_errors(tmp_path, name, array, words):
    with pytest.raises((OSError, ValueError)) as info:
        write_image(tmp_path / name, array)
    for word in words:
        assert word in str(info.value)
    assert sorted(os.listdir(tmp_path)) == []


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.png"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_write(target) as f:
            f.write(b"half of the new")
            raise RuntimeError("disk on fire")
    assert target.read_bytes() == b"old"
    assert hidden(tmp_path) == []


def test_atomic_write_on_save_error_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "out.png"
    target.write_bytes(b"old")

    def broken_save(self, fp, *args, **kwargs):
        fp.write(b"partial")
        raise OSError("No space left on device")

    monkeypatch.setattr(Image.Image, "save", broken_save)
    with pytest.raises(OSError, match="cannot write .*out.png.*No space left"):
        write_image(target, np.zeros((3, 3), np.uint8))
    assert target.read_bytes() == b"old"
    assert hidden(tmp_path) == []


def test_atomic_write_permissions_follow_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        write_image(tmp_path / "a.png", np.zeros((2, 2), np.uint8))
    finally:
        os.umask(old)
    assert (tmp_path / "a.png").stat().st_mode & 0o777 == 0o644


def test_check_output(tmp_path):
    assert _imageio.check_output(tmp_path / "a.png") == "PNG"
    assert _imageio.check_output(tmp_path / "a.npy") == "NPY"
    assert _imageio.check_output(tmp_path / "a.ply") == "PLY"
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(NotADirectoryError, match="is not a folder"):
        _imageio.check_output(tmp_path / "file" / "a.png")
    (tmp_path / "d.png").mkdir()
    with pytest.raises(IsADirectoryError, match="it is a folder"):
        _imageio.check_output(tmp_path / "d.png")


# --- PLY ------------------------------------------------------------------------------------

def test_ply_with_colours(tmp_path, rng):
    points = rng.standard_normal((5, 3)).astype(np.float32)
    colors = rng.integers(0, 256, (5, 3), dtype=np.uint8)
    write_ply(tmp_path / "c.ply", points, colors)
    data = (tmp_path / "c.ply").read_bytes()
    header, body = data.split(b"end_header\n")
    lines = header.decode("ascii").splitlines()
    assert lines[:2] == ["ply", "format binary_little_endian 1.0"]
    assert "element vertex 5" in lines
    assert [line for line in lines if line.startswith("property")] == [
        "property float x", "property float y", "property float z",
        "property uchar red", "property uchar green", "property uchar blue"]
    assert len(body) == 5 * 15
    records = np.frombuffer(body, dtype=[("xyz", "<f4", 3), ("rgb", "u1", 3)])
    assert np.array_equal(records["xyz"], points)
    assert np.array_equal(records["rgb"], colors)


def test_ply_without_colours_and_empty(tmp_path):
    write_ply(tmp_path / "a.ply", np.arange(6, dtype=np.float64).reshape(2, 3))
    header, body = (tmp_path / "a.ply").read_bytes().split(b"end_header\n")
    assert b"uchar" not in header
    assert np.frombuffer(body, "<f4").tolist() == [0, 1, 2, 3, 4, 5]
    write_ply(tmp_path / "e.ply", np.zeros((0, 3), np.float32))
    assert b"element vertex 0" in (tmp_path / "e.ply").read_bytes()


def test_ply_bad_shapes(tmp_path):
    with pytest.raises(ValueError, match=r"\(N, 3\)"):
        write_ply(tmp_path / "a.ply", np.zeros((4, 2)))
    with pytest.raises(ValueError, match="uint8"):
        write_ply(tmp_path / "a.ply", np.zeros((4, 3)), np.zeros((4, 3)))
    with pytest.raises(ValueError, match="shape"):
        write_ply(tmp_path / "a.ply", np.zeros((4, 3)), np.zeros((3, 3), np.uint8))
    assert os.listdir(tmp_path) == []
