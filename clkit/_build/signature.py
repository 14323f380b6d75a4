"""Kernel signatures: what each parameter of a kernel accepts.

The driver reports each parameter's name, type name, address space and
qualifiers (programs are built with ``-cl-kernel-arg-info``); this module
turns that into the numpy dtype and vector width that the launch API checks
arguments against.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

SCALAR_DTYPES = {
    "char": np.int8, "uchar": np.uint8, "short": np.int16, "ushort": np.uint16,
    "int": np.int32, "uint": np.uint32, "long": np.int64, "ulong": np.uint64,
    "float": np.float32, "double": np.float64, "half": np.float16,
}
_ALIASES = {
    "unsigned char": "uchar", "signed char": "char", "unsigned short": "ushort",
    "unsigned int": "uint", "unsigned": "uint", "unsigned long": "ulong",
}
_VECTOR = re.compile(r"(char|uchar|short|ushort|int|uint|long|ulong|float|double|half)"
                     r"(2|3|4|8|16)?")
_ADDRESS = {
    cl.kernel_arg_address_qualifier.GLOBAL: "global",
    cl.kernel_arg_address_qualifier.LOCAL: "local",
    cl.kernel_arg_address_qualifier.CONSTANT: "constant",
    cl.kernel_arg_address_qualifier.PRIVATE: "private",
}


@dataclass(frozen=True)
class Param:
    """One kernel parameter.

    ``dtype`` is the numpy type of one scalar element (``float32`` for
    ``float4``), ``width`` the vector width (1 for scalars), ``None`` dtype
    for types clkit does not check (images, samplers, structs, typedefs).
    """

    name: str
    type_name: str
    address: str
    const: bool
    pointer: bool
    dtype: np.dtype | None
    width: int

    @property
    def declared(self) -> str:
        """The declaration as OpenCL C spells it, for messages."""
        space = "" if self.address == "private" else f"__{self.address} "
        const = "const " if self.const else ""
        star = "*" if self.pointer else ""
        return f"{space}{const}{self.type_name}{star} {self.name}"

    @property
    def stride(self) -> int:
        """Scalars per element in memory (a ``float3`` occupies 4 floats)."""
        return 4 if self.width == 3 else self.width


_TYPEDEF = re.compile(r"\btypedef\s+((?:unsigned\s+|signed\s+)?\w+)\s+(\w+)\s*;")


def typedefs(text: str) -> dict:
    """The simple typedefs of a source (``typedef float real;``): each new name and its type."""
    return {new: " ".join(old.split()) for old, new in _TYPEDEF.findall(text)}


def parse_type(type_name: str, address_bits: int = 64,
               aliases: dict | None = None) -> tuple[str, bool, np.dtype | None, int]:
    """Split a type name into (base name, pointer?, element dtype or None, width); ``aliases``
    (:func:`typedefs`) says what the names a source made up stand for."""
    name = type_name.strip()
    pointer = name.endswith("*")
    name = name.rstrip("*").strip()
    for word in ("const", "volatile", "restrict", "__restrict", "__global", "__local",
                 "__constant", "global", "local", "constant"):
        name = re.sub(rf"\b{word}\b", "", name)
    base = name = " ".join(name.split())
    for _ in range(8):  # a typedef of a typedef ...
        name = (aliases or {}).get(name, name)
    name = _ALIASES.get(name, name)
    if name in ("size_t", "uintptr_t"):
        return base, pointer, np.dtype(np.uint64 if address_bits == 64 else np.uint32), 1
    if name in ("ptrdiff_t", "intptr_t"):
        return base, pointer, np.dtype(np.int64 if address_bits == 64 else np.int32), 1
    m = _VECTOR.fullmatch(name)
    if not m:
        return base, pointer, None, 1
    return base, pointer, np.dtype(SCALAR_DTYPES[m.group(1)]), int(m.group(2) or 1)


def from_arg_info(info: list, address_bits: int, aliases: dict | None = None) -> list[Param]:
    """Params from the stored tuples (name, type name, address, type qualifier)."""
    params = []
    for name, type_name, address, qualifier in info:
        base, pointer, dtype, width = parse_type(type_name, address_bits, aliases)
        params.append(Param(
            name=name, type_name=base, address=address,
            const=bool(qualifier & cl.kernel_arg_type_qualifier.CONST) or address == "constant",
            pointer=pointer or address in ("global", "local", "constant") and
            not base.startswith(("image", "sampler", "pipe")),
            dtype=dtype, width=width))
    return params


def query_arg_info(kernel: cl.Kernel) -> list:
    """The raw per-parameter tuples the driver reports, as stored in the disk cache."""
    info = []
    for i in range(kernel.num_args):
        get = kernel.get_arg_info
        info.append((get(i, cl.kernel_arg_info.NAME), get(i, cl.kernel_arg_info.TYPE_NAME),
                     _ADDRESS.get(get(i, cl.kernel_arg_info.ADDRESS_QUALIFIER), "private"),
                     int(get(i, cl.kernel_arg_info.TYPE_QUALIFIER))))
    return info
