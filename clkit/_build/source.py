"""Kernel sources: finding them, expanding their includes, mapping lines back.

clkit expands ``#include`` itself rather than passing ``-I`` to the driver,
for two reasons: the disk cache can then key on the whole text the compiler
sees, and a compiler message about line N of the expanded text can be
mapped back to the file and line the user wrote (drivers disagree on
honouring ``#line``: PoCL does, Oclgrind does not).
"""

from __future__ import annotations

import errno
import hashlib
import importlib.resources
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

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
