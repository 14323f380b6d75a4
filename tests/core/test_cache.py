"""The in-memory and on-disk program caches."""

import numpy as np
import pytest

import clkit
from clkit import _build, _cache

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
    binary, _ = _cache.load(entry.stem)
    assert (binary == b"") == (device.platform == "Portable Computing Language"), len(binary)
    _build.forget()
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
    _build.forget()
    prg = clkit.Program.from_source(SRC)
    assert prg.build(device).origin == "compiled"
    run(prg, device)
    assert _cache.load(entry.stem) is not None  # the entry was rewritten whole
    _build.forget()
    assert clkit.Program.from_source(SRC).build(device).origin == "disk"


def test_a_binary_the_driver_refuses_is_rebuilt(device, cache_dir, monkeypatch):
    clkit.Program.from_source(SRC).build(device)
    (entry,) = entries(cache_dir)
    key = entry.stem
    real_load = _cache.load

    def load_with_bad_binary(k):
        binary, meta = real_load(k)
        return b"\x00" * max(64, len(binary)), meta
    monkeypatch.setattr(_cache, "load", load_with_bad_binary)
    _build.forget()
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
    _build.forget()
    with pytest.warns(RuntimeWarning, match="cannot write the kernel cache"):
        prg = clkit.Program.from_source(SRC + "\n// unwritable")
        prg.build(device)
    run(prg, device)
    _build.forget()


def test_signature_survives_the_disk_cache(device, cache_dir):
    clkit.Program.from_source(SRC).build(device)
    _build.forget()
    prg = clkit.Program.from_source(SRC)
    assert prg.build(device).origin == "disk"
    with pytest.raises(TypeError, match=r"parameter 'x' \(__global int\* x\)"):
        prg.add_k(np.zeros(3, np.float32), 1, device=device)
