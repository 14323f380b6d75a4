"""hello: the classic first OpenCL program."""

from __future__ import annotations

import numpy as np

from .._engine.operation import program, round_up
from .._memory import transfer as _transfer
from .._memory import pools as _memory
from .._platform.devices import select
from .._platform.runtime import runtime


def hello(device=None) -> str:
    """The classic first OpenCL program: the device writes "Hello, World!".

    Each work-item of ``kernels_cl/hello.cl`` writes one character; the host
    reads the characters back.

    Parameters
    ----------
    device : Device or str, optional
        Where to run (default: :func:`clkit.select`).

    Returns
    -------
    str
        ``"Hello, World!"``, as read back from the device.

    Raises
    ------
    DeviceNotFoundError
        ``device`` names no visible device.

    Examples
    --------
    >>> from clkit.kernels import hello
    >>> hello(device="cpu")
    'Hello, World!'
    """
    rt = runtime(select(device))
    text = _memory.empty(rt, 13, np.int8)  # OpenCL char
    program("hello").hello(text, global_size=round_up(text.size, 16), local_size=16,
                           device=rt.device, wait=False)
    return _transfer.download(rt, text).tobytes().decode("ascii")
