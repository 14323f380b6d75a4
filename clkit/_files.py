"""Writing a file whole or not at all.

Every file clkit writes (images, point clouds, the kernel cache, benchmark
reports and plots) goes through :func:`atomic_write`, so that an interrupted
or failed write never leaves a half-written file under the final name.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path


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
