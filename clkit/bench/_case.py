"""The case contract: one kernel at one size, its variants, its check; and the registry.

A case module (in :mod:`clkit.bench.cases`) defines a :class:`Case` subclass
and registers the cases it makes with :func:`register`; ``clkit bench`` and
the pytest-benchmark suite find them through
:func:`clkit.bench.cases.make_cases`.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .._platform.devices import Device
from .._platform.runtime import runtime
from ._optional import Unavailable, has_cupy, optional, torch_device
from ._sizes import Sizes
from ._timing import Variant

SEED = 20241

#: kernel name -> the makers of its cases (each ``maker(sizes) -> Case``), in table order.
REGISTRY: dict[str, list[Callable[[Sizes], "Case"]]] = {}


def register(kernel: str, *makers: Callable[[Sizes], "Case"]) -> None:
    """Add the cases of ``kernel``: each maker makes one case at the sizes it is given."""
    REGISTRY.setdefault(kernel, []).extend(makers)


def host(x) -> np.ndarray:
    """A result as a numpy array (device arrays are copied home)."""
    if isinstance(x, tuple):
        return tuple(host(v) for v in x)
    return x.get() if hasattr(x, "get") and not isinstance(x, np.ndarray) else np.asarray(x)


def finisher(device: Device):
    return runtime(device).queue.finish


def autotune(torch, dev):
    """Let cuDNN pick its fastest convolution for the shape (during the warm-up), as
    benchmarks of torch do; it does not change results beyond rounding."""
    if dev == "cuda":
        torch.backends.cudnn.benchmark = True


def torch_how(dev):
    return "cuda, cudnn.benchmark" if dev == "cuda" else dev


#: Library calls per run of the ``clkit_call`` row: the call of the ``clkit_kernel`` row (device
#: arrays, ``out=``) in a loop, the queue finished once after it, timed per call; beside the
#: kernels' own time it shows what the host adds when a program calls the library repeatedly.
CALLS = 20


class Case:
    """One kernel at one size, with its baselines.

    A subclass sets the attributes and defines ``_inputs(rng)``, ``_serial()``
    (unless ``serial_key`` is None), one ``_b_<key>()`` per key of
    ``baseline_keys``, and either ``_kernel(device)`` and ``_e2e(device)``
    (the calls of the ``clkit_kernel``, ``clkit_call`` and ``clkit_e2e`` rows) or its own
    :meth:`device_variants` with their keys in ``device_keys``.  Every
    variant's result is checked (:meth:`check`) against the ``reference``
    variant's; a case without a reference measures the machine, not a kernel.
    """

    id = ""
    kernel = ""
    title = ""
    count = 0
    serial_key: str | None = "serial"
    baseline_keys: tuple = ()
    device_keys: tuple = ("clkit_kernel", "clkit_call", "clkit_e2e")
    reference: str | None = "numpy"
    unit = "pixel"
    bytes_per_unit: float | None = None
    bytes_note = ""

    def __init__(self, sizes: Sizes):
        self.sizes = sizes
        self._data = None

    # -- description
    @property
    def nbytes(self) -> float | None:
        return None if self.bytes_per_unit is None else self.bytes_per_unit * self.count

    def describe(self) -> dict:
        return {"id": self.id, "kernel": self.kernel, "title": self.title, "unit": self.unit,
                "count": self.count, "bytes": self.nbytes, "bytes_note": self.bytes_note,
                "reference": self.reference}

    def extra(self) -> dict:
        """Fields this case adds to its record once measured (its inputs still there)."""
        return {}

    # -- inputs, made once
    @property
    def data(self) -> dict:
        if self._data is None:
            self._data = self._inputs(np.random.default_rng(SEED))
        return self._data

    def release(self):
        """Drop the inputs (and whatever the variants keep) to free memory."""
        self._data = None

    # -- variants
    @property
    def variant_keys(self) -> tuple:
        """Every variant's key, in table order (the device ones once per device)."""
        return (self.serial_key,) * (self.serial_key is not None) + self.baseline_keys \
            + self.device_keys

    def serial(self) -> Variant:
        if self.serial_key is None:
            raise Unavailable(f"{self.id} has no serial variant")
        return self._serial()

    def baseline(self, key: str) -> Variant:
        """The baseline ``key``; :class:`Unavailable` says why it cannot run here."""
        if key not in self.baseline_keys:
            raise Unavailable(f"{self.id} has no baseline {key!r}")
        return getattr(self, f"_b_{key}")()

    def device_variants(self, device: Device) -> list:
        """The variants that run on one OpenCL device, in ``device_keys`` order."""
        call = self._kernel(device)

        def loop():
            for _ in range(CALLS - 1):
                call()
            return call()
        return [Variant("clkit_kernel", "clkit kernel", self._kernel(device), clock="events",
                        sync=finisher(device), device=device),
                Variant("clkit_call", "clkit call, device arrays", loop, sync=finisher(device),
                        device=device, scale=1 / CALLS,
                        note=f"{CALLS} calls in a loop, the queue finished after it; per call"),
                Variant("clkit_e2e", "clkit e2e", self._e2e(device), device=device)]

    def variant(self, key: str, device: Device | None = None) -> Variant:
        """The variant ``key`` (on ``device`` for the device ones); or :class:`Unavailable`."""
        if key == self.serial_key:
            return self.serial()
        if key in self.device_keys:
            return next(v for v in self.device_variants(device) if v.key == key)
        return self.baseline(key)

    def variants(self, devices) -> list:
        """Every variant that can run here, in table order; unavailable ones as (key, reason)."""
        out = [] if self.serial_key is None else [self.serial()]
        for key in self.baseline_keys:
            try:
                out.append(self.baseline(key))
            except Unavailable as exc:
                out.append((key, str(exc)))
        for dev in devices:
            out.extend(self.device_variants(dev))
        return out

    def check(self, got, want) -> str | None:
        """None when ``got`` matches the reference ``want``, else what differs."""
        got, want = host(got), host(want)
        if got.shape != want.shape:
            return f"shape {got.shape}, expected {want.shape}"
        scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
        err = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
        return None if err <= 1e-4 * scale else f"max error {err:.3g}"

    # -- helpers for subclasses
    def _needs(self, module: str, what: str):
        mod = optional(module)
        if mod is None:
            raise Unavailable(f"{what} not installed")
        return mod

    def _torch(self):
        torch = self._needs("torch", "torch")
        dev = torch_device()
        sync = torch.cuda.synchronize if dev == "cuda" else None
        return torch, dev, ("cuda" if dev == "cuda" else "wall"), sync

    def _cuda_only(self):
        if torch_device() != "cuda":
            raise Unavailable("needs torch with CUDA")
        return self._torch()

    def _cupy(self):
        if not has_cupy():
            raise Unavailable("needs cupy with a CUDA GPU")
        return optional("cupy")
