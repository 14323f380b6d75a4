"""``clkit warmup``: build the convolve and blur kernels a deployment will use, ahead of time."""

from __future__ import annotations

from .._engine.stencil import MODES
from .._engine.filter import IMAGE_DTYPES
from .._platform.devices import select
from . import _types
from ._command import Command


class Warmup(Command):
    def arguments(self, p):
        p.description += (". Without options it builds the generic kernel, which answers every "
                          "mask, sigma, mode and dtype while the specialised ones compile in "
                          "the background; each option adds the specialised kernels of its "
                          "values.")
        p.add_argument("--mask", action="append", type=_types.mask, metavar="MASK",
                       help="a mask convolve will get (as clkit convolve --mask); repeatable")
        p.add_argument("--sigma", action="append", type=_types.sigma, metavar="S",
                       help="a sigma blur will get; repeatable")
        p.add_argument("--dtype", action="append", metavar="D",
                       choices=[t.__name__ for t in IMAGE_DTYPES],
                       help="an image dtype (default: float32); repeatable")
        p.add_argument("--mode", action="append", choices=list(MODES),
                       help="a border mode (default: reflect); repeatable")
        p.add_argument("--channels", action="append", type=int, choices=(1, 2, 3, 4),
                       help="channels of the images (default: 1); repeatable")

    def run(self, args):
        from ..kernels import warmup
        device = select(args.device)
        built = warmup(masks=args.mask or (), sigmas=args.sigma or (),
                       dtypes=args.dtype or ("float32",), modes=args.mode or ("reflect",),
                       channels=args.channels or (1,), device=device)
        print(f"{device}:")
        for line in built:
            print(f"  {line}")
