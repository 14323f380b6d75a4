"""Kernel sources: finding them, expanding their includes, mapping lines back, and what
their kernels' parameters accept.

clkit expands ``#include`` itself rather than passing ``-I`` to the driver,
for two reasons: the disk cache can then key on the whole text the compiler
sees, and a compiler message about line N of the expanded text can be
mapped back to the file and line the user wrote (drivers disagree on
honouring ``#line``: PoCL does, Oclgrind does not).

Kernel signatures: the driver reports each parameter's name, type name,
address space and qualifiers (programs are built with ``-cl-kernel-arg-info``);
:func:`from_arg_info` turns that into the numpy dtype and vector width that the
launch API checks arguments against (with the source's ``typedef`` names).
"""

from __future__ import annotations

import errno
import hashlib
import importlib.resources
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyopencl as cl

_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
_PRAGMA_ONCE = re.compile(r"^\s*#\s*pragma\s+once\b", re.M)
_KERNEL_NAME = re.compile(r"\b(?:__)?kernel\s+(?:__attribute__\s*\(\(.*?\)\)\s*)?void\s+(\w+)\s*\(")


@lru_cache(maxsize=1)
def library_dir() -> Path:
    """The folder of the library's ``.cl`` sources.

    Installed (editable or not), it is the package data ``clkit.kernels_cl``;
    imported from a source checkout, it is ``kernels_cl/`` beside the
    package.  Never looked up through the current directory.
    """
    try:
        resource = importlib.resources.files("clkit.kernels_cl")
        for candidate in (Path(str(resource)), *map(Path, getattr(resource, "_paths", ()))):
            if candidate.is_dir() and any(candidate.glob("*.cl")):
                return candidate
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parents[2] / "kernels_cl"


def library_kernels() -> list[str]:
    """The names of the library's kernel sources (``grayscale``, ...)."""
    return sorted(p.stem for p in library_dir().glob("*.cl"))


def resolve(source) -> Path:
    """The ``.cl`` file that ``source`` names: a library kernel or a path."""
    path = Path(source)
    if path.is_file():
        return path.resolve()
    if isinstance(source, str) and re.fullmatch(r"[A-Za-z_]\w*", source):
        candidate = library_dir() / f"{source}.cl"
        if candidate.is_file():
            return candidate
        raise FileNotFoundError(
            errno.ENOENT, f"{source!r} is neither a library kernel ({', '.join(library_kernels())}) "
            "nor an existing .cl file", source)
    raise FileNotFoundError(errno.ENOENT, f"no kernel source file {str(path)!r}", str(path))


@dataclass
class Source:
    """A kernel source with its includes expanded.

    ``origin`` names it in messages (a path, or ``"<string>"``);
    ``line_map[i]`` is the (file, line) of line ``i + 1`` of ``text``.
    """

    text: str
    origin: str
    line_map: list = field(repr=False)
    files: dict = field(repr=False)  # file name -> its lines, to quote in errors

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    def kernel_names(self) -> list[str]:
        """Kernel names found by reading the text (macros are not expanded)."""
        return list(dict.fromkeys(_KERNEL_NAME.findall(self.text)))

    def where(self, line: int) -> tuple[str, int]:
        """The original (file, line) of a line of the expanded text."""
        if 1 <= line <= len(self.line_map):
            return self.line_map[line - 1]
        return self.origin, line


def expand(text: str, origin: str, base_dir: Path | None) -> Source:
    """Inline every ``#include`` that resolves to a file.

    ``"name"`` is looked up beside the including file, then in the library
    folder; ``<name>`` in the library folder.  An include that resolves to
    nothing is left for the compiler to report.  A file already being
    expanded is not expanded again inside itself (an include cycle guarded by
    ``#ifndef`` would otherwise never end), nor a ``#pragma once`` file twice.
    """
    out, line_map, files = [], [], {}
    once: set[Path] = set()

    def emit(body: str, name: str, folder: Path | None, stack: tuple):
        lines = body.splitlines()
        files[name] = lines
        for number, line in enumerate(lines, 1):
            m = _INCLUDE.match(line)
            target = _find(m.group(2), m.group(1), folder) if m else None
            if target is None:
                out.append(line)
                line_map.append((name, number))
                continue
            if target in stack or target in once:
                continue
            included = target.read_text()
            if _PRAGMA_ONCE.search(included):
                once.add(target)
            emit(included, str(target), target.parent, stack + (target,))

    emit(text, origin, base_dir, (Path(origin).resolve(),) if base_dir else ())
    return Source("\n".join(out) + "\n", origin, line_map, files)


def _find(name: str, kind: str, folder: Path | None) -> Path | None:
    places = ([folder] if kind == '"' and folder is not None else []) + [library_dir()]
    for place in places:
        candidate = place / name
        if candidate.is_file():
            return candidate.resolve()
    return None


def load_file(path: Path) -> Source:
    """Read and expand one ``.cl`` file."""
    return expand(path.read_text(), str(path), path.parent)


# -- kernel signatures --------------------------------------------------------------------------

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
