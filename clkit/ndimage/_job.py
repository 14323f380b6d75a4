"""One clkit.ndimage call on its device: the input there, and the result's dtype and home.

A call makes a :class:`Job` and runs passes of :mod:`clkit._engine.passes` on it. Numpy
inputs are uploaded (wrapped in place on CPU drivers) and the result comes home into a numpy
array; device arrays stay where they are, and the result is a device array of the same
context, enqueued after the work already queued on the input's queue.
"""

from __future__ import annotations

import numpy as np

from .._engine.checks import is_device_array, require_fp64
from .._engine.dispatch import copy_into, home_device
from .._engine.passes import Work, raw
from .._memory import pools as _memory
from .._memory import transfer as _transfer
from .._memory.transfer import aligned_empty
from .._platform.runtime import after, runtime, runtime_of_array
from ._support import DTYPES, output_dtype


class Job(Work):
    """One clkit.ndimage call on one device: the input there, and the result's dtype and home.

    ``input`` is a numpy array (or anything numpy takes) or a device array; ``output`` is
    scipy's ``output=`` (None, a dtype or an array of the input's shape).
    """

    def __init__(self, name: str, input, output, device, *, out_dtype=None):
        self.name = name
        self.on_device = is_device_array(input)
        if not self.on_device:
            input = np.asarray(input)
            if not input.dtype.isnative:
                input = input.astype(input.dtype.newbyteorder("="))
        self.shape = tuple(input.shape)
        self.in_dtype = check_dtype(name, input.dtype)
        self.dtype, target = output_dtype(name, output if out_dtype is None else out_dtype,
                                          self.in_dtype, self.shape)
        if target is not None and is_device_array(target) is not self.on_device:
            want = "a device array" if self.on_device else "a numpy array"
            raise TypeError(f"{name}: output must be {want} like the input, not "
                            f"{type(target).__name__}")
        self.target = target
        arrays = [input] + ([target] if self.on_device and target is not None else [])
        rt = runtime_of_array(input) if self.on_device and device is None else None
        self.rt = rt if rt is not None and rt.lost is None else \
            runtime(home_device(name, device, arrays))
        self.device = self.rt.device
        if np.dtype(np.float64) in (self.in_dtype, self.dtype):
            require_fp64(name, self.device, "a float64 array")
        self.queue = self.rt.queue
        self.input = input

    # -- arrays on the device ---------------------------------------------------------------

    def source(self):
        """The input on the device, C-contiguous (bool as its bytes).

        The job keeps it until :meth:`finish` has waited for the passes: an upload may wrap
        host memory of its own (an aligned copy of the input), which must outlive the kernels
        that read it, however soon the caller moves on from the array.
        """
        x = self.input
        if self.on_device:
            after(self.queue, x.queue)
            x = _memory.contiguous_device(x)
        else:
            x = _transfer.upload(self.rt, np.ascontiguousarray(x), self.queue)
        self._source = raw(x)
        return self._source

    def empty(self, dtype=None):
        """A device array of the input's shape (the result's dtype unless given)."""
        dtype = np.dtype(self.dtype if dtype is None else dtype)
        return raw(_memory.empty(self.rt, self.shape, dtype, self.queue))

    def result(self):
        """The device array the last pass writes. For numpy calls on a device that shares the
        host's memory, it is the numpy result's own memory: nothing is copied home."""
        if self.on_device:
            return self.empty()
        t = self.target
        # (not an output that overlaps the input, which the kernels still read)
        direct = t is not None and t.flags.c_contiguous and t.dtype == self.dtype and \
            not np.may_share_memory(t, self.input)
        self._host = t if direct else aligned_empty(self.shape, self.dtype)
        return raw(_memory.device_output(self.rt, self._host, self.shape, self.dtype,
                                         self.queue))

    def finish(self, result):
        """The call's return value from ``result`` (a device array of the result's dtype)."""
        result = result.view(self.dtype) if result.dtype != self.dtype else result
        if self.on_device:
            if self.target is None:
                return result
            copy_into(self.target, result)  # (on this queue; the target's waits for it)
            return self.target
        host = _transfer.download(self.rt, result, getattr(self, "_host", None))
        if self.target is None or host is self.target:
            return host
        self.target[...] = host
        return self.target

    def copy(self):
        """The input converted to the result's dtype (a filter that leaves every axis alone)."""
        if self.on_device:
            return self.finish(raw(self.input.astype(self.dtype)))
        host = np.array(self.input, dtype=self.dtype)
        if self.target is None:
            return host
        self.target[...] = host
        return self.target


def check_dtype(name: str, dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        raise NotImplementedError(f"{name}: complex input ({dtype}) is not supported by "
                                  "clkit.ndimage; filter the real and imaginary parts apart")
    if dtype not in DTYPES:
        raise RuntimeError(f"{name}: array type {dtype} not supported; use bool, an integer "
                           "type or float16/32/64")
    return dtype
