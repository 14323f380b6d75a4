"""Writing a file whole or not at all, and the folder that caches live in.

Every file clkit writes (images, point clouds, the kernel cache, benchmark
reports and plots) goes through :func:`atomic_write`, so that an interrupted
or failed write never leaves a half-written file under the final name.
:func:`make_cache_home_usable` runs before the drivers load, so that PoCL,
pyopencl and clkit find a cache folder they can write.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
import warnings
from pathlib import Path

from ._errors import caller_outside_clkit


@contextlib.contextmanager
def atomic_write(path):
    """Open a binary file that appears at ``path`` only once it is complete.

    The data goes to a hidden temporary file beside ``path``, flushed to disk,
    then moved over ``path`` in one step (``os.replace``).  If the block
    raises, the temporary file is removed and ``path`` is left as it was.
    The new file gets the usual permissions (0666 less the umask).
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"cannot write {path}: it is a folder")
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise _write_error(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _write_error(path, exc) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _write_error(path: Path, exc: OSError) -> OSError:
    if isinstance(exc, FileNotFoundError):
        if path.parent.is_dir():  # e.g. /proc: the folder is there, but takes no new files
            return FileNotFoundError(f"cannot write {path}: {path.parent} does not take new "
                                     f"files ({exc.strerror})")
        return FileNotFoundError(f"cannot write {path}: the folder {path.parent} does not exist")
    if isinstance(exc, NotADirectoryError):
        return NotADirectoryError(f"cannot write {path}: {path.parent} is not a folder")
    if isinstance(exc, PermissionError):
        return PermissionError(f"cannot write {path}: permission denied in {path.parent}")
    if isinstance(exc, IsADirectoryError):
        return IsADirectoryError(f"cannot write {path}: it is a folder")
    if str(path) in str(exc):
        return exc
    return type(exc)(f"cannot write {path}: {exc.strerror or exc}")


def cache_home() -> Path:
    """The user's cache folder, as PoCL, pyopencl and clkit find it: ``$XDG_CACHE_HOME``, else
    ``~/.cache``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


def make_cache_home_usable() -> None:
    """Before the drivers load: where the user's cache folder cannot be written, point
    ``XDG_CACHE_HOME`` at a folder of this user's in the temp folder, and warn.

    PoCL then reports no device at all (it cannot make its cache folder), and pyopencl fails
    every kernel it is asked for.  A folder that does not exist yet counts as usable when its
    parent is a writable folder; a missing home folder is not made.
    """
    try:
        home = cache_home()
    except RuntimeError:  # no HOME, and no entry in the password database
        home = None
    if home is not None and _usable(home):
        return
    fallback = Path(tempfile.gettempdir()) / f"clkit-cache-{getattr(os, 'getuid', lambda: 0)()}"
    try:
        fallback.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return
    if _usable(fallback):
        os.environ["XDG_CACHE_HOME"] = str(fallback)
        # PoCL, Intel's, AMD's and Mesa's compilers follow XDG_CACHE_HOME; NVIDIA's keeps its
        # JIT cache in $HOME/.nv (and makes the home folder) unless told otherwise
        os.environ.setdefault("CUDA_CACHE_PATH", str(fallback / "nv" / "ComputeCache"))
        warnings.warn(f"clkit: the cache folder {home} cannot be written; PoCL, pyopencl and "
                      f"clkit keep their caches in {fallback} in this process (set "
                      "XDG_CACHE_HOME to a writable folder to choose)", RuntimeWarning,
                      stacklevel=caller_outside_clkit())


def _usable(folder: Path) -> bool:
    if folder.is_dir():
        return os.access(folder, os.W_OK | os.X_OK)
    return folder.parent.is_dir() and os.access(folder.parent, os.W_OK | os.X_OK)
