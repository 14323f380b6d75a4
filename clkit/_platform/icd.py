"""Where the OpenCL ICD loader looks for drivers, and what it finds there.

Used to explain an empty platform list (:class:`NoOpenCLError`) and by
``clkit doctor``.  Nothing here imports pyopencl: the checks must work when
the loader itself is the problem.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

DEFAULT_VENDOR_DIR = Path("/etc/OpenCL/vendors")
CPU_DRIVER_HINT = "sudo apt-get install pocl-opencl-icd"
NVIDIA_LIBRARY = "libnvidia-opencl.so.1"
_NVIDIA_DIRS = (
    "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64",
    "/usr/lib", "/usr/local/nvidia/lib64", "/usr/local/nvidia/lib",
)


@dataclass(frozen=True)
class IcdFile:
    """One ``.icd`` file: the driver library it names and whether it loads."""

    path: Path
    library: str
    error: str | None  # None when the library loads and reports a platform


def vendor_dir(env=None) -> Path:
    """The folder of ``.icd`` files the loader reads with environment ``env`` (default: ours).

    ``OCL_ICD_VENDORS`` (Khronos and ocl-icd loaders) replaces the default
    folder; ``OPENCL_VENDOR_PATH`` is ocl-icd's older spelling.
    """
    env = os.environ if env is None else env
    for var in ("OCL_ICD_VENDORS", "OPENCL_VENDOR_PATH"):
        value = env.get(var)
        if value:
            path = Path(value)
            return path.parent if path.suffix == ".icd" else path
    return DEFAULT_VENDOR_DIR


def vendor_dirs() -> list[Path]:
    """The folders of ``.icd`` files that the loaders consult, in order."""
    return [vendor_dir()]


def icd_files(probe: bool = True) -> list[IcdFile]:
    """Every ``.icd`` file the loader sees, each probed in a child process."""
    files = []
    for folder in vendor_dirs():
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.icd")):
            try:
                library = path.read_text().strip()
            except OSError as exc:
                files.append(IcdFile(path, "", f"unreadable: {exc.strerror}"))
                continue
            error = _probe(library) if probe else None
            files.append(IcdFile(path, library, error))
    return files


def _probe(library: str) -> str | None:
    """Load one driver library in a child process and ask for its platforms.

    A child process, because a broken driver may crash the process that
    loads it.
    """
    # Loaders find the entry point through clGetExtensionFunctionAddress; so does this.
    code = (
        "import ctypes,sys\n"
        "try:\n lib=ctypes.CDLL(sys.argv[1])\n"
        "except OSError as e:\n print('cannot load:', e); sys.exit(1)\n"
        "g=getattr(lib,'clGetExtensionFunctionAddress',None)\n"
        "if g is None:\n print('not an OpenCL driver: no clGetExtensionFunctionAddress'); sys.exit(1)\n"
        "g.restype=ctypes.c_void_p; g.argtypes=[ctypes.c_char_p]\n"
        "p=g(b'clIcdGetPlatformIDsKHR')\n"
        "if not p:\n print('not an ICD driver: no clIcdGetPlatformIDsKHR'); sys.exit(1)\n"
        "f=ctypes.CFUNCTYPE(ctypes.c_int,ctypes.c_uint,ctypes.c_void_p,ctypes.POINTER(ctypes.c_uint))(p)\n"
        "n=ctypes.c_uint(0); r=f(0,None,ctypes.byref(n))\n"
        "if r!=0 or n.value==0:\n print(f'the driver reports no platform (status {r})'); sys.exit(1)\n"
    )
    if not library:
        return "the file is empty: it must hold the driver library's path"
    try:
        run = subprocess.run([sys.executable, "-c", code, library], capture_output=True,
                             text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "loading the driver did not finish within 60 s"
    if run.returncode == 0:
        return None
    lines = (run.stdout + run.stderr).strip().splitlines()
    return lines[0] if lines else f"loading the driver crashed (exit status {run.returncode})"


#: Driver libraries that pip packages install into an environment's lib/ folder: the package
#: that brings each, and the name its .icd file has elsewhere.
PIP_DRIVERS = {"libintelocl.so": ("intel-opencl-rt", "intel-cpu.icd")}
_NOT_FOUND = ": cannot open shared object file"


def environment_lib_dirs() -> list[Path]:
    """The lib/ folders of this Python environment (and of the one it was made from)."""
    return list(dict.fromkeys(Path(p) / "lib" for p in (sys.prefix, sys.base_prefix)))


def pip_drivers() -> list[Path]:
    """The driver libraries pip installed into this environment (see PIP_DRIVERS)."""
    return [folder / name for folder in environment_lib_dirs() for name in PIP_DRIVERS
            if (folder / name).is_file()]


def unregistered_pip_drivers() -> list[Path]:
    """pip-installed driver libraries that no ``.icd`` file names (by file name)."""
    named = {Path(icd.library).name for icd in icd_files(probe=False)}
    return [lib for lib in pip_drivers() if lib.name not in named]


def register_command(library, icd_path) -> str:
    """The command that writes ``library``'s path into the ``.icd`` file ``icd_path``."""
    icd_path = Path(icd_path)
    folder = icd_path.parent
    writable = os.access(folder if folder.is_dir() else folder.parent, os.W_OK)
    return f"echo {library} | {'' if writable else 'sudo '}tee {icd_path}"


def load_fix(icd: IcdFile) -> str | None:
    """The fix for an ``.icd`` file whose driver, or a library the driver needs, is not found.

    A driver that pip put in an environment's lib/ is named by the path it has there (a
    bare name, or a path that does not exist, such as the placeholder in the ``.icd`` file
    the package ships); a library it needs that lies in the driver's folder or in the
    environment's lib/ goes on ``LD_LIBRARY_PATH``.  None for other problems.
    """
    if not icd.error or _NOT_FOUND not in icd.error:
        return None
    missing = icd.error.split(_NOT_FOUND)[0].rsplit(": ", 1)[-1].strip()
    driver = Path(icd.library)
    if missing == icd.library or not driver.is_file():
        for folder in environment_lib_dirs():
            if (folder / driver.name).is_file():
                return register_command(folder / driver.name, icd.path)
        return None
    for folder in [driver.parent] + environment_lib_dirs():
        if (folder / missing).exists():
            return f"export LD_LIBRARY_PATH={folder}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"
    return None


def nvidia_library() -> str | None:
    """The path of NVIDIA's OpenCL driver library, if one is installed."""
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    for line in out.splitlines():
        if NVIDIA_LIBRARY in line and "=>" in line:
            return line.split("=>", 1)[1].strip()
    for folder in _NVIDIA_DIRS:
        candidate = Path(folder) / NVIDIA_LIBRARY
        if candidate.exists():
            return str(candidate)
    return None


def unregistered_nvidia() -> str | None:
    """NVIDIA's library path when it is installed but no ``.icd`` names it."""
    library = nvidia_library()
    if library is None:
        return None
    for icd in icd_files(probe=False):
        if "nvidia" in icd.library.lower():
            return None
    return library


def nvidia_fix(library: str) -> str:
    """The command that registers NVIDIA's driver with the loader."""
    target = vendor_dirs()[0] / "nvidia.icd"
    return f"echo {library} | sudo tee {target}"


def no_platform_message() -> str:
    """One line saying why no platform is visible and what to do about it."""
    parts = ["no OpenCL platform is visible to the ICD loader"]
    library = unregistered_nvidia()
    if library:
        parts.append(f"NVIDIA's OpenCL library {library} is installed but not registered: "
                     f"run `{nvidia_fix(library)}`")
    dirs = ", ".join(str(d) for d in vendor_dirs())
    parts.append(f"to run on the CPU, install a CPU driver (Debian/Ubuntu: `{CPU_DRIVER_HINT}`)")
    parts.append(f"the loader reads .icd files from {dirs}; `clkit doctor` checks each of them")
    return "; ".join(parts)

