"""Reading and writing the files of the ``clkit`` command: images, depth maps, ``.npy``, PLY.

Images go through Pillow (PNG, JPEG, TIFF and whatever else it reads), ``.npy``
through numpy.  What a file becomes:

=====================================  ====================================
file                                   array
=====================================  ====================================
8-bit gray, 1-bit                      HxW uint8
8-bit gray with alpha                  HxWx2 uint8
RGB, palette, CMYK, YCbCr              HxWx3 uint8 (RGB)
RGBA, palette with transparency        HxWx4 uint8
16-bit gray PNG/TIFF/PGM (depth maps)  HxW uint16
32-bit integer TIFF                    HxW int32
32-bit float TIFF                      HxW float32
``.npy``                               the array as saved (numbers only)
=====================================  ====================================

``read_image(path, color=True)`` makes every image HxWx3 or HxWx4, for
operations that need colour channels.  A JPEG's EXIF orientation is applied,
so arrays are upright as viewers show them.

Writing is whole or not at all: the data goes to a temporary file in the
output's folder, which replaces the output (``os.replace``) only once it is
complete; on any error the temporary file is removed and an existing output
is left as it was.  A 32-bit result of one channel goes into a TIFF as float32;
otherwise image formats hold integers, so float results are clipped to the
format's range (0..255, or 0..65535 for a 16-bit result) and rounded; ``.npy``
keeps every dtype.

Every error names the file: ``FileNotFoundError``/``PermissionError`` (and
other ``OSError``) for the file system, :class:`clkit.ArgumentValueError` (a
``ValueError``) for contents.
"""

from __future__ import annotations

import os
import struct
import tokenize
import warnings
import zlib
from pathlib import Path

import numpy as np

from .._errors import ArgumentValueError, ClkitError
from .._files import atomic_write

#: Extensions a folder listing treats as images (a single file may be any
#: format Pillow recognises, whatever its name).
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".jpe", ".jfif", ".tif", ".tiff", ".bmp", ".gif",
                    ".webp", ".ppm", ".pgm", ".pbm", ".pnm", ".tga", ".qoi", ".npy")

# What Pillow raises, besides OSError, on a file it cannot decode: SyntaxError for a broken PNG
# chunk, struct.error and EOFError for short headers, zlib.error for damaged compressed data.
_DECODE_ERRORS = (OSError, SyntaxError, ValueError, EOFError, struct.error, zlib.error,
                  IndexError, KeyError)

_TO_RGB = {"1": "L", "La": "LA", "RGBa": "RGBA", "RGBX": "RGB", "CMYK": "RGB", "YCbCr": "RGB",
           "LAB": "RGB", "HSV": "RGB", "PA": "RGBA"}


def _pillow(path):
    try:
        from PIL import Image
    except ImportError as exc:
        raise ClkitError(f"{path}: reading and writing images needs Pillow: "
                         "pip install Pillow (or use .npy files)") from exc
    return Image


# ---------------------------------------------------------------------------------------------
# reading

def read_image(path, *, color: bool = False) -> np.ndarray:
    """Read an image or ``.npy`` file into a numpy array.

    Parameters
    ----------
    path : str or Path
    color : bool
        Return HxWx3 (RGB) or HxWx4 (RGBA): gray images are repeated into
        three channels, gray with alpha becomes RGBA.

    Returns
    -------
    numpy.ndarray
        C-contiguous, see the module's table for the dtypes.

    Raises
    ------
    FileNotFoundError, IsADirectoryError, PermissionError
        The file cannot be opened.
    ValueError
        The file is empty, truncated, corrupt, not an image, or an ``.npy``
        array that is not a 2-D or 3-D array of numbers.

    Examples
    --------
    >>> from clkit._io.imageio import read_image
    >>> read_image("photo.jpg").shape  # doctest: +SKIP
    (480, 640, 3)
    """
    path = Path(path)
    _check_readable(path)
    if path.suffix.lower() == ".npy":
        array = _read_npy(path)
    else:
        array = _read_pillow(path)
    if color:
        array = _as_color(array, path)
    return np.ascontiguousarray(array)


def _check_readable(path: Path) -> None:
    try:
        info = path.stat()
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    except NotADirectoryError:
        raise FileNotFoundError(f"{path}: no such file ({path.parent} is not a folder)") from None
    except PermissionError:
        raise PermissionError(f"{path}: permission denied") from None
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder, not an image file")
    if info.st_size == 0:
        raise ArgumentValueError(f"{path}: the file is empty")
    if not os.access(path, os.R_OK):
        raise PermissionError(f"{path}: permission denied")


def _read_npy(path: Path) -> np.ndarray:
    try:
        array = np.load(path, allow_pickle=False)
    except PermissionError:
        raise PermissionError(f"{path}: permission denied") from None
    except ValueError as exc:
        if "allow_pickle" in str(exc):
            raise ArgumentValueError(
                f"{path}: holds Python objects, not numbers; save a numeric array "
                "with numpy.save") from None
        raise ArgumentValueError(
            f"{path}: not a valid .npy file, truncated or corrupt ({exc})") from None
    except (OSError, EOFError, SyntaxError, tokenize.TokenError) as exc:
        # numpy parses the header with Python's tokenizer, whose errors escape from 3.12 on
        raise ArgumentValueError(
            f"{path}: not a valid .npy file, truncated or corrupt ({exc})") from None
    if not isinstance(array, np.ndarray):  # np.load also opens .npz archives, whatever the name
        array.close()
        raise ArgumentValueError(f"{path}: is an .npz archive, not an .npy array")
    if not array.dtype.isnative:  # saved on a big-endian machine: kernels need native order
        array = array.astype(array.dtype.newbyteorder("="))
    if array.dtype.kind not in "biuf":
        raise ArgumentValueError(
            f"{path}: holds {array.dtype} values; an image needs integers or floats")
    if array.dtype.kind == "b":
        array = array.astype(np.uint8) * np.uint8(255)
    if array.ndim not in (2, 3) or array.size == 0:
        raise ArgumentValueError(
            f"{path}: an image array is HxW or HxWxC, not shape {array.shape}")
    return array


def _read_pillow(path: Path) -> np.ndarray:
    Image = _pillow(path)
    from PIL import ImageOps
    try:
        # Pillow warns (on stderr) about some damage it can read past, such as corrupt EXIF data
        # in a TIFF: the file either decodes, or fails below with one clear error.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(path) as img:
                img.load()  # decode now: a truncated or corrupt file fails here, not later
    except PermissionError:
        raise PermissionError(f"{path}: permission denied") from None
    except Image.UnidentifiedImageError:
        raise ArgumentValueError(
            f"{path}: not an image file (unknown format, or the file is corrupt)"
            ) from None
    except Image.DecompressionBombError as exc:
        raise ArgumentValueError(f"{path}: {exc}") from None
    except _DECODE_ERRORS as exc:
        what = "truncated" if "truncated" in str(exc) else "corrupt"
        raise ArgumentValueError(
            f"{path}: cannot decode the image, the file is {what} ({exc})") from None
    fmt = img.format
    if img.getexif().get(0x0112, 1) != 1:  # EXIF orientation: a camera held sideways
        img = ImageOps.exif_transpose(img)
    return _pixels(img, fmt, path)


def _pixels(img, fmt, path) -> np.ndarray:
    """The pixels of an opened Pillow image, as the module's table says."""
    mode = img.mode
    if mode == "P":
        mode = "RGBA" if "transparency" in img.info else "RGB"
    mode = _TO_RGB.get(mode, mode)
    if mode in ("L", "LA", "RGB", "RGBA"):
        if mode != img.mode:
            img = img.convert(mode)
        return np.asarray(img, dtype=np.uint8)
    if mode.startswith("I;16"):
        return np.asarray(img).astype(np.uint16)  # native byte order whatever the file's
    if mode == "I":
        array = np.asarray(img, dtype=np.int32)
        if fmt in ("PNG", "PPM"):  # 16 bits at most; Pillow opens some of them as "I"
            return array.astype(np.uint16)
        return array
    if mode == "F":
        return np.asarray(img, dtype=np.float32)
    raise ArgumentValueError(
        f"{path}: {fmt} images of mode {img.mode} are not supported; convert it to "
        "8-bit RGB or gray, or 16-bit gray")


def _as_color(array: np.ndarray, path) -> np.ndarray:
    if array.ndim == 3 and array.shape[2] == 1:
        array = array[:, :, 0]
    if array.ndim == 2:
        return np.repeat(array[:, :, None], 3, axis=2)
    channels = array.shape[2]
    if channels == 2:  # gray and alpha
        return np.concatenate([np.repeat(array[:, :, :1], 3, axis=2), array[:, :, 1:]], axis=2)
    if channels in (3, 4):
        return array
    raise ArgumentValueError(
        f"{path}: has {channels} channels; a colour image has 3 (RGB) or 4 (RGBA)")


def list_images(folder) -> list:
    """The image and ``.npy`` files directly in ``folder``, sorted by name.

    Hidden files (names starting with a dot, such as the temporary files of
    an unfinished write) and subfolders are left out.
    """
    folder = Path(folder)
    try:
        entries = sorted(folder.iterdir())
    except PermissionError:
        raise PermissionError(f"{folder}: permission denied") from None
    return [p for p in entries
            if p.suffix.lower() in IMAGE_EXTENSIONS and not p.name.startswith(".")
            and p.is_file()]


# ---------------------------------------------------------------------------------------------
# writing

def image_format(path) -> str:
    """The format a path's extension names: ``"NPY"``, ``"PLY"`` or Pillow's format name.

    Raises ``ValueError`` for a missing or unknown extension, so that a
    command can refuse a bad output name before it does any work.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return "NPY"
    if suffix == ".ply":
        return "PLY"
    if not suffix:
        raise ArgumentValueError(f"{path}: no file extension to choose the format; "
                                   "name it .png, .jpg, .tif or .npy")
    Image = _pillow(path)
    Image.init()
    fmt = Image.registered_extensions().get(suffix)
    if fmt is None or fmt not in Image.SAVE:
        raise ArgumentValueError(
            f"{path}: cannot write {suffix} files; use .png, .jpg, .tif or .npy")
    return fmt


def check_output(path) -> str:
    """Refuse, before any work, an output path that cannot be written; return its format.

    Checks the extension (:func:`image_format`), that the path is not a
    folder and that its folder exists and is writable.
    """
    path = Path(path)
    fmt = image_format(path)
    folder = path.parent
    if path.is_dir():
        raise IsADirectoryError(f"cannot write {path}: it is a folder")
    if not folder.exists():
        raise FileNotFoundError(f"cannot write {path}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise NotADirectoryError(f"cannot write {path}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(f"cannot write {path}: permission denied in {folder}")
    return fmt


def write_image(path, array, *, bits: int = 8) -> int:
    """Write an array as an image or ``.npy`` file, whole or not at all.

    Parameters
    ----------
    path : str or Path
        The extension chooses the format (``.png``, ``.jpg``, ``.tif``, ...,
        ``.npy``).
    array : numpy.ndarray
        HxW, HxWx1, HxWx2 (gray, alpha), HxWx3 (RGB) or HxWx4 (RGBA).
    bits : {8, 16, 32}
        Pixel depth for image formats.  16 keeps the precision of 16-bit
        inputs, and needs a one-channel array and PNG, TIFF or PGM.  32
        keeps that of 32-bit inputs where the format can: one channel in a
        TIFF, as float32; elsewhere it is 8.  Float and other integer values
        are clipped to the range (0..255 or 0..65535) and rounded to the
        nearest integer; NaN becomes 0.  ``.npy`` files store the array
        unchanged.

    Returns
    -------
    int
        The pixel depth written: ``bits``, 8 where 32 could not be kept, 0
        for ``.npy``.

    Raises
    ------
    ValueError
        Unknown extension, or an array the format cannot hold.
    OSError
        The file cannot be written (folder missing, permission, disk full).
        No temporary file is left behind.

    Examples
    --------
    >>> import numpy as np
    >>> from clkit._io.imageio import write_image
    >>> write_image("gray.png", np.zeros((4, 5), np.float32))  # doctest: +SKIP
    """
    path = Path(path)
    fmt = image_format(path)
    array = np.asarray(array)
    if fmt == "NPY":
        with atomic_write(path) as f:
            np.save(f, array, allow_pickle=False)
        return 0
    if fmt == "PLY":
        raise ArgumentValueError(
            f"{path}: a PLY file holds points, not an image; use .png or .npy")
    Image = _pillow(path)
    pixels = _to_pixels(array, fmt, bits, path)
    img = Image.fromarray(pixels)
    bits = 8 * pixels.itemsize
    options = {"quality": 95} if fmt in ("JPEG", "WEBP") else {}  # (Pillow's default: 75, 80)
    try:
        with atomic_write(path) as f:
            img.save(f, format=fmt, **options)
    except (ValueError, KeyError) as exc:  # Pillow: this format cannot hold this mode
        raise ArgumentValueError(f"{path}: {fmt} cannot store a {img.mode} image ({exc}); "
                                   "use .png or .npy") from None
    return bits


def _to_pixels(array: np.ndarray, fmt: str, bits: int, path) -> np.ndarray:
    if array.ndim == 3 and array.shape[2] == 1:
        array = array[:, :, 0]
    if array.ndim not in (2, 3) or (array.ndim == 3 and array.shape[2] not in (2, 3, 4)):
        raise ArgumentValueError(
            f"{path}: cannot store an array of shape {array.shape} as an image; "
            "use .npy")
    if array.dtype.kind not in "biuf":
        raise ArgumentValueError(f"{path}: cannot store {array.dtype} values as an image")
    if bits == 32 and fmt == "TIFF" and array.ndim == 2:
        return np.ascontiguousarray(array, dtype=np.float32)
    if bits == 16:
        if array.ndim != 2:
            raise ArgumentValueError(
                f"{path}: the result is 16-bit with {array.shape[2]} channels; "
                "image files hold 16 bits per pixel with one channel only: use .npy")
        if fmt not in ("PNG", "TIFF", "PPM"):
            raise ArgumentValueError(f"{path}: the result is 16-bit and {fmt} holds 8 bits; "
                                       "use .png, .tif or .npy")
        dtype = np.uint16
    elif bits in (8, 32):
        dtype = np.uint8
    else:
        raise ArgumentValueError(f"bits must be 8, 16 or 32, not {bits!r}")
    if fmt == "JPEG" and array.ndim == 3 and array.shape[2] in (2, 4):
        array = array[:, :, :-1] if array.shape[2] == 4 else array[:, :, 0]  # JPEG has no alpha
    if array.dtype != dtype:
        top = np.iinfo(dtype).max
        if array.dtype.kind == "f":
            array = np.rint(np.nan_to_num(array, nan=0.0, posinf=top, neginf=0.0))
        array = np.clip(array, 0, top).astype(dtype)
    return np.ascontiguousarray(array)


def write_ply(path, points, colors=None) -> None:
    """Write a point cloud as a binary little-endian PLY file, whole or not at all.

    The vertex element has ``float x, y, z`` and, with colours,
    ``uchar red, green, blue``: the layout MeshLab, Open3D, CloudCompare and
    PCL read.

    Parameters
    ----------
    path : str or Path
    points : (N, 3) array of float
    colors : (N, 3) array of uint8, optional

    Examples
    --------
    >>> import numpy as np
    >>> from clkit._io.imageio import write_ply
    >>> write_ply("cloud.ply", np.zeros((10, 3), np.float32))  # doctest: +SKIP
    """
    path = Path(path)
    points = np.asarray(points)
    if points.ndim != 2 or points.shape[1] != 3:
        raise ArgumentValueError(f"{path}: points must have shape (N, 3), not {points.shape}")
    fields = [("x", "<f4"), ("y", "<f4"), ("z", "<f4")]
    header = ["ply", "format binary_little_endian 1.0", "comment written by clkit",
              f"element vertex {len(points)}",
              "property float x", "property float y", "property float z"]
    if colors is not None:
        colors = np.asarray(colors)
        if colors.shape != points.shape:
            raise ArgumentValueError(f"{path}: colors must have the points' shape {points.shape}, "
                                       f"not {colors.shape}")
        if colors.dtype != np.uint8:
            raise ArgumentValueError(f"{path}: colors must be uint8, not {colors.dtype}")
        fields += [("red", "u1"), ("green", "u1"), ("blue", "u1")]
        header += ["property uchar red", "property uchar green", "property uchar blue"]
    header.append("end_header")
    vertices = np.empty(len(points), dtype=fields)
    vertices["x"], vertices["y"], vertices["z"] = points[:, 0], points[:, 1], points[:, 2]
    if colors is not None:
        vertices["red"], vertices["green"], vertices["blue"] = colors.T
    with atomic_write(path) as f:
        f.write(("\n".join(header) + "\n").encode("ascii"))
        f.write(vertices.tobytes())
