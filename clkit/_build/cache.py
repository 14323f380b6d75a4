"""The on-disk cache of compiled program binaries.

One file per (expanded source, build options, device, driver): a short
header with a checksum of the binary and the kernels' signatures, then the
binary (none for a driver that caches its builds itself: the entry then says
that the program was built and what its kernels take).  Files are written to
a temporary name and renamed into place, so a reader sees a whole entry or
none, also with several processes building the same program at once.  An
entry that fails its checksum or that the driver refuses is rebuilt and
overwritten.

``CLKIT_CACHE_DIR`` moves the cache (default ``$XDG_CACHE_HOME/clkit`` or
``~/.cache/clkit``); ``CLKIT_CACHE=0`` turns it off.  Where the user's cache
folder cannot be written (a read-only home, ``HOME=/nonexistent`` in a
container), :func:`clkit._files.make_cache_home_usable` moves it, for the
process, to the temp folder, with a warning.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import warnings
from pathlib import Path

from .._files import atomic_write, cache_home

_MAGIC = b"CLKITBIN"
_FORMAT = 1
_warned: set[str] = set()


def cache_dir() -> Path | None:
    """The cache folder, or ``None`` when ``CLKIT_CACHE`` turns the cache off."""
    if os.environ.get("CLKIT_CACHE", "1").strip().lower() in ("0", "off", "no", "false"):
        return None
    configured = os.environ.get("CLKIT_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    return cache_home() / "clkit"


def key(source_text: str, options: tuple, device) -> str:
    """The cache key: everything that can change the compiled binary."""
    cl_device = device.cl_device
    parts = [str(_FORMAT), source_text, "\0".join(options), device.name, device.platform,
             cl_device.platform.version, device.version, device.driver]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def has(entry_key: str) -> bool:
    """Whether an entry exists (it may still turn out broken when loaded)."""
    folder = cache_dir()
    return folder is not None and (folder / f"{entry_key}.bin").is_file()


def load(entry_key: str) -> tuple[bytes, dict] | None:
    """The binary and metadata stored under a key; ``None`` if absent or broken."""
    folder = cache_dir()
    if folder is None:
        return None
    path = folder / f"{entry_key}.bin"
    try:
        if not path.is_file():  # (nothing else: reading a pipe of that name would wait forever)
            return None
        data = path.read_bytes()
    except OSError:
        return None
    try:
        if not data.startswith(_MAGIC):
            return None
        (header_len,) = struct.unpack_from("<Q", data, len(_MAGIC))
        start = len(_MAGIC) + 8
        meta = json.loads(data[start:start + header_len])
        binary = data[start + header_len:]
        if hashlib.sha256(binary).hexdigest() != meta.get("sha256"):
            return None
    except (ValueError, struct.error, UnicodeDecodeError):
        return None
    return binary, meta


def store(entry_key: str, binary: bytes, meta: dict) -> None:
    """Write an entry atomically; a cache that cannot be written is skipped with a warning."""
    folder = cache_dir()
    if folder is None:
        return
    meta = dict(meta, sha256=hashlib.sha256(binary).hexdigest())
    header = json.dumps(meta).encode()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with atomic_write(folder / f"{entry_key}.bin") as f:
            f.write(_MAGIC + struct.pack("<Q", len(header)) + header + binary)
    except OSError as exc:
        if str(folder) not in _warned:
            _warned.add(str(folder))
            warnings.warn(f"clkit: cannot write the kernel cache in {folder} "
                          f"({exc.strerror or exc}); "
                          "programs will be compiled each run. Set CLKIT_CACHE_DIR to a "
                          "writable folder or CLKIT_CACHE=0", RuntimeWarning, stacklevel=3)
