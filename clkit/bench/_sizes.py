"""The problem sizes of a benchmark run: presets and ``WxH``."""

from __future__ import annotations

from dataclasses import dataclass

from .._errors import ArgumentValueError


@dataclass(frozen=True)
class Sizes:
    """The problem sizes of one run: images (width, height), vector length, fractal."""

    name: str
    image: tuple
    vector: int
    fractal: tuple
    max_iter: int = 256

    def describe(self) -> str:
        return (f"{self.name}: images {self.image[0]}x{self.image[1]}, vectors {self.vector:,} "
                f"elements, mandelbrot {self.fractal[0]}x{self.fractal[1]} with {self.max_iter} "
                "iterations")


PRESETS = {
    "small": Sizes("small", (640, 360), 1 << 20, (480, 270)),
    # 4K images, 16 M-element vectors, a full-HD fractal: the sizes of the CPU figures.
    "default": Sizes("default", (3840, 2160), 1 << 24, (1920, 1080)),
    # The GPU figures' sizes; the fractal stays at 4K so that the numpy baseline takes seconds.
    "gpu": Sizes("gpu", (7680, 4320), 1 << 26, (3840, 2160)),
}


def parse_size(text: str) -> Sizes:
    """A preset name (small, default, gpu) or ``WxH`` (images and fractal WxH, vectors W*H).

    Raises
    ------
    ArgumentValueError
        With a message naming the accepted forms.

    Examples
    --------
    >>> from clkit.bench import parse_size
    >>> parse_size("64x48").vector
    3072
    """
    key = text.strip().lower()
    if key in PRESETS:
        return PRESETS[key]
    w, sep, h = key.partition("x")
    if sep and w.isdigit() and h.isdigit() and int(w) > 0 and int(h) > 0:
        w, h = int(w), int(h)
        return Sizes(f"{w}x{h}", (w, h), w * h, (w, h))
    raise ArgumentValueError(f"size must be one of {', '.join(PRESETS)} or WxH (e.g. 1920x1080), "
                             f"not {text!r}")
