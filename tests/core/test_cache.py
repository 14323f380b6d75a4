"""The in-memory and on-disk program caches."""

import numpy as np
import pytest

import clkit
from clkit._build import build as _build
from clkit._platform.runtime import drop_held

SRC = "__kernel void add_k(__global int* x, const int k) { x[get_global_id(0)] += k; }"


def run(prg, device):
    x = np.arange(17, dtype=np.int32)
    prg.add_k(x, 5, device=device)
    assert (x == np.arange(17) + 5).all()


def entries(folder):
    return sorted(folder.glob("*.bin"))


def test_memory_then_disk_hits(device, cache_dir):
    prg = clkit.Program.from_source(SRC)
    assert prg.build(device).origin == "compiled"
    assert prg.build(device).origin == "memory"
    assert clkit.Program.from_source(SRC).build(device).origin == "memory"
    (entry,) = entries(cache_dir)
    # PoCL caches the build itself: asking it for the binary would compile every kernel again
    binary, _ = _build.cache_load(entry.stem)
    assert (binary == b"") == (device.platform == "Portable Computing Language"), len(binary)
    drop_held()
    again = clkit.Program.from_source(SRC)
    assert again.build(device).origin == "disk"
    run(again, device)


def test_options_and_devices_get_their_own_entries(device, cache_dir):
    clkit.Program.from_source(SRC).build(device)
    clkit.Program.from_source(SRC, defines={"UNUSED": 1}).build(device)
    assert len(entries(cache_dir)) == 2


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped", "empty"])
def test_corrupt_entry_is_rebuilt(device, cache_dir, damage):
    clkit.Program.from_source(SRC).build(device)
    (entry,) = entries(cache_dir)
    data = entry.read_bytes()
    entry.write_bytes({"garbage": b"not a cache entry at all" * 10,
                       "truncated": data[: len(data) // 2],
                       "flipped": data[:-10] + bytes(b ^ 0xFF for b in data[-10:]),
                       "empty": b""}[damage])
    drop_held()
    prg = clkit.Program.from_source(SRC)
    assert prg.build(device).origin == "compiled"
    run(prg, device)
    assert _build.cache_load(entry.stem) is not None  # the entry was rewritten whole
    drop_held()
    assert clkit.Program.from_source(SRC).build(device).origin == "disk"


def test_a_binary_the_driver_refuses_is_rebuilt(device, cache_dir, monkeypatch):
    clkit.Program.from_source(SRC).build(device)
    (entry,) = entries(cache_dir)
    key = entry.stem
    real_load = _build.cache_load

    def load_with_bad_binary(k):
        binary, meta = real_load(k)
        return b"\x00" * max(64, len(binary)), meta
    monkeypatch.setattr(_build, "cache_load", load_with_bad_binary)
    drop_held()
    prg = clkit.Program.from_source(SRC)
    assert prg.build(device).origin == "compiled"
    run(prg, device)
    assert key == entries(cache_dir)[0].stem


def test_cache_can_be_turned_off(device, cache_dir, monkeypatch):
    monkeypatch.setenv("CLKIT_CACHE", "0")
    prg = clkit.Program.from_source(SRC)
    assert prg.build(device).origin == "compiled"
    run(prg, device)
    assert not cache_dir.exists() or entries(cache_dir) == []


def test_unwritable_cache_warns_and_still_runs(device, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("CLKIT_CACHE_DIR", str(blocker / "cache"))
    drop_held()
    with pytest.warns(RuntimeWarning, match="cannot write the kernel cache"):
        prg = clkit.Program.from_source(SRC + "\n// unwritable")
        prg.build(device)
    run(prg, device)
    drop_held()


def test_signature_survives_the_disk_cache(device, cache_dir):
    clkit.Program.from_source(SRC).build(device)
    drop_held()
    prg = clkit.Program.from_source(SRC)
    assert prg.build(device).origin == "disk"
    with pytest.raises(TypeError, match=r"parameter 'x' \(__global int\* x\)"):
        prg.add_k(np.zeros(3, np.float32), 1, device=device)


def test_a_pipe_named_like_an_entry_is_not_read(device, cache_dir):
    import os
    clkit.Program.from_source(SRC).build(device)
    (entry,) = entries(cache_dir)
    entry.unlink()
    os.mkfifo(entry)  # reading it would wait for a writer forever
    assert _build.cache_load(entry.stem) is None
    drop_held()
    run(clkit.Program.from_source(SRC), device)


def test_a_home_that_cannot_hold_caches_moves_them_to_the_temp_folder(tmp_path):
    # HOME=/nonexistent (a container's system user) or a read-only home: PoCL found no device
    # and pyopencl failed every kernel; clkit made the missing home folder for its own cache.
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items()
           if k not in ("XDG_CACHE_HOME", "CLKIT_CACHE_DIR", "POCL_CACHE_DIR")}
    env.update(HOME=str(tmp_path / "no-such-home"), TMPDIR=str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    script = ("import numpy as np, clkit\n"
              "x = np.ones(5, np.int32)\n"
              f"clkit.Program.from_source({SRC!r}).add_k(x, 2)\n"
              "print(x.tolist())\n")
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "[3, 3, 3, 3, 3]", proc.stderr
    moved = tmp_path / "tmp" / f"clkit-cache-{os.getuid()}"
    assert f"keep their caches in {moved}" in proc.stderr
    assert (moved / "clkit").is_dir() and not (tmp_path / "no-such-home").exists()


def test_pocl_s_cache_folder_is_made_again_when_it_went(device, tmp_path):
    # A cleaner of old files (or rm -rf ~/.cache) under a long-lived process: PoCL's builds
    # failed with "failed to build the program" and no log.
    if device.platform != "Portable Computing Language":
        pytest.skip("PoCL's own cache folder")
    import os
    import subprocess
    import sys
    folder = tmp_path / "pocl"
    script = ("import shutil, sys, numpy as np, clkit\n"
              f"dev = clkit.select({device.id!r})\n"
              "def run(src):\n"
              "    x = np.ones(4, np.int32)\n"
              "    clkit.Program.from_source(src).add_k(x, 1, device=dev)\n"
              "    return x.tolist()\n"
              f"print(run({SRC!r}))\n"
              "shutil.rmtree(sys.argv[1])\n"
              f"print(run({SRC!r} + '// a new program'))\n")
    env = {**os.environ, "POCL_CACHE_DIR": str(folder), "CLKIT_CACHE_DIR": str(tmp_path / "c")}
    proc = subprocess.run([sys.executable, "-c", script, str(folder)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["[2,", "2,", "2,", "2]"] * 2
    assert folder.is_dir()
