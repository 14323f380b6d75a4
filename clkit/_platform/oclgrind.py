"""Running kernels under the Oclgrind simulator with its checks on, and reading its reports.

Oclgrind (https://github.com/jrprice/Oclgrind) runs OpenCL kernels in an
interpreter that checks every memory access: out-of-bounds reads and writes,
data races between work-items, reads of uninitialised values, unaligned
vector accesses, barriers not reached by the whole work-group, and (with
``OCLGRIND_CHECK_API``) OpenCL calls that fail.  It prints each finding, a
*diagnostic*, on stderr: a headline such as ``Invalid read of size 4 at
global memory address 0x...`` followed by tab-indented lines naming the
kernel, the work-item and the source line.

Oclgrind reads its settings from the environment once, when its driver is
loaded, so they must be set before the process first asks the OpenCL loader
for platforms.  Two ways to do that:

- ``clkit check SCRIPT.py [ARGS...]`` (:mod:`clkit.cli.check`) runs a
  script in a child process set up here, and counts the diagnostics;
- ``CLKIT_DEBUG=oclgrind`` in a process's environment: clkit calls
  :func:`apply_debug_environment` on its own process before it first lists devices.

Nothing here imports pyopencl, but :func:`apply_debug_environment` once the settings are in
place.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import icd as _icd

#: Oclgrind's settings for a checked run: every check on, and enough room for every report.
CHECKS = {
    "OCLGRIND_CHECK_API": "1",
    "OCLGRIND_DATA_RACES": "1",
    "OCLGRIND_UNINITIALIZED": "1",
    "OCLGRIND_MAX_ERRORS": "100000",
}

#: The name of the Oclgrind driver an ``.icd`` file registers.
ICD_LIBRARY = "liboclgrind-rt-icd.so"

_LIBRARY_DIRS = ("/usr/lib/oclgrind", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                 "/usr/lib64", "/usr/lib", "/usr/local/lib/oclgrind", "/usr/local/lib",
                 "/opt/homebrew/lib", "/opt/oclgrind/lib")
INSTALL_HINT = ("install Oclgrind (Debian/Ubuntu: sudo apt-get install oclgrind; others: "
                "https://github.com/jrprice/Oclgrind/releases)")


#: How a process in debug mode begins the line it writes for each kernel it runs elsewhere.
NOT_CHECKED = "clkit: not checked by Oclgrind: "
_not_checked: set = set()


def not_checked(kernel: str, device) -> None:
    """Say once on stderr that ``kernel`` runs on ``device``, where nothing checks it (a script
    run by ``clkit check`` that passes ``device=`` of its own; the command counts these)."""
    if (kernel, device.id) not in _not_checked:
        _not_checked.add((kernel, device.id))
        sys.stderr.write(f"{NOT_CHECKED}kernel {kernel} runs on {device}\n")
        sys.stderr.flush()


def registered(env=None) -> bool:
    """Whether an ``.icd`` file the loader reads (with ``env``) names the Oclgrind driver."""
    env = os.environ if env is None else env
    folder = _icd.vendor_dir(env)
    for icd in sorted(folder.glob("*.icd")) if folder.is_dir() else ():
        try:
            if "oclgrind" in Path(icd.read_text().strip()).name.lower():
                return True
        except OSError:
            continue
    return False


def find_library() -> Path | None:
    """The Oclgrind ICD driver library, looked up beside the ``oclgrind`` command and in the
    usual library folders; ``OCLGRIND_ICD`` names it outright."""
    named = os.environ.get("OCLGRIND_ICD")
    if named:
        return Path(named) if Path(named).is_file() else None
    folders = []
    command = shutil.which("oclgrind")
    if command:
        prefix = Path(command).resolve().parent.parent
        folders += [prefix / "lib" / "oclgrind", prefix / "lib", prefix / "lib64"]
    folders += [Path(d) for d in _LIBRARY_DIRS]
    for folder in folders:
        candidate = folder / ICD_LIBRARY
        if candidate.is_file():
            return candidate
    return None


def environment(env=None) -> dict:
    """A copy of ``env`` (default: this process's) set up for a checked run under Oclgrind.

    Every check of :data:`CHECKS` is on (a value the caller already set is
    kept), ``CLKIT_DEVICE=oclgrind`` makes clkit run there by default, and
    when no ``.icd`` file registers Oclgrind, a private folder of ``.icd``
    files (the loader's own plus Oclgrind's) is put in ``OCL_ICD_VENDORS``,
    so the other devices stay visible.

    Raises
    ------
    FileNotFoundError
        Oclgrind is neither registered nor installed; the message says how
        to install it.
    """
    env = dict(os.environ if env is None else env)
    for key, value in CHECKS.items():
        env.setdefault(key, value)
    env["CLKIT_DEVICE"] = "oclgrind"
    env["CLKIT_DEBUG"] = "oclgrind"
    if not registered(env):
        library = find_library()
        if library is None:
            raise FileNotFoundError(f"Oclgrind is not installed (no {ICD_LIBRARY} found); "
                                    f"{INSTALL_HINT}")
        # Both loaders (ocl-icd and Khronos) read a folder named in OCL_ICD_VENDORS.
        env["OCL_ICD_VENDORS"] = str(_vendor_folder(env, library))
    return env


_made: list[Path] = []


def _vendor_folder(env, library: Path) -> Path:
    """A new folder with the loader's ``.icd`` files and one for Oclgrind."""
    folder = Path(tempfile.mkdtemp(prefix="clkit-oclgrind-icd-"))
    _made.append(folder)
    source = _icd.vendor_dir(env)
    if source.is_dir():
        for icd in sorted(source.glob("*.icd")):
            try:
                (folder / icd.name).write_text(icd.read_text())
            except OSError:
                continue
    (folder / "clkit-oclgrind.icd").write_text(f"{library}\n")
    return folder


def cleanup() -> None:
    """Remove the ``.icd`` folders :func:`environment` made."""
    while _made:
        shutil.rmtree(_made.pop(), ignore_errors=True)


def apply_debug_environment(mode: str | None) -> bool:
    """With ``CLKIT_DEBUG=oclgrind`` (``mode``, its value lowercased), set this process up
    for Oclgrind (before devices load).

    clkit calls it just before it first asks the OpenCL loader for platforms
    (later, Oclgrind's driver has read its settings already).  Returns whether
    it changed anything.
    """
    from .._errors import ArgumentValueError, DeviceNotFoundError
    if mode is None or mode == "1":
        return False
    if mode != "oclgrind":
        raise ArgumentValueError(f"CLKIT_DEBUG={os.environ['CLKIT_DEBUG']!r} is not a debug mode "
                                 "clkit knows; use CLKIT_DEBUG=oclgrind or CLKIT_DEBUG=1, or "
                                 "unset it")
    try:
        env = environment()
    except FileNotFoundError as exc:
        raise DeviceNotFoundError(f"CLKIT_DEBUG=oclgrind: {exc}") from None
    os.environ.update(env)
    if _made:
        atexit.register(cleanup)
    _ask_only_nvidia_for_its_compute_capability()
    return True


def _ask_only_nvidia_for_its_compute_capability() -> None:
    """Keep pyopencl from asking the simulator what only NVIDIA's driver answers.

    pyopencl asks every device of a context for NVIDIA's compute capability
    (``clGetDeviceInfo`` of ``CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV``) each time
    it makes a kernel object, and takes the error other drivers return as "not
    NVIDIA"; with its API checks on, Oclgrind reports every one of those errors
    as an OpenCL runtime error.  Here the question goes to NVIDIA's devices only,
    with the same answer, None, for the others.
    """
    import pyopencl.characterize as characterize  # the loader has read no driver yet
    ask = characterize.nv_compute_capability
    if getattr(ask, "nvidia_only", False):
        return

    def nv_compute_capability(dev):
        return ask(dev) if "nvidia" in dev.vendor.lower() else None

    nv_compute_capability.nvidia_only = True
    characterize.nv_compute_capability = nv_compute_capability


# -- reading Oclgrind's reports -------------------------------------------------------------

# The lines that follow a headline: Oclgrind indents everything after it with tabs.
_DETAIL = re.compile(r"^\t(Kernel:|Function:|Entity:|Work-item:|Work-group:)")
_OWN_LINE = re.compile(r"^(Oclgrind:|Oclgrind - |OCLGRIND )")


@dataclass(frozen=True)
class Diagnostic:
    """One report of Oclgrind: its headline, its whole text, and the kernel or API call."""

    headline: str
    text: str

    @property
    def kernel(self) -> str | None:
        m = re.search(r"^\tKernel:\s*(\S+)", self.text, re.M)
        return m.group(1) if m else None

    @property
    def benign(self) -> bool:
        """A known false alarm: pyopencl's probes of device queries Oclgrind 21.10 lacks.

        pyopencl asks ``clGetDeviceInfo`` for properties of newer OpenCL
        versions and handles the ``CL_INVALID_VALUE`` it gets; with
        ``OCLGRIND_CHECK_API`` Oclgrind still reports each.  Exactly that
        report is benign; any other is not.
        """
        lines = [line.strip() for line in self.text.splitlines() if line.strip()]
        return lines == ["Oclgrind - OpenCL runtime error detected",
                         "Function: clGetDeviceInfo", "Error:    CL_INVALID_VALUE",
                         "For argument 'param_name'"]

    def __str__(self):
        return self.text


class DiagnosticFilter:
    """Split a stream of stderr lines into Oclgrind's diagnostics and everything else.

    Feed it lines (without their newline).  Lines that are not part of a
    diagnostic go to ``echo`` as they come (blank lines may be held back a
    little); each diagnostic, once complete, is collected in
    :attr:`diagnostics` and passed to ``show``.  Benign reports (see
    :attr:`Diagnostic.benign`) are only counted, with the blank lines that
    frame them.  Call :meth:`close` at the end.
    """

    def __init__(self, echo=None, show=None):
        self.echo = echo or (lambda line: None)
        self.show = show or (lambda diagnostic: None)
        self.diagnostics: list[Diagnostic] = []
        self.benign = 0
        self._blanks = 0          # blank lines held back: they may frame a dropped report
        self._head: str | None = None
        self._block: list[str] | None = None
        self._swallow_blank = False

    def feed(self, line: str) -> None:
        line = line.rstrip("\r\n")
        if self._block is not None:
            if line.startswith("\t"):
                self._block.append(line)
                return
            self._close_block()
        if self._head is not None:
            head, self._head = self._head, None
            if _DETAIL.match(line) or _OWN_LINE.match(head):
                self._block = [head]
                if line.startswith("\t"):
                    self._block.append(line)
                    return
                self._close_block()
            else:
                self._flush_blanks()
                self.echo(head)
        if not line.strip():
            if self._swallow_blank:
                self._swallow_blank = False
            else:
                self._blanks += 1
            return
        self._swallow_blank = False
        if line.startswith("\t"):
            self._flush_blanks()
            self.echo(line)
        else:
            self._head = line  # a headline if the next line is one of Oclgrind's details

    def close(self) -> None:
        if self._block is not None:
            self._close_block()
        if self._head is not None:
            head, self._head = self._head, None
            if _OWN_LINE.match(head):
                self._block = [head]
                self._close_block()
            else:
                self._flush_blanks()
                self.echo(head)
        self._flush_blanks()

    def _flush_blanks(self):
        for _ in range(self._blanks):
            self.echo("")
        self._blanks = 0

    def _close_block(self):
        block, self._block = self._block, None
        diagnostic = Diagnostic(block[0], "\n".join(block).rstrip())
        self._blanks = 0
        self._swallow_blank = True
        if diagnostic.benign:
            self.benign += 1
            return
        self.diagnostics.append(diagnostic)
        self.show(diagnostic)


def parse(text: str) -> tuple[list[Diagnostic], str]:
    """The diagnostics in a captured stderr text, and the rest of the text.

    Benign reports (:attr:`Diagnostic.benign`) are in neither.
    """
    rest: list[str] = []
    diag = DiagnosticFilter(rest.append)
    for line in text.splitlines():
        diag.feed(line)
    diag.close()
    return diag.diagnostics, "\n".join(rest).strip()


def summary(diagnostics: list[Diagnostic], limit: int = 3) -> str:
    """A short account of diagnostics for a message: the count, the kinds, the first few."""
    if not diagnostics:
        return "no Oclgrind diagnostics"
    kinds: dict[str, int] = {}
    for d in diagnostics:
        kind = re.sub(r" of size \d+| (at|to|from|in) \w+ memory address \S+|0x[0-9a-f]+", "",
                      d.headline).strip()
        kinds[kind] = kinds.get(kind, 0) + 1
    counted = ", ".join(f"{n} x {k}" for k, n in kinds.items())
    shown = "\n\n".join(d.text for d in diagnostics[:limit])
    more = f"\n\n... and {len(diagnostics) - limit} more" if len(diagnostics) > limit else ""
    return f"{len(diagnostics)} Oclgrind diagnostic(s): {counted}\n\n{shown}{more}"
