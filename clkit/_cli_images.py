"""The image subcommands of ``clkit``: hello, gray, convolve, blur, mandelbrot, points.

Each reads its input with :mod:`clkit._imageio`, runs one function of
:mod:`clkit.kernels` on the chosen device and writes the result whole or not
at all.  ``IN`` may be a folder: then ``OUT`` is a folder (created if
needed), every image directly in ``IN`` is processed into a file of the same
name, and a progress bar on stderr (when it is a terminal) shows the batch.
A file that fails does not stop the batch: the others are still written, and
the command ends with one error line naming the file(s) and exit status 2.

Results keep the input's pixel depth: 8-bit images give 8-bit images
(clipped to 0..255 and rounded), 16-bit images 16-bit ones; ``.npy`` outputs
keep the exact float32 values (and the signs of derivative filters).
"""

from __future__ import annotations

import argparse
import math
import re
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from . import _imageio, kernels
from ._cli import UsageError, command
from ._devices import select
from ._errors import ClkitError

MODES = ("reflect", "constant", "nearest", "mirror", "wrap")


# ---------------------------------------------------------------------------------------------
# argument types: each raises argparse.ArgumentTypeError, which the parser reports as
# one line `clkit: error: argument --x: ...` with exit status 2

def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must be a number, not {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{what} must be a finite number, not {text!r}")
    return value


def _finite(text):
    return _number(text, "the value")


def _positive(text):
    value = _number(text, "the value")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, not {text}")
    return value


def _nonzero(text):
    value = _number(text, "the value")
    if value == 0:
        raise argparse.ArgumentTypeError("a focal length cannot be 0")
    return value


def _sigma(text):
    value = _number(text, "sigma")
    if value < 0:
        raise argparse.ArgumentTypeError(f"sigma must be 0 or more, not {text}")
    return value


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def _size(text):
    match = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"size {text!r} is not WIDTHxHEIGHT, e.g. 800x600")
    width, height = int(match[1]), int(match[2])
    if width < 1 or height < 1:
        raise argparse.ArgumentTypeError(f"size {text!r}: width and height must be 1 or more")
    return width, height


def _window(text):
    parts = text.split(",")
    if len(parts) != 4:
        raise argparse.ArgumentTypeError(f"window {text!r} is not XMIN,XMAX,YMIN,YMAX, "
                                         "e.g. -2,1,-1.5,1.5")
    xmin, xmax, ymin, ymax = (_number(p, "each window bound") for p in parts)
    if not (xmin < xmax and ymin < ymax):
        raise argparse.ArgumentTypeError(f"window {text!r}: need XMIN < XMAX and YMIN < YMAX")
    return xmin, xmax, ymin, ymax


def _weights(text):
    name = text.strip().lower()
    if name in ("bt601", "bt709"):
        return name
    parts = text.split(",")
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"weights {text!r}: use bt601, bt709 or three numbers "
                                         "R,G,B such as 0.25,0.5,0.25")
    return tuple(_number(p, "each weight") for p in parts)


def gaussian_mask(sigma: float) -> np.ndarray:
    """The normalised 2-D Gaussian of ``gaussian:SIGMA``.

    Radius ``int(4 * sigma + 0.5)`` (scipy's default truncation), so that
    ``convolve(image, gaussian_mask(s))`` equals ``gaussian_filter(image, s)``.
    """
    radius = int(4.0 * sigma + 0.5)
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    g = np.exp(-0.5 * (x / sigma) ** 2)
    g /= g.sum()
    return np.outer(g, g)


# Convolution masks as scipy.ndimage.convolve (and clkit.kernels.convolve) apply them: a true
# convolution, the mask flipped over the image. sobel-x is the derivative along x (columns),
# positive where the image gets brighter to the right, equal to scipy.ndimage.sobel(axis=1);
# sobel-y along y (rows, downwards), scipy.ndimage.sobel(axis=0).
NAMED_MASKS = {
    "sobel-x": np.array([[1, 0, -1], [2, 0, -2], [1, 0, -1]], np.float64),
    "sobel-y": np.array([[1, 2, 1], [0, 0, 0], [-1, -2, -1]], np.float64),
    "sharpen": np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.float64),
}

_MASK_HELP = "use gaussian:SIGMA, box:N, sobel-x, sobel-y, sharpen or a FILE.npy"


def parse_mask(spec: str) -> np.ndarray:
    """The mask a ``--mask`` spec names, as a 2-D float array.

    ``gaussian:SIGMA`` (SIGMA > 0; see :func:`gaussian_mask`), ``box:N`` (the
    NxN mean), ``sobel-x``, ``sobel-y``, ``sharpen`` or the path of a 2-D
    ``.npy`` array.
    """
    name, _, arg = spec.strip().partition(":")
    key = name.lower()
    if key == "gaussian":
        sigma = _number(arg, "gaussian:SIGMA's sigma") if arg else None
        if sigma is None or sigma <= 0:
            raise argparse.ArgumentTypeError(f"mask {spec!r}: gaussian:SIGMA needs a sigma "
                                             "greater than 0, e.g. gaussian:1.5")
        return gaussian_mask(sigma)
    if key == "box":
        if not re.fullmatch(r"\s*\d+\s*", arg) or int(arg) < 1:
            raise argparse.ArgumentTypeError(f"mask {spec!r}: box:N needs a whole number "
                                             "N >= 1, e.g. box:5")
        n = int(arg)
        return np.full((n, n), 1.0 / (n * n))
    if key in NAMED_MASKS and not arg:
        return NAMED_MASKS[key].copy()
    if spec.lower().endswith(".npy"):
        try:
            mask = _imageio.read_image(spec)  # numbers only, 2-D or 3-D, with clear errors
        except (OSError, ValueError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        if mask.ndim != 2:
            raise argparse.ArgumentTypeError(f"{spec}: a mask is a 2-D array, not shape "
                                             f"{mask.shape}")
        mask = mask.astype(np.float64)
        if not np.isfinite(mask).all():
            raise argparse.ArgumentTypeError(f"{spec}: the mask holds NaN or infinity")
        return mask
    raise argparse.ArgumentTypeError(f"unknown mask {spec!r}: {_MASK_HELP}")


# ---------------------------------------------------------------------------------------------
# running a command over one file or a folder

class _Progress:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal."""

    def __init__(self, total: int, label: str, stream=None):
        self.stream = stream or sys.stderr
        self.total = total
        self.label = label
        self.done = 0
        self.active = total > 1 and self.stream.isatty()
        self.started = time.perf_counter()

    def step(self, name: str) -> None:
        """Count one more file done (``name``) and redraw."""
        self.done += 1
        if not self.active:
            return
        width = shutil.get_terminal_size((80, 20)).columns
        bar = 24
        filled = bar * self.done // self.total
        elapsed = time.perf_counter() - self.started
        left = elapsed / self.done * (self.total - self.done)
        text = (f"{self.label} [{'#' * filled}{'.' * (bar - filled)}] "
                f"{self.done}/{self.total}, {left:.0f} s left  {name}")
        self.stream.write("\r" + text[:width - 1].ljust(width - 1))
        self.stream.flush()

    def close(self) -> None:
        if self.active:
            self.stream.write("\r" + " " * (shutil.get_terminal_size((80, 20)).columns - 1) + "\r")
            self.stream.flush()


def _per_file_error(src: Path, dst: Path, exc: BaseException) -> str:
    """The message of a failure on one file, naming the file."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, MemoryError):
        message = "not enough memory for this image"
    if str(src) not in message and str(dst) not in message:
        message = f"{src}: {message}"
    return message


def _jobs(src, dst, out_suffix=None) -> tuple[list, Path | None]:
    """The (input, output) pairs of a command, and the output folder for a batch.

    ``out_suffix`` replaces the extension of outputs named after inputs
    (``.ply`` for point clouds); otherwise an output keeps the input's name.
    """
    src, dst = Path(src), Path(dst)
    if src.is_dir():
        if dst.exists() and not dst.is_dir():
            raise UsageError(f"{src} is a folder, so OUT must be a folder too, and {dst} is a file")
        if dst.exists() and dst.resolve() == src.resolve():
            raise UsageError(f"OUT {dst} is the input folder: the results would replace the "
                             "originals; name another folder")
        inputs = _imageio.list_images(src)
        if not inputs:
            raise UsageError(f"{src}: no image files in this folder (looked for "
                             f"{', '.join(_imageio.IMAGE_EXTENSIONS)})")
        jobs = [(p, dst / (p.stem + out_suffix if out_suffix else p.name)) for p in inputs]
        seen = {}
        for p, out in jobs:
            if out in seen:
                raise UsageError(f"{seen[out].name} and {p.name} in {src} would both be written "
                                 f"to {out}; rename one of them")
            seen[out] = p
        try:
            dst.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OSError(f"cannot create the folder {dst}: {exc.strerror or exc}") from None
        return jobs, dst
    if not src.exists():
        raise FileNotFoundError(f"{src}: no such file or folder")
    if dst.is_dir():  # like cp: a file into an existing folder keeps its name
        dst = dst / (src.stem + out_suffix if out_suffix else src.name)
    _imageio.check_output(dst)  # a bad output name or folder fails before any work
    return [(src, dst)], None


def _run(args, process, *, out_suffix=None, unit="image") -> None:
    """Run ``process(src, dst)`` for one file or every image of a folder.

    ``process`` returns a short description of what it wrote.  In a batch, a
    file that fails with a ``ValueError``, ``TypeError`` or ``OSError`` (bad
    contents, unwritable output) is reported at the end, the rest go on; any
    other error (the device, the kernel build) stops the batch at once.
    """
    jobs, folder = _jobs(args.input, args.output, out_suffix)
    started = time.perf_counter()
    if folder is None:
        src, dst = jobs[0]
        try:
            what = process(src, dst)
        except (ValueError, TypeError, OSError, MemoryError) as exc:
            raise UsageError(_per_file_error(src, dst, exc)) from None
        print(f"wrote {dst}{what}")
        return
    progress = _Progress(len(jobs), args.command)
    failures = []
    try:
        for src, dst in jobs:
            try:
                process(src, dst)
            except (ValueError, TypeError, OSError, MemoryError) as exc:
                failures.append((src, _per_file_error(src, dst, exc)))
            progress.step(src.name)
    finally:
        progress.close()
    written = len(jobs) - len(failures)
    seconds = time.perf_counter() - started
    if failures:
        others = ", ".join(str(s) for s, _ in failures[1:6])
        if len(failures) > 6:
            others += f" and {len(failures) - 6} more"
        raise UsageError(f"{failures[0][1]}"
                         + (f"; also failed: {others}" if others else "")
                         + f" ({written} of {len(jobs)} {unit}s written to {folder})")
    print(f"wrote {written} {unit}{'s' if written != 1 else ''} to {folder} in {seconds:.2f} s")


def _describe(array: np.ndarray, bits: int, dst: Path) -> str:
    h, w = array.shape[:2]
    channels = 1 if array.ndim == 2 else array.shape[2]
    kind = f"{array.dtype}" if dst.suffix.lower() == ".npy" else f"{bits}-bit"
    return f" ({w}x{h}, {channels} channel{'s' if channels != 1 else ''}, {kind})"


def _bits_of(image: np.ndarray) -> int:
    """The pixel depth an output keeps: 16 for 16-bit inputs, else 8."""
    return 16 if image.dtype == np.uint16 else 8


# ---------------------------------------------------------------------------------------------
# the commands

def _add_io(p, in_help, out_help, in_name="IN", out_name="OUT"):
    p.add_argument("input", metavar=in_name, help=in_help)
    p.add_argument("output", metavar=out_name, help=out_help)


@command("hello", "run the hello-world kernel: the device writes \"Hello, World!\"")
def cmd_hello(args):
    print(kernels.hello(device=select(args.device)))


cmd_hello.configure = lambda p: None


@command("gray", "convert colour images to grayscale (luma)")
def cmd_gray(args):
    device = select(args.device)

    def process(src, dst):
        image = _imageio.read_image(src, color=True)
        bits = _bits_of(image)
        if image.dtype != np.uint8 and image.dtype != np.float32:
            image = image.astype(np.float32)  # 16-bit and other types: computed in float
        gray = kernels.grayscale(image, weights=args.weights, device=device)
        _imageio.write_image(dst, gray, bits=bits)
        return _describe(gray, bits, dst)

    _run(args, process)


def _configure_gray(p):
    _add_io(p, "an image (PNG, JPEG, TIFF, .npy, ...) or a folder of them",
            "the gray image (a folder when IN is one)")
    p.add_argument("--weights", type=_weights, default="bt601", metavar="W",
                   help="bt601 (default, as OpenCV), bt709, or three numbers R,G,B")


cmd_gray.configure = _configure_gray


def _filter_input(src, device) -> np.ndarray:
    """An image for convolve and blur: integers are filtered in float32, as the library does."""
    image = _imageio.read_image(src)
    if image.dtype.itemsize == 8 and image.dtype.kind in "iu":
        image = image.astype(np.float32)  # numpy's default integers, e.g. from np.arange
    elif image.dtype == np.float64 and not device.fp64:
        image = image.astype(np.float32)  # this device has no double precision
    return image


@command("convolve", "convolve images with a 2-D mask (scipy.ndimage.convolve's result)")
def cmd_convolve(args):
    device = select(args.device)

    def process(src, dst):
        image = _filter_input(src, device)
        result = kernels.convolve(image, args.mask, mode=args.mode, cval=args.cval, device=device)
        bits = _bits_of(image)
        _imageio.write_image(dst, result, bits=bits)
        return _describe(result, bits, dst)

    _run(args, process)


def _configure_convolve(p):
    _add_io(p, "an image (PNG, JPEG, TIFF, .npy, ...) or a folder of them; "
            "each channel is filtered on its own",
            "the result (a folder when IN is one); image files are clipped to 0..255 "
            "(0..65535 for 16-bit inputs), .npy keeps the float32 values and signs")
    p.add_argument("--mask", required=True, type=parse_mask, metavar="MASK",
                   help="gaussian:SIGMA (normalised, radius int(4*SIGMA+0.5)), box:N (NxN mean), "
                        "sobel-x, sobel-y (derivatives, as scipy.ndimage.sobel), sharpen "
                        "([[0,-1,0],[-1,5,-1],[0,-1,0]]), or FILE.npy (any 2-D array)")
    _add_border(p)


def _add_border(p):
    p.add_argument("--mode", choices=MODES, default="reflect",
                   help="how the image continues past its border, as in scipy.ndimage "
                        "(default: reflect)")
    p.add_argument("--cval", type=_finite, default=0.0, metavar="V",
                   help="the value outside the image for --mode constant (default: 0)")


cmd_convolve.configure = _configure_convolve


@command("blur", "Gaussian blur (scipy.ndimage.gaussian_filter's result)")
def cmd_blur(args):
    device = select(args.device)

    def process(src, dst):
        image = _filter_input(src, device)
        result = kernels.gaussian_blur(image, args.sigma, mode=args.mode, cval=args.cval,
                                       truncate=args.truncate, device=device)
        bits = _bits_of(image)
        _imageio.write_image(dst, result, bits=bits)
        return _describe(result, bits, dst)

    _run(args, process)


def _configure_blur(p):
    _add_io(p, "an image (PNG, JPEG, TIFF, .npy, ...) or a folder of them",
            "the blurred image (a folder when IN is one)")
    p.add_argument("--sigma", required=True, type=_sigma, metavar="S",
                   help="standard deviation of the Gaussian, in pixels")
    p.add_argument("--truncate", type=_positive, default=4.0, metavar="T",
                   help="cut the Gaussian off at T sigmas (default: 4)")
    _add_border(p)


cmd_blur.configure = _configure_blur


# The colour map of `clkit mandelbrot`: a gradient from deep blue through white to orange and
# back to black, the stops of a classic fractal palette. Counts are spread by a logarithm so
# that the thin bands near the set get most of the colours; points in the set are black.
_STOPS = np.array([0.0, 0.16, 0.42, 0.6425, 0.8575, 1.0])
_PALETTE = np.array([[0, 7, 100], [32, 107, 203], [237, 255, 255], [255, 170, 0], [0, 2, 0],
                     [0, 0, 0]], np.float64)


def colorize(counts: np.ndarray, max_iter: int) -> np.ndarray:
    """An HxWx3 uint8 picture of Mandelbrot iteration counts."""
    t = np.log(np.maximum(counts, 1)) / math.log(max(max_iter, 2))
    rgb = np.stack([np.interp(t, _STOPS, _PALETTE[:, c]) for c in range(3)], axis=-1)
    rgb[counts >= max_iter] = 0
    return np.rint(rgb).astype(np.uint8)


@command("mandelbrot", "draw the Mandelbrot set (PNG), or write its iteration counts (.npy)")
def cmd_mandelbrot(args):
    device = select(args.device)
    out = Path(args.output)
    if out.is_dir():
        out = out / "mandelbrot.png"
    fmt = _imageio.check_output(out)
    if fmt == "PLY":
        raise UsageError(f"{out}: a PLY file holds points; name the output .png or .npy")
    width, height = args.size
    if args.window is not None:
        xmin, xmax, ymin, ymax = args.window
    else:  # the whole set, widened to the picture's aspect ratio so that nothing is stretched
        half_h = 1.5
        half_w = max(1.5, half_h * width / height)
        half_h = half_w * height / width
        xmin, xmax, ymin, ymax = -0.5 - half_w, -0.5 + half_w, -half_h, half_h
    dtype = np.float64 if args.double else np.float32
    try:
        counts = kernels.mandelbrot(width, height, xmin=xmin, xmax=xmax, ymin=ymin, ymax=ymax,
                                    max_iter=args.max_iter, dtype=dtype, device=device)
    except MemoryError:
        raise ClkitError(f"not enough memory for a {width}x{height} picture") from None
    # Row 0 is ymin; an image's first row is its top, where the imaginary part is largest.
    picture = counts if fmt == "NPY" else colorize(counts[::-1], args.max_iter)
    _imageio.write_image(out, picture)
    print(f"wrote {out} ({width}x{height}, max_iter {args.max_iter}, "
          f"window {xmin:g},{xmax:g},{ymin:g},{ymax:g})")


def _configure_mandelbrot(p):
    p.add_argument("output", metavar="OUT",
                   help="a picture (.png, .jpg, ...) or .npy for the raw int32 counts "
                        "(row 0 = YMIN)")
    p.add_argument("--size", type=_size, default=(800, 600), metavar="WxH",
                   help="width x height in pixels (default: 800x600)")
    p.add_argument("--max-iter", type=_positive_int, default=256, metavar="N",
                   help="iterations before a point counts as inside the set (default: 256)")
    p.add_argument("--window", type=_window, default=None, metavar="XMIN,XMAX,YMIN,YMAX",
                   help="the part of the complex plane to draw (default: the whole set, "
                        "centred on -0.5 and fitted to the size's aspect ratio)")
    # "-2,1,-1.5,1.5" starts with "-": argparse before Python 3.13 takes it for an option unless
    # it is a plain negative number. 3.13 accepts anything that starts like one; do the same.
    if hasattr(p, "_negative_number_matcher"):
        p._negative_number_matcher = re.compile(r"-\.?\d")
    p.add_argument("--double", action="store_true",
                   help="compute in double precision, for deep zooms (needs a device with fp64)")


cmd_mandelbrot.configure = _configure_mandelbrot


def _read_depth(src: Path) -> np.ndarray:
    depth = _imageio.read_image(src)
    where = ("a depth map is one channel of 16-bit integers (a 16-bit PNG or TIFF, or a uint16 "
             ".npy) or of float32 (a float TIFF or .npy)")
    if depth.ndim == 3 and depth.shape[2] == 1:
        depth = depth[:, :, 0]  # an HxWx1 array is one channel too
    if depth.ndim != 2:
        raise ValueError(f"{src}: has {depth.shape[2]} channels; {where}")
    if depth.dtype == np.uint8:
        raise ValueError(f"{src}: is an 8-bit image; {where}")
    if depth.dtype.kind == "f":
        return depth.astype(np.float32, copy=False)
    if depth.dtype != np.uint16:
        low, high = int(depth.min()), int(depth.max())
        if low < 0 or high > 65535:
            raise ValueError(f"{src}: holds {depth.dtype} values from {low} to {high}; {where}")
        depth = depth.astype(np.uint16)
    return depth


def _find_rgb(rgb, depth_src: Path, batch: bool) -> Path | None:
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


@command("points", "turn depth images into 3-D point clouds (PLY) through a pinhole camera")
def cmd_points(args):
    device = select(args.device)
    out = Path(args.output)
    batch = Path(args.input).is_dir()
    if not batch and not out.is_dir() and out.suffix.lower() != ".ply":
        raise UsageError(f"{out}: the point cloud is written as PLY; name it .ply")

    def process(src, dst):
        depth = _read_depth(src)
        rgb_path = _find_rgb(args.rgb, src, batch)
        rgb = None
        if rgb_path is not None:
            rgb = _imageio.read_image(rgb_path, color=True)[:, :, :3]
            if rgb.dtype != np.uint8:
                raise ValueError(f"{rgb_path}: the colours must be an 8-bit image, not "
                                 f"{rgb.dtype}")
            if rgb.shape[:2] != depth.shape:
                raise ValueError(f"{rgb_path} is {rgb.shape[1]}x{rgb.shape[0]} but the depth map "
                                 f"{src} is {depth.shape[1]}x{depth.shape[0]}; they must match")
            rgb = np.ascontiguousarray(rgb)
        result = kernels.depth_to_points(depth, args.fx, args.fy, args.cx, args.cy,
                                         depth_scale=args.depth_scale, rgb=rgb,
                                         drop_invalid=not args.keep_invalid, device=device)
        points, colors = result if rgb is not None else (result, None)
        _imageio.write_ply(dst, points, colors)
        if len(points) == 0:
            return " (0 points: every pixel's depth is 0 or not finite)"
        return f" ({len(points):,} points{', with colours' if rgb is not None else ''})"

    _run(args, process, out_suffix=".ply", unit="point cloud")


def _configure_points(p):
    _add_io(p, "a depth map (16-bit PNG/TIFF, float TIFF, .npy) or a folder of them",
            "the point cloud, binary PLY (a folder when DEPTH is one)", "DEPTH", "OUT.ply")
    intrinsics = p.add_argument_group("camera intrinsics, in pixels")
    intrinsics.add_argument("--fx", type=_nonzero, required=True, help="focal length along x")
    intrinsics.add_argument("--fy", type=_nonzero, required=True, help="focal length along y")
    intrinsics.add_argument("--cx", type=_finite, required=True, help="principal point, column")
    intrinsics.add_argument("--cy", type=_finite, required=True, help="principal point, row")
    p.add_argument("--depth-scale", type=_positive, default=1.0, metavar="S",
                   help="depth units per metre (z = depth / S): 1000 for millimetres, 5000 for "
                        "the TUM RGB-D data (default: 1)")
    p.add_argument("--rgb", metavar="IMG",
                   help="colour the points from this image (same size as the depth map; a "
                        "folder of same-named images when DEPTH is a folder)")
    p.add_argument("--keep-invalid", action="store_true",
                   help="keep the pixels with no depth (z = 0, NaN, inf): one point per pixel")


cmd_points.configure = _configure_points
