"""Programs: a kernel source with its build options, compiled lazily per device."""

from __future__ import annotations

import difflib
import re
import threading
from pathlib import Path

from .._build.build import Built, build
from .._build.source import Source, expand, load_file, resolve
from .._errors import ArgumentTypeError, ArgumentValueError
from .._platform.devices import select
from .kernel import Kernel


class Program:
    """An OpenCL program: one source, one set of build options.

    It is compiled the first time one of its kernels runs on a device, once
    per device, and the binary is kept in memory and in the disk cache (see
    ``clkit._build.build``).  Make one with :func:`clkit.load` or
    :meth:`Program.from_source`.

    Attributes
    ----------
    origin : str
        The source file's path, or the name given to a source string.
    options : tuple of str
        The build options, defines first.
    device : Device, str or None
        Where kernels run when a launch names no device.

    Examples
    --------
    >>> import numpy as np, clkit
    >>> program = clkit.Program.from_source(
    ...     "__kernel void square(__global float* a)"
    ...     "{ size_t i = get_global_id(0); a[i] *= a[i]; }", device="cpu")
    >>> program.kernel_names
    ['square']
    >>> a = np.arange(3, dtype=np.float32)
    >>> _ = program.square(a)
    >>> a
    array([0., 1., 4.], dtype=float32)
    """

    def __init__(self, source: Source, *, device=None, defines=None, options=()):
        self.source = source
        self.origin = source.origin
        self.device = device
        self.options = _define_options(defines) + _option_tuple(options)
        self._kernels: dict[str, Kernel] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_source(cls, code: str, *, device=None, defines=None, options=(),
                    name: str = "<string>") -> "Program":
        """A program from OpenCL C source text.

        Parameters
        ----------
        code : str
            The source.  ``#include "x.h"`` finds the library's headers.
        device, defines, options
            As for :func:`clkit.load`.
        name : str
            How messages name this source.

        Returns
        -------
        Program

        Examples
        --------
        >>> import numpy as np, clkit
        >>> prg = clkit.Program.from_source(
        ...     "__kernel void twice(__global float* x) { x[get_global_id(0)] *= 2; }")
        >>> x = np.ones(3, np.float32)
        >>> _ = prg.twice(x, device="cpu")
        >>> x
        array([2., 2., 2.], dtype=float32)
        """
        if not isinstance(code, str):
            raise ArgumentTypeError(f"Program.from_source takes the source as str, not "
                                    f"{type(code).__name__}")
        return cls(expand(code, name, None), device=device, defines=defines, options=options)

    def build(self, device=None) -> Built:
        """Compile for a device now (normally done on first launch).

        Returns
        -------
        Built
            With ``log`` (the compiler's messages), ``origin`` (``"compiled"``,
            ``"disk"`` or ``"memory"``) and ``kernel_names``.

        Raises
        ------
        BuildError
            With the compiler's log mapped to the original files and lines.
        """
        dev = select(device if device is not None else self.device)
        return build(self.source, self.options, dev)

    @property
    def kernel_names(self) -> list[str]:
        """The kernels in this program, as the compiler found them (macros expanded, kernels
        in ``#if 0`` or comments left out): it is built for its device if it was not yet."""
        return self.build().kernel_names

    def kernel(self, name: str) -> Kernel:
        """The kernel ``name``; the same object every time."""
        kernel = self._kernels.get(name)
        if kernel is None:
            # A name the text declares needs no build yet; any other is looked up in one
            # (a kernel made by a macro), and the build has the list a mistake is told.
            if name not in self.source.kernel_names() and name not in self.kernel_names:
                close = difflib.get_close_matches(name, self.kernel_names, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise AttributeError(f"{self.origin} has no kernel {name!r}; {hint}its kernels "
                                     f"are: {', '.join(self.kernel_names)}")
            with self._lock:
                kernel = self._kernels.setdefault(name, Kernel(self, name))
        return kernel

    def __getattr__(self, name: str) -> Kernel:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.kernel(name)

    def __getitem__(self, name: str) -> Kernel:
        try:
            return self.kernel(name)
        except AttributeError as exc:
            raise KeyError(str(exc)) from None

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.source.kernel_names()))

    def __repr__(self):
        return f"<clkit.Program {self.origin} {' '.join(self.options)}>".replace("  ", " ")


def load(source, *, device=None, defines=None, options=()) -> Program:
    """Load a kernel source.

    Parameters
    ----------
    source : str or path
        A library kernel's name (``"grayscale"`` is ``kernels_cl/grayscale.cl``)
        or the path of any ``.cl`` file.  ``#include`` finds files beside it
        and the library's headers.
    device : Device or str, optional
        The device its kernels run on when a launch names none.
    defines : dict, optional
        ``{"T": "float"}`` becomes ``-D T=float``; a value of ``None`` or
        ``True`` defines the name alone.
    options : sequence of str or str, optional
        More build options, e.g. ``["-cl-fast-relaxed-math"]``.

    Returns
    -------
    Program
        Compiled on first launch, once per device, and cached.

    Raises
    ------
    FileNotFoundError
        The name is neither a library kernel nor an existing file.

    Examples
    --------
    >>> import numpy as np, clkit
    >>> prg = clkit.load("vector_add")
    >>> prg.kernel_names
    ['vector_add']
    """
    if not isinstance(source, (str, Path)):
        raise ArgumentTypeError(f"load takes a kernel name or a path, not {type(source).__name__}")
    return Program(load_file(resolve(source)), device=device, defines=defines, options=options)


def _define_options(defines) -> tuple:
    if not defines:
        return ()
    if not isinstance(defines, dict):
        raise ArgumentTypeError(f"defines must be a dict such as {{'T': 'float'}}, not "
                                f"{type(defines).__name__}")
    out = []
    for name, value in defines.items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise ArgumentValueError(f"define name {name!r} is not a C identifier")
        if value is None or value is True:
            out.append(f"-D{name}")
        elif isinstance(value, (bool, list, dict, set, tuple)):
            raise ArgumentTypeError(f"define {name}: use a string or a number, not {value!r}")
        else:
            text = repr(value) if isinstance(value, float) else str(value)
            if any(c.isspace() for c in text):
                raise ArgumentValueError(f"define {name}={text!r}: a value with spaces cannot "
                                         "be passed to the compiler; use a name or a number")
            out.append(f"-D{name}={text}")
    return tuple(out)


def _option_tuple(options) -> tuple:
    if isinstance(options, str):
        return tuple(options.split())
    return tuple(str(o) for o in options)
