"""Argument types shared by the commands.

Each raises ``argparse.ArgumentTypeError``, which the parser reports as one
line ``clkit: error: argument --x: ...`` with exit status 2.
"""

from __future__ import annotations

import argparse
import math
import re

from .._errors import ClkitError
from .._io.masks import mask_from_spec


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must be a number, not {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{what} must be a finite number, not {text!r}")
    return value


def finite(text):
    return _number(text, "the value")


def positive(text):
    value = _number(text, "the value")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, not {text}")
    return value


def nonzero(text):
    value = _number(text, "the value")
    if value == 0:
        raise argparse.ArgumentTypeError("a focal length cannot be 0")
    return value


def sigma(text):
    value = _number(text, "sigma")
    if value < 0:
        raise argparse.ArgumentTypeError(f"sigma must be 0 or more, not {text}")
    return value


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def pixels(text):
    """``WIDTHxHEIGHT`` in pixels, as (width, height)."""
    match = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"size {text!r} is not WIDTHxHEIGHT, e.g. 800x600")
    width, height = int(match[1]), int(match[2])
    if width < 1 or height < 1:
        raise argparse.ArgumentTypeError(f"size {text!r}: width and height must be 1 or more")
    return width, height


def window(text):
    """``XMIN,XMAX,YMIN,YMAX``: a rectangle of the complex plane."""
    parts = text.split(",")
    if len(parts) != 4:
        raise argparse.ArgumentTypeError(f"window {text!r} is not XMIN,XMAX,YMIN,YMAX, "
                                         "e.g. -2,1,-1.5,1.5")
    xmin, xmax, ymin, ymax = (_number(p, "each window bound") for p in parts)
    if not (xmin < xmax and ymin < ymax):
        raise argparse.ArgumentTypeError(f"window {text!r}: need XMIN < XMAX and YMIN < YMAX")
    return xmin, xmax, ymin, ymax


def weights(text):
    """``bt601``, ``bt709`` or three numbers ``R,G,B``."""
    name = text.strip().lower()
    if name in ("bt601", "bt709"):
        return name
    parts = text.split(",")
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"weights {text!r}: use bt601, bt709 or three numbers "
                                         "R,G,B such as 0.25,0.5,0.25")
    return tuple(_number(p, "each weight") for p in parts)


def mask(text):
    """A ``--mask`` spec (see :func:`clkit._io.masks.mask_from_spec`), as its array."""
    try:
        return mask_from_spec(text)
    except (ClkitError, OSError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
