"""vector_add: float32 a + b, against numpy, torch and cupy."""

from __future__ import annotations

import math

import numpy as np

from ... import kernels
from ..._memory.array import empty
from ..._memory.transfer import to_device
from .._case import Case, host, register
from .._references import serial_add
from .._timing import Variant


class VectorAddCase(Case):
    id = kernel = "vector_add"
    baseline_keys = ("numpy", "torch", "torch_e2e", "cupy")
    unit = "element"
    bytes_per_unit = 12
    bytes_note = "12 B/element: 8 read, 4 written"

    def __init__(self, sizes):
        super().__init__(sizes)
        self.count = sizes.vector
        self.title = f"vector_add float32 {self.count:,} elements (2^{math.log2(self.count):g})"

    def _inputs(self, rng):
        return {"a": rng.random(self.count, dtype=np.float32),
                "b": rng.random(self.count, dtype=np.float32)}

    def _serial(self):
        n = min(self.count, 1 << 18)
        a, b = self.data["a"][:n].tolist(), self.data["b"][:n].tolist()
        return Variant("serial", "serial Python", lambda: serial_add(a, b),
                       scale=self.count / n, note=f"{n:,} elements")

    def _b_numpy(self):
        a, b = self.data["a"], self.data["b"]
        out = np.empty_like(a)
        return Variant("numpy", "numpy add(out=)", lambda: np.add(a, b, out=out))

    def _b_torch(self):
        torch, dev, clock, sync = self._torch()
        a, b = (torch.from_numpy(self.data[k]).to(dev) for k in "ab")
        out = torch.empty_like(a)
        return Variant("torch", f"torch.add(out=) ({dev})", lambda: torch.add(a, b, out=out),
                       clock=clock, sync=sync)

    def _b_torch_e2e(self):
        torch, dev, _, sync = self._cuda_only()
        a, b = self.data["a"], self.data["b"]
        return Variant("torch_e2e", "torch e2e (cuda, pageable)",
                       lambda: torch.add(torch.from_numpy(a).to(dev), torch.from_numpy(b).to(dev))
                       .cpu().numpy(), sync=sync)

    def _b_cupy(self):
        cupy = self._cupy()
        a, b = cupy.asarray(self.data["a"]), cupy.asarray(self.data["b"])
        out = cupy.empty_like(a)
        return Variant("cupy", "cupy.add(out=) (cuda)", lambda: cupy.add(a, b, out=out),
                       clock="cuda", sync=cupy.cuda.runtime.deviceSynchronize)

    def _kernel(self, device):
        a, b = (to_device(self.data[k], device=device) for k in "ab")
        out = empty(a.shape, np.float32, device=device)
        return lambda: kernels.vector_add(a, b, out=out, device=device)

    def _e2e(self, device):
        a, b = self.data["a"], self.data["b"]
        return lambda: kernels.vector_add(a, b, device=device)

    def check(self, got, want):
        got, want = host(got), host(want)
        return None if np.array_equal(got, want) else "differs from numpy"


register("vector_add", VectorAddCase)
