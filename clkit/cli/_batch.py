"""Running a command over one file or every image of a folder, with a progress bar.

``IN`` may be a folder: then ``OUT`` is a folder (created if needed), every
image directly in ``IN`` is processed into a file of the same name, and a
progress bar on stderr (when it is a terminal) shows the batch.  A file that
fails does not stop the batch: the others are still written, and the command
ends with one error line naming the file(s) and exit status 2.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from tqdm import tqdm

from .._errors import ArgumentTypeError, ArgumentValueError
from .._io import imageio as _imageio
from .._launch.map import map as clkit_map
from .._platform.devices import select, select_many
from ._command import UsageError

#: Failures that concern one input file (its contents, its output, its size): reported with
#: the file's name; in a batch, the other files go on.
FILE_ERRORS = (ArgumentValueError, ArgumentTypeError, OSError, MemoryError)


def progress(total: int, label: str, unit: str = "image", stream=None, **options) -> tqdm:
    """A progress bar (tqdm) on ``stream`` (default: stderr) for a batch of ``total`` files.

    Drawn only when the stream is a terminal and there is more than one file, and cleared at
    the end, so that piped or logged output holds the results alone.
    """
    return tqdm(total=total, desc=label, unit=unit, file=stream or sys.stderr, leave=False,
                disable=True if total <= 1 else None, dynamic_ncols=True, **options)


def file_error(src: Path, dst: Path, exc: BaseException) -> str:
    """The message of a failure on one file, naming the file."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, MemoryError):
        message = "not enough memory for this image"
    if str(src) not in message and str(dst) not in message:
        message = f"{src}: {message}"
    return message


def jobs(src, dst, out_suffix=None) -> tuple[list, Path | None]:
    """The (input, output) pairs of a command, and the output folder for a batch.

    ``out_suffix`` replaces the extension of outputs named after inputs
    (``.ply`` for point clouds); otherwise an output keeps the input's name.
    """
    names_a_folder = str(dst).endswith(("/", os.sep))  # (Path drops the slash)
    src, dst = Path(src), Path(dst)
    if src.is_dir():
        if dst.exists() and not dst.is_dir():
            raise UsageError(f"{src} is a folder, so OUT must be a folder too, and {dst} is a "
                             "file")
        if dst.exists() and dst.resolve() == src.resolve():
            raise UsageError(f"OUT {dst} is the input folder: the results would replace the "
                             "originals; name another folder")
        inputs = _imageio.list_images(src)
        if not inputs:
            raise UsageError(f"{src}: no image files in this folder (looked for "
                             f"{', '.join(_imageio.IMAGE_EXTENSIONS)})")
        pairs = [(p, dst / (p.stem + out_suffix if out_suffix else p.name)) for p in inputs]
        seen = {}
        for p, out in pairs:
            if out in seen:
                raise UsageError(f"{seen[out].name} and {p.name} in {src} would both be written "
                                 f"to {out}; rename one of them")
            seen[out] = p
        try:
            dst.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OSError(f"cannot create the folder {dst}: {exc.strerror or exc}") from None
        if not os.access(dst, os.W_OK | os.X_OK):  # found before any work, not after each image
            raise PermissionError(f"cannot write into {dst}: permission denied")
        return pairs, dst
    if not src.exists():
        raise FileNotFoundError(f"{src}: no such file or folder")
    if names_a_folder and not dst.is_dir():
        raise FileNotFoundError(f"cannot write into {dst}{os.sep}: no such folder")
    if dst.is_dir():  # like cp: a file into an existing folder keeps its name
        dst = dst / (src.stem + out_suffix if out_suffix else src.name)
    if dst.exists() and dst.resolve() == src.resolve():
        raise UsageError(f"OUT {dst} is the input file: the result would replace the original; "
                         "name another file or folder")
    _imageio.check_output(dst)  # a bad output name or folder fails before any work
    return [(src, dst)], None


def devices_of(spec) -> list:
    """The devices ``--device`` names: one spec, ``all`` (every device but the simulator) or
    specs separated by commas."""
    if spec is not None and (spec.strip().lower() == "all" or "," in spec):
        return select_many("all" if spec.strip().lower() == "all" else
                           [s for s in spec.split(",") if s.strip()])
    return [select(spec)]


def for_each_file(args, process, devices: list, *, out_suffix=None, unit="image") -> None:
    """Run ``process(src, dst, device)`` for ``args.input`` or every image of that folder.

    ``process`` returns a short description of what it wrote.  A folder's
    files go through :func:`clkit.map` on ``devices``, several at once, so
    that one file's reading, transfers and kernels overlap another's, and
    each file runs on one device (``device``); a single file is spread over
    all of them (``device`` a list, when there are several).  In a batch, a
    file that fails with one of :data:`FILE_ERRORS` (bad contents, an
    unwritable output) is reported at the end and the rest go on; any other
    error (the device, the kernel build) stops the batch at once.
    """
    pairs, folder = jobs(args.input, args.output, out_suffix)
    started = time.perf_counter()
    if folder is None:
        src, dst = pairs[0]
        try:
            what = process(src, dst, devices if len(devices) > 1 else devices[0])
        except FILE_ERRORS as exc:
            raise UsageError(file_error(src, dst, exc)) from None
        print(f"wrote {dst}{what}")
        return
    failures = []

    def attempt(pair, device):
        # clkit.map passes the lane's device on, and its queue is the lane's while this runs,
        # so this file's transfers and kernels overlap the other files'.
        src, dst = pair
        try:
            process(src, dst, device)
        except FILE_ERRORS as exc:
            return file_error(src, dst, exc)
        return None

    with progress(len(pairs), args.command, unit) as bar:
        for (src, _), failure in zip(pairs, clkit_map(attempt, pairs, device=devices)):
            if failure is not None:
                failures.append((src, failure))
            bar.set_postfix_str(src.name, refresh=False)
            bar.update()
    written = len(pairs) - len(failures)
    seconds = time.perf_counter() - started
    if failures:
        others = ", ".join(str(s) for s, _ in failures[1:6])
        if len(failures) > 6:
            others += f" and {len(failures) - 6} more"
        raise UsageError(f"{failures[0][1]}"
                         + (f"; also failed: {others}" if others else "")
                         + f" ({written} of {len(pairs)} {unit}s written to {folder})")
    print(f"wrote {written} {unit}{'s' if written != 1 else ''} to {folder} in {seconds:.2f} s")
