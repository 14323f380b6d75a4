"""The clkit demo: a photograph through the image kernels, checked against OpenCV and scipy.

    python examples/demo.py

Reads examples/data/astronaut.jpg (NASA, public domain: see
examples/data/README.md), converts it to gray, blurs, sharpens and finds its
edges on the default OpenCL device, checks every result against OpenCV or
scipy.ndimage, and writes the pictures to examples/output/.  Each step is
what a `clkit` command does to a file; the commands are printed too.
"""

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.ndimage as ndi
from PIL import Image

import clkit
from clkit.kernels import convolve, gaussian_blur, grayscale

try:
    import cv2
except ImportError:
    cv2 = None

HERE = Path(__file__).resolve().parent
PHOTO = HERE / "data" / "astronaut.jpg"
OUTPUT = HERE / "output"
OUTPUT.mkdir(exist_ok=True)

device = clkit.select()
with Image.open(PHOTO) as img:
    photo = np.asarray(img.convert("RGB"))
print(f"{PHOTO.relative_to(HERE.parent)}: {photo.shape[1]}x{photo.shape[0]} RGB, "
      f"on {device}\n")


def to_uint8(image):
    """A float result as an 8-bit picture: clipped to 0..255 and rounded (as `clkit` saves)."""
    return np.clip(np.rint(image), 0, 255).astype(np.uint8)


def step(name, compute, reference, check, picture):
    compute()                                      # the first call builds the kernel
    start = time.perf_counter()
    result = compute()
    ms = (time.perf_counter() - start) * 1e3
    error = check(result, reference())
    path = OUTPUT / f"astronaut_{name}.png"
    Image.fromarray(picture(result)).save(path)
    print(f"{name:<8} {ms:7.2f} ms   {error:<38} -> {path.relative_to(HERE.parent)}")
    return result


def within(tolerance):
    def check(result, expected):
        diff = np.abs(result.astype(np.float64) - expected).max()
        assert diff <= tolerance, f"differs from the reference by {diff}"
        return f"max difference {diff:.2g} (allowed {tolerance:g})"
    return check


print(f"{'step':<8} {'time':>10}   {'against OpenCV / scipy':<38}    picture")
gray = step("gray", lambda: grayscale(photo, device=device),
            lambda: cv2.cvtColor(photo, cv2.COLOR_RGB2GRAY) if cv2 is not None
            else np.rint(photo @ np.array([0.299, 0.587, 0.114])),
            within(1), lambda g: g)

blurred = step("blur", lambda: gaussian_blur(photo, 3.0, device=device),
               lambda: ndi.gaussian_filter(photo.astype(np.float64), (3.0, 3.0, 0)),
               within(0.01), to_uint8)

sharpen = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.float32)
sharpened = step("sharpen", lambda: convolve(photo, sharpen, device=device),
                 lambda: np.stack([ndi.convolve(photo[..., c].astype(np.float64), sharpen)
                                   for c in range(3)], axis=-1),
                 within(0.01), to_uint8)

# Edges: the length of the gradient, from the two Sobel derivatives of the gray picture.
sobel_x = np.array([[1, 0, -1], [2, 0, -2], [1, 0, -1]], np.float32)
step("edges", lambda: np.hypot(convolve(gray, sobel_x, device=device),
                               convolve(gray, sobel_x.T.copy(), device=device)),
     lambda: np.hypot(ndi.sobel(gray.astype(np.float64), axis=1),
                      ndi.sobel(gray.astype(np.float64), axis=0)),
     within(0.01), lambda e: to_uint8(e / 2))

# The same through the clkit command, which reads and writes the files itself.
print("\nthe same with the clkit command:")
for args, expected in [(["gray", PHOTO, OUTPUT / "cli_gray.png"], gray),
                       (["blur", PHOTO, OUTPUT / "cli_blur.png", "--sigma", "3"], blurred),
                       (["convolve", PHOTO, OUTPUT / "cli_sharpen.png", "--mask", "sharpen"],
                        sharpened)]:
    shown = " ".join(str(a.relative_to(HERE.parent)) if isinstance(a, Path) else a
                     for a in args)
    print(f"  clkit {shown}")
    subprocess.run([sys.executable, "-m", "clkit", *map(str, args), "--device", device.id],
                   check=True, stdout=subprocess.DEVNULL)
    with Image.open(args[2]) as written:
        assert np.abs(np.asarray(written, np.float64) - to_uint8(expected)).max() <= 1

print("\nevery result equals its reference")
