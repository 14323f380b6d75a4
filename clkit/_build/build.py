"""Compiling a source for one device, with a memory cache and the disk cache.

A build is keyed by the expanded source, the options and the device; the
first request compiles (or loads the binary from disk), later ones, from any
thread or :class:`Program` object, get the same build.

The disk cache of compiled program binaries: one file per (expanded source,
build options, device, driver): a short header with a checksum of the binary
and the kernels' signatures, then the binary (none for a driver that caches
its builds itself: the entry then says that the program was built and what
its kernels take).  Files are written to a temporary name and renamed into
place, so a reader sees a whole entry or none, also with several processes
building the same program at once.  An entry that fails its checksum or that
the driver refuses is rebuilt and overwritten.

``CLKIT_CACHE_DIR`` moves the cache (default ``$XDG_CACHE_HOME/clkit`` or
``~/.cache/clkit``); ``CLKIT_CACHE=0`` turns it off.  Where the user's cache
folder cannot be written (a read-only home, ``HOME=/nonexistent`` in a
container), :func:`clkit._files.make_cache_home_usable` moves it, for the
process, to the temp folder, with a warning.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import re
import resource
import signal
import struct
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import pyopencl as cl

from .._errors import BuildError, caller_outside_clkit
from .._files import atomic_write, cache_home
from .._platform.devices import Device, debug_mode
from .._platform.runtime import runtime, simulator_turn
from .source import Source, from_arg_info, library_dir, query_arg_info, typedefs

# "file:12:5:" as clang-based compilers (PoCL, Oclgrind, NVIDIA) print locations.
_LOCATION = re.compile(r"(?P<file>[^\s:]*):(?P<line>\d+):(?P<col>\d+):")
_ARG_INFO = "-cl-kernel-arg-info"
# Lines of a build log that report progress, not a problem: Intel's CPU runtime logs every build
# ("Compilation started", ..., "Kernel "k" was successfully vectorized (16)", "Done."), NVIDIA's
# says of every kernel that it overrides a noinline attribute the source never asked for.
_PROGRESS = re.compile(r"(Compilation|Linking|Device build) (started|done)|Done\.|"
                       r"Options used by backend compiler:.*|remark: .*|"
                       r"Kernel \"\w+\" was (successfully vectorized \(\d+\)|not vectorized)|"
                       r"\(\): Warning: Function \w+ is a kernel, so overriding noinline "
                       r"attribute\. The function may be inlined when called\.")


@dataclass
class Built:
    """A program compiled for one device.

    ``origin`` is ``"compiled"``, ``"disk"`` (binary from the disk cache) or
    ``"memory"`` (an earlier build in this process); ``log`` the compiler's
    output; ``seconds`` how long compiling or loading took.
    """

    program: object  # the unwrapped pyopencl program
    device: Device
    signatures: dict
    log: str
    origin: str
    seconds: float

    @property
    def kernel_names(self) -> list[str]:
        return list(self.signatures)


def build(source: Source, options: tuple, device: Device) -> Built:
    """The build of ``source`` with ``options`` for ``device``, compiled at most once per
    context (the device's runtime keeps it; a lost context's builds go with it, and the disk
    cache makes them again fast)."""
    rt = runtime(device)
    k = (source.digest, options)
    builds = rt.memo(build)
    done = builds.get(k)
    if done is not None:
        return done
    lock = rt.memo(_compile).make(k, threading.Lock)  # one compile of each at a time
    # While a simulator is in use, builds take its turn (Oclgrind's clang crashes beside another
    # compiler); the turn first, as a launch on the simulator that builds holds it already.
    with simulator_turn(device if device.simulator else None), lock:
        done = builds.get(k)
        if done is None:
            done = _compile(source, options, rt)
            builds.make(k, lambda: Built(done.program, device, done.signatures, done.log,
                                         "memory", 0.0))
        return done


def available(source: Source, options: tuple, device: Device) -> bool:
    """Whether a build is at hand without compiling: in memory, or in the disk cache."""
    if (source.digest, options) in runtime(device).memo(build):
        return True
    return cache_has(cache_key(source.text, options + (_ARG_INFO,), device))


def _compile(source: Source, options: tuple, rt) -> Built:
    device = rt.device
    full = options + (_ARG_INFO,)
    opts = " ".join(full)
    entry = cache_key(source.text, full, device)
    start = time.perf_counter()
    # Under CLKIT_DEBUG=oclgrind the simulator compiles from source: given a cached binary, it
    # could not quote the source lines in its reports.
    debugging = device.simulator and debug_mode() == "oclgrind"
    cached = None if debugging else cache_load(entry)
    library = _in_library(source)
    if _driver_keeps_builds(device):
        _check_room_to_build(source, options, device)
    if cached is not None:
        binary, meta = cached
        try:
            if binary:
                prg = cl._cl._Program(rt.context, [device.cl_device], [binary])
                prg._build(options=opts.encode(), devices=[device.cl_device])
            else:  # the driver keeps the build in a cache of its own (_driver_keeps_builds)
                prg = cl._cl._Program(rt.context, source.text)
                _source_build(prg, opts, device, [])
            _sigxfsz_ignored_again()
            signatures = _signatures(meta["kernels"], source, device)
            return Built(prg, device, signatures, meta.get("log", ""), "disk",
                         time.perf_counter() - start)
        except (cl.Error, KeyError, TypeError, ValueError):
            pass  # a binary the driver refuses is rebuilt from source and overwritten below
    prg = cl._cl._Program(rt.context, source.text)
    held = []
    try:
        _source_build(prg, opts, device, held)
    except cl.Error as exc:
        raise _build_error(source, options, device, prg, exc) from exc
    finally:
        _sigxfsz_ignored_again()
    log = "\n".join(filter(None, [_log(prg, device)] + held))
    messages = "\n".join(line for line in log.splitlines()
                         if not _PROGRESS.fullmatch(line.strip()))
    if messages and not library:
        # The library's logs are the compiler declining to unroll the loops of large masks.
        warnings.warn(f"{source.origin} built for {device} with compiler messages:\n"
                      f"{_mapped(source, messages)[0]}", cl.CompilerWarning,
                      stacklevel=caller_outside_clkit())
    # NVIDIA's OpenCL crashes pyopencl when asked for the names of a program without kernels.
    names = (prg.get_info(cl.program_info.KERNEL_NAMES).split(";")
             if prg.get_info(cl.program_info.NUM_KERNELS) else [])
    infos = {name: query_arg_info(cl.Kernel(prg, name)) for name in names}
    binary = b"" if _driver_keeps_builds(device) else prg.get_info(cl.program_info.BINARIES)[0]
    cache_store(entry, binary, {"kernels": infos, "log": log, "options": opts})
    return Built(prg, device, _signatures(infos, source, device), log, "compiled",
                 time.perf_counter() - start)


def _signatures(infos: dict, source: Source, device: Device) -> dict:
    """Each kernel's parameters, from the driver's argument info and the source's typedefs."""
    aliases = typedefs(source.text)
    return {name: from_arg_info(info, device.cl_device.address_bits, aliases)
            for name, info in infos.items()}


def _source_build(prg, opts: str, device: Device, held: list) -> None:
    """Build ``prg``, made from a source's text (the driver's output on stderr caught in
    ``held``).

    The unwrapped program object and build: pyopencl.Program would consult pyopencl's own
    cache and, after a failure, rebuild when asked for the log; and its build warns of any
    log in terms of a temporary file. clkit raises or warns itself, with the user's lines.
    """
    with _driver_output_held(held):
        prg._build(options=opts.encode(), devices=[device.cl_device])


# The largest file PoCL writes to build a program, from its cache or anew, stays well under
# this: the preprocessed source (tens of kB), the program's LLVM bitcode and kernels (hundreds
# of kB).  The free space it needs is more, with its temporary files: with 1.1 MB free, a build
# of the convolution program ended the process (status 1, nothing said).
_LARGEST_FILE = 1 << 20
_ROOM_TO_BUILD = 16 << 20


def _check_room_to_build(source: Source, options: tuple, device: Device) -> None:
    """Refuse, with the reason, a build that PoCL could not write its files for.

    PoCL writes temporary files into its cache folder for every build, also one its cache
    answers; where it cannot (a full disk, a limit on file sizes) its compiler ends the
    process with status 1 and nothing said.
    """
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    why = None
    if limit != resource.RLIM_INFINITY and limit < _LARGEST_FILE:
        why = f"this process may write files of at most {limit} bytes (RLIMIT_FSIZE)"
    else:
        folder = Path(os.environ.get("POCL_CACHE_DIR") or cache_home() / "pocl")
        try:  # made again if it went (a cleaner of old files): PoCL only makes it as it loads
            folder.mkdir(parents=True, exist_ok=True)
            stat = os.statvfs(folder)
        except OSError as exc:
            stat, why = None, f"its cache folder {folder} cannot be made ({exc.strerror})"
        if stat is not None and not os.access(folder, os.W_OK | os.X_OK):
            why = f"its cache folder {folder} cannot be written"
        elif stat is not None and stat.f_bavail * stat.f_frsize < _ROOM_TO_BUILD:
            why = (f"the disk of PoCL's cache folder {folder} has "
                   f"{stat.f_bavail * stat.f_frsize} bytes free")
    if why is not None:
        raise BuildError(f"cannot build {source.origin} for {device}: PoCL writes files into "
                         f"its cache folder to build a program, and {why}; set POCL_CACHE_DIR "
                         "to a folder with room", file=source.origin, device=device,
                         options=options, log="")


def _driver_keeps_builds(device: Device) -> bool:
    """Whether the driver caches its builds on disk itself, so that clkit's entry holds no binary.

    PoCL does (keyed by the source and options, unless ``POCL_KERNEL_CACHE=0``), and asking it
    for a program's binary makes it compile every kernel once more, for any work-group size,
    which costs more than building again from source out of PoCL's own cache.
    """
    return device.platform == "Portable Computing Language" and \
        os.environ.get("POCL_KERNEL_CACHE", "1").strip() != "0"


# A compiler's count of its messages ("12 warnings generated."), which a build does not print.
_COUNTS = re.compile(r"\d+ (warning|error)s?( and \d+ (warning|error)s?)? generated\.")
_held_lock = threading.Lock()
_held_depth = 0
_held_saved = -1
_held_file = None


@contextlib.contextmanager
def _driver_output_held(held: list):
    """Hold what is written on file descriptor 2 while a program builds.

    Clang-based compilers (PoCL's, Oclgrind's) print their count of messages ("12 warnings
    generated.", "1 error generated.") straight to the process's stderr, below Python, while
    the messages themselves go to the build log, which clkit shows in a warning or in the
    :class:`BuildError`.  The held text joins the build's log (``held``); then all of it but
    those counts is written out, since builds in several threads, background builds included,
    share one redirection, and whatever other threads write in that time is held alike and
    must not be lost.
    """
    global _held_depth, _held_saved, _held_file
    with _held_lock:
        if _held_depth == 0:
            sys.stderr.flush()
            _held_file = tempfile.TemporaryFile()
            _held_saved = os.dup(2)
            os.dup2(_held_file.fileno(), 2)
        _held_depth += 1
        file = _held_file
    try:
        yield
    finally:
        with _held_lock:
            _held_depth -= 1
            if _held_depth == 0:
                sys.stderr.flush()
                os.dup2(_held_saved, 2)
                os.close(_held_saved)
                file.seek(0)
                text = file.read().decode("utf-8", "replace").strip()
                file.close()
                if text:
                    held.append(text)
                    rest = "\n".join(line for line in text.splitlines()
                                      if not _COUNTS.fullmatch(line.strip()))
                    if rest.strip():
                        sys.stderr.write(rest + "\n")
                        sys.stderr.flush()


def _sigxfsz_ignored_again() -> None:
    """Ignore SIGXFSZ again, as Python does, after a driver's build.

    Python ignores SIGXFSZ, so that writing past the file-size limit fails with EFBIG, an
    OSError clkit reports.  Intel's CPU runtime installs LLVM's crash handlers at its first
    build, and theirs prints "PLEASE submit a bug report" for that signal before passing it
    on.  Through libc, because Python's signal module is for the main thread only.
    """
    if hasattr(signal, "SIGXFSZ") and signal.getsignal(signal.SIGXFSZ) == signal.SIG_IGN:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).signal(signal.SIGXFSZ, ctypes.c_void_p(1))  # SIG_IGN


def _log(prg, device) -> str:
    try:
        return (prg.get_build_info(device.cl_device, cl.program_build_info.LOG) or "").strip()
    except cl.Error:
        return ""


def _in_library(source: Source) -> bool:
    return Path(source.origin).parent == library_dir()


def _mapped(source: Source, raw: str) -> tuple[str, list]:
    """A compiler log with its locations in the original files, and those (file, line)s."""
    places = []

    def remap(m):
        file, line = source.where(int(m.group("line")))
        places.append((file, line))
        return f"{file}:{line}:{m.group('col')}:"

    return _LOCATION.sub(remap, raw), places


def _build_error(source: Source, options: tuple, device: Device, prg, exc) -> BuildError:
    raw = _log(prg, device) or str(exc)
    log, places = _mapped(source, raw)
    quoted = []
    for file in dict.fromkeys(f for f, _ in places):
        lines = source.files.get(file, [])
        marked = sorted({line for f, line in places if f == file})[:5]
        shown = sorted({n for line in marked for n in range(line - 2, line + 3)
                        if 1 <= n <= len(lines)})
        if not shown:
            continue
        quoted.append(f"{file}:")
        for previous, n in zip([None] + shown, shown):
            if previous is not None and n != previous + 1:
                quoted.append("      ...")
            quoted.append(f"{'>' if n in marked else ' '}{n:5d} | {lines[n - 1]}")
    shown_options = " ".join(options) or "(none)"
    message = (f"cannot build {source.origin} for device {device} with options {shown_options}"
               f"\n{log}" + ("\n" + "\n".join(quoted) if quoted else ""))
    return BuildError(message, file=source.origin, device=device, options=options, log=log)


# -- the disk cache ----------------------------------------------------------------------------

_MAGIC = b"CLKITBIN"
_FORMAT = 1
_warned: set[str] = set()  # cache folders warned about, once each


def cache_dir() -> Path | None:
    """The cache folder, or ``None`` when ``CLKIT_CACHE`` turns the cache off."""
    if os.environ.get("CLKIT_CACHE", "1").strip().lower() in ("0", "off", "no", "false"):
        return None
    configured = os.environ.get("CLKIT_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    return cache_home() / "clkit"


def cache_key(source_text: str, options: tuple, device) -> str:
    """The cache key: everything that can change the compiled binary."""
    cl_device = device.cl_device
    parts = [str(_FORMAT), source_text, "\0".join(options), device.name, device.platform,
             cl_device.platform.version, device.version, device.driver]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def cache_has(entry_key: str) -> bool:
    """Whether an entry exists (it may still turn out broken when loaded)."""
    folder = cache_dir()
    return folder is not None and (folder / f"{entry_key}.bin").is_file()


def cache_load(entry_key: str) -> tuple[bytes, dict] | None:
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


def cache_store(entry_key: str, binary: bytes, meta: dict) -> None:
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
