"""transfers: copies between host and device and within each, the bounds of numpy in/out."""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from ..._memory.array import _size, empty
from ..._memory.transfer import to_device
from ..._platform.runtime import runtime
from .._case import Case, register
from .._timing import Variant


class TransfersCase(Case):
    """Copies between host and device, and within a device: what bounds numpy in/out calls.

    H2D and D2H count the bytes once; a copy within one memory counts them
    twice (read and write), as kernel bandwidth does.
    """

    id = kernel = "transfers"
    baseline_keys = ("numpy_copy", "torch_copy", "torch_h2d_pinned", "torch_d2h_pinned",
                     "torch_h2d_pageable", "torch_d2h_pageable")
    serial_key = None
    device_keys = ("clkit_h2d", "clkit_d2h", "clkit_copy", "opencl_h2d_pinned",
                   "opencl_d2h_pinned")
    reference = None
    unit = "element"
    bytes_per_unit = 4
    bytes_note = "float32; H2D/D2H count bytes once, copies within a memory twice"

    def __init__(self, sizes):
        super().__init__(sizes)
        self.count = sizes.vector
        self.title = f"transfers of {_size(self.count * 4)} (float32 x {self.count:,})"

    def _inputs(self, rng):
        return {"host": rng.random(self.count, dtype=np.float32)}

    def _b_numpy_copy(self):
        src = self.data["host"]
        dst = np.empty_like(src)
        return Variant("numpy_copy", "numpy copyto (host memory)", lambda: np.copyto(dst, src),
                       nbytes=2 * src.nbytes)

    def _b_torch_copy(self):
        torch, dev, clock, sync = self._torch()
        src = torch.from_numpy(self.data["host"]).to(dev)
        dst = torch.empty_like(src)
        return Variant("torch_copy", f"torch copy_ within {dev}", lambda: dst.copy_(src),
                       clock=clock, sync=sync, nbytes=2 * src.numel() * 4)

    def _torch_h2d(self, pinned):
        torch, dev, clock, sync = self._cuda_only()
        src = torch.from_numpy(self.data["host"])
        if pinned:
            src = src.pin_memory()
        dst = torch.empty(src.shape, dtype=src.dtype, device=dev)
        kind = "pinned" if pinned else "pageable"
        return Variant(f"torch_h2d_{kind}", f"torch H2D {kind}",
                       lambda: dst.copy_(src, non_blocking=pinned), clock=clock, sync=sync)

    def _torch_d2h(self, pinned):
        torch, dev, clock, sync = self._cuda_only()
        src = torch.from_numpy(self.data["host"]).to(dev)
        dst = torch.empty(src.shape, dtype=src.dtype, pin_memory=pinned)
        kind = "pinned" if pinned else "pageable"
        return Variant(f"torch_d2h_{kind}", f"torch D2H {kind}",
                       lambda: dst.copy_(src, non_blocking=pinned), clock=clock, sync=sync)

    def _b_torch_h2d_pinned(self):
        return self._torch_h2d(True)

    def _b_torch_d2h_pinned(self):
        return self._torch_d2h(True)

    def _b_torch_h2d_pageable(self):
        return self._torch_h2d(False)

    def _b_torch_d2h_pageable(self):
        return self._torch_d2h(False)

    def device_variants(self, device) -> list:
        """clkit's own transfers on one device: to_device, get, a device copy, and raw pinned."""
        rt = runtime(device)
        host = self.data["host"]
        back = np.empty_like(host)
        dev_a = to_device(host, device=device)
        dev_b = empty(host.shape, host.dtype, device=device)
        sync = rt.queue.finish
        out = [
            Variant("clkit_h2d", "clkit .set() H2D", lambda: dev_b.set(host),
                    sync=sync, device=device),
            Variant("clkit_d2h", "clkit .get() D2H", lambda: dev_a.get(ary=back),
                    sync=sync, device=device),
            Variant("clkit_copy", "OpenCL copy within device (event)",
                    lambda: cl.enqueue_copy(rt.queue, dev_b.base_data, dev_a.base_data),
                    clock="event", sync=sync, device=device, nbytes=2 * host.nbytes),
        ]
        # Raw OpenCL through a pinned (ALLOC_HOST_PTR, mapped) host buffer: what the hardware
        # gives the library's staging path.
        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR
        pinned_buf = cl.Buffer(rt.context, flags, host.nbytes)
        pinned, _ = cl.enqueue_map_buffer(rt.queue, pinned_buf,
                                          cl.map_flags.READ | cl.map_flags.WRITE, 0,
                                          host.shape, host.dtype)
        pinned[...] = host
        keep = (pinned_buf, pinned)  # the buffer stays mapped while the variants live

        def h2d():
            return cl.enqueue_copy(rt.queue, dev_b.base_data, keep[1], is_blocking=False)

        def d2h():
            return cl.enqueue_copy(rt.queue, keep[1], dev_a.base_data, is_blocking=False)

        out.append(Variant("opencl_h2d_pinned", "OpenCL H2D pinned (event)", h2d,
                           clock="event", sync=sync, device=device))
        out.append(Variant("opencl_d2h_pinned", "OpenCL D2H pinned (event)", d2h,
                           clock="event", sync=sync, device=device))
        return out


register("transfers", TransfersCase)
