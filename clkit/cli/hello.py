"""``clkit hello``: the device writes "Hello, World!"."""

from __future__ import annotations

from .. import kernels
from .._platform.devices import select
from ._command import Command


class Hello(Command):
    def run(self, args):
        print(kernels.hello(device=select(args.device)))
