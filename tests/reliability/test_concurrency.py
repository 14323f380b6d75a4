"""Many threads, several devices and several processes at once: every result still correct.

- 8 threads launch library functions and user kernels on one device, a few thousand launches
  in all, each checking its own results (and building the same programs at the same moment);
- the same on two devices at once: two PoCL devices (``POCL_DEVICES="pthread pthread"``, in a
  child process), with ``device="all"`` calls that split each job between them, and PoCL
  next to the Oclgrind simulator (one thread there: Oclgrind 21.10 runs one kernel at a time
  per process and aborts otherwise);
- 4 processes building the same program into one empty disk cache at the same moment, and
  readers loading an entry while another process keeps tearing it: none is ever given a broken
  binary (each checks what its kernel computes).
"""

import os
import subprocess
import sys
import textwrap
import threading
import time

import cv2
import numpy as np
import pytest
import scipy.ndimage

import clkit
import clkit.kernels as ck
from _reference import SAXPY, mandelbrot_reference, pinhole_reference
from _where import CWD, REPO, child_env, pythonpath


def run_threads(count, work):
    """Run ``work(index)`` on ``count`` threads started together; return their exceptions."""
    start = threading.Barrier(count)
    errors = []

    def body(index):
        try:
            start.wait()
            work(index)
        except BaseException as exc:  # collected, re-raised by the test with the thread's index
            errors.append((index, exc))

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    return errors


def one_job(device, rng, job, prg):
    """One library call or user launch on ``device`` with fresh data, checked; its launches."""
    if job == 0:  # a user kernel with numpy arguments (uploaded, copied back)
        x = rng.standard_normal(1000).astype(np.float32)
        y = rng.standard_normal(1000).astype(np.float32)
        expected = np.float32(3) * x + y
        prg.saxpy(3.0, x, y, device=device)
        np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)
        return 1
    if job == 1:  # a user kernel on device arrays
        x = rng.standard_normal(257).astype(np.float32)
        dx, dy = clkit.to_device(x, device=device), clkit.to_device(x, device=device)
        prg.saxpy(-1.0, dx, dy)
        assert np.abs(dy.get()).max() == 0
        return 1
    if job == 2:
        a, b = (rng.integers(-1000, 1000, (13, 17)).astype(np.int32) for _ in "ab")
        np.testing.assert_array_equal(ck.vector_add(a, b, device=device), a + b)
        return 1
    if job == 3:
        rgb = rng.integers(0, 256, (11, 19, 3), dtype=np.uint8)
        np.testing.assert_array_equal(ck.grayscale(rgb, device=device),
                                      cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY))
        return 1
    if job == 4:
        image = rng.standard_normal((19, 23)).astype(np.float32)
        mask = rng.standard_normal((3, 4))
        np.testing.assert_allclose(ck.convolve(image, mask, mode="wrap", device=device),
                                   scipy.ndimage.convolve(image.astype(np.float64), mask,
                                                          mode="wrap"), rtol=1e-4, atol=1e-4)
        return 1
    if job == 5:
        image = rng.standard_normal((17, 21)).astype(np.float32)
        np.testing.assert_allclose(ck.gaussian_blur(image, 1.2, device=device),
                                   scipy.ndimage.gaussian_filter(image.astype(np.float64), 1.2),
                                   rtol=1e-4, atol=1e-5)
        return 2
    if job == 6:
        got = ck.mandelbrot(23, 9, max_iter=40, device=device)
        assert (got == mandelbrot_reference(23, 9, max_iter=40)).mean() >= 0.99
        return 1
    depth = rng.integers(0, 3000, (9, 14)).astype(np.uint16)
    points = ck.depth_to_points(depth, 10.0, 10.0, 7.0, 4.0, depth_scale=1000.0, device=device)
    expected, _, valid = pinhole_reference(depth, 10.0, 10.0, 7.0, 4.0, 1000.0)
    np.testing.assert_allclose(points, expected[valid], rtol=1e-5, atol=1e-6)
    return 3


JOBS = 8


def hammer(devices, threads, rounds, seed=0):
    """``threads`` threads, each running every job ``rounds`` times on its device in turn."""
    prg = clkit.Program.from_source(SAXPY, name="<threads>")
    launches = [0] * threads

    def work(index):
        rng = np.random.default_rng(seed + index)
        device = devices[index % len(devices)]
        for r in range(rounds):
            for job in range(JOBS):
                launches[index] += one_job(device, rng, (job + index + r) % JOBS, prg)

    errors = run_threads(threads, work)
    if errors:
        index, exc = errors[0]
        raise AssertionError(f"{len(errors)} thread(s) failed; thread {index}: {exc!r}") from exc
    return sum(launches)


def real_devices():
    return [d for d in clkit.devices() if not d.simulator]


def first_real_device():
    devices = real_devices()
    if not devices:
        pytest.skip("no device besides the simulator")
    return devices[0]


def test_eight_threads_on_one_device():
    devices = real_devices()
    if not devices:
        pytest.skip("no device besides the simulator (it runs one kernel at a time)")
    launches = hammer(devices[:1], threads=8, rounds=25)
    assert launches >= 2000


def threads_on_both_devices_of_a_pair():
    """The body of test_eight_threads_on_two_devices, in a process that sees two devices."""
    devices = real_devices()
    assert len(devices) >= 2, clkit.devices()
    launches = hammer(devices[:2], threads=8, rounds=15)
    # and device="all": each call split in bands between both devices, from 4 threads at once
    rng_images = [np.random.default_rng(i).standard_normal((61, 37)).astype(np.float32)
                  for i in range(4)]

    def split(index):
        image = rng_images[index]
        for _ in range(10):
            got = ck.convolve(image, np.ones((5, 5)) / 25, mode="mirror", device="all")
            expected = scipy.ndimage.convolve(image.astype(np.float64), np.ones((5, 5)) / 25,
                                              mode="mirror")
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
            a = (image * 100).astype(np.int16)
            np.testing.assert_array_equal(ck.vector_add(a, a, device="all"), a + a)

    errors = run_threads(4, split)
    assert not errors, errors[0]
    return launches


def test_eight_threads_on_two_devices():
    devices = real_devices()
    if len(devices) >= 2:
        assert hammer(devices[:2], threads=8, rounds=15) >= 1000
        return
    pocl = [d for d in devices if d.short_platform == "pocl"]
    if not pocl:
        pytest.skip("needs two OpenCL devices, or PoCL to make two")
    kind = "pthread" if pocl[0].driver.split(".")[0] in ("1", "2", "3") else "cpu"
    env = dict(os.environ, POCL_DEVICES=f"{kind} {kind}", CLKIT_VISIBLE_DEVICES="pocl")
    env["PYTHONPATH"] = pythonpath(REPO / "tests" / "reliability", REPO / "tests" / "helpers")
    for name in ("CLKIT_DEVICE", "CLKIT_TEST_DEVICES"):
        env.pop(name, None)
    code = "import test_concurrency as t; print(t.threads_on_both_devices_of_a_pair())"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=CWD, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert int(proc.stdout.split()[-1]) >= 1000


def test_threads_on_pocl_and_one_on_the_simulator():
    devices = real_devices()
    sims = [d for d in clkit.devices() if d.simulator]
    if not devices or not sims:
        pytest.skip("needs a CPU or GPU device and the Oclgrind simulator")
    prg = clkit.Program.from_source(SAXPY, name="<pair>")
    counts = [0] * 6

    def work(index):
        rng = np.random.default_rng(100 + index)
        if index == 0:  # the simulator: small jobs, one thread
            for r in range(3):
                for job in (0, 2, 3, 4, 6, 7):
                    counts[index] += one_job(sims[0], rng, job, prg)
            return
        for r in range(12):
            for job in range(JOBS):
                counts[index] += one_job(devices[0], rng, (job + r) % JOBS, prg)

    errors = run_threads(6, work)
    assert not errors, errors[0]
    assert counts[0] >= 18 and sum(counts) >= 500


# -- the disk cache, shared by processes --------------------------------------------------------

BUILDER = textwrap.dedent('''
    import os, sys, time
    import numpy as np
    import clkit
    from clkit._platform.runtime import drop_held
    source, start, rounds = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    device = clkit.select(os.environ.get("CHECK_DEVICE"))
    clkit.runtime(device)  # the context first, so that the processes race on the build alone
    while time.time() < start:
        time.sleep(0.001)
    origins = []
    for r in range(rounds):
        drop_held()  # each round goes to the disk cache (or compiles) again
        prg = clkit.Program.from_source(source)
        origins.append(prg.build(device).origin)
        x = np.arange(4099, dtype=np.int32)
        prg.scramble(x, 7, device=device)
        expected = (np.arange(4099) * 3 + 7) ^ 0x55
        if not np.array_equal(x, expected):
            print("WRONG RESULT", origins[-1]); sys.exit(3)
    print(" ".join(origins))
''')

MIX = "__kernel void scramble(__global int* x, const int k) " \
      "{{ size_t i = get_global_id(0); x[i] = (x[i] * 3 + k) ^ 0x55; /* {nonce} */ }}"

TEARER = textwrap.dedent('''
    import sys, time
    path, good, until = sys.argv[1], open(sys.argv[1], "rb").read(), float(sys.argv[2])
    n = 0
    while time.time() < until:
        cut = [len(good) // 2, 40, len(good) - 3, 0][n % 4]
        with open(path, "wb") as f:      # not atomic: readers may see it half written
            f.write(good[:cut])
            f.flush()
            f.write(good[cut:] if n % 3 else b"\\0" * (len(good) - cut))
        n += 1
    with open(path, "wb") as f:
        f.write(good)
    print(n)
''')


def spawn(script, *args, env):
    return subprocess.Popen([sys.executable, "-c", script, *map(str, args)], env=env, cwd=CWD,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def cache_env(folder, device):
    env = child_env(CLKIT_CACHE_DIR=str(folder), CHECK_DEVICE=device.id)
    env.pop("CLKIT_CACHE", None)
    return env


def finish(procs, timeout=300):
    results = []
    for p in procs:
        out, err = p.communicate(timeout=timeout)
        results.append((p.returncode, out, err))
    return results


def test_four_processes_build_the_same_program_at_once(tmp_path):
    device = first_real_device()
    folder = tmp_path / "cache"
    source = MIX.format(nonce=f"{time.time_ns()} {os.getpid()}")
    env = cache_env(folder, device)
    start = time.time() + 3.0
    results = finish([spawn(BUILDER, source, start, 3, env=env) for _ in range(4)])
    for code, out, err in results:
        assert code == 0, f"exit {code}: {out}\n{err[-2000:]}"
    origins = [o for _, out, _ in results for o in out.split()]
    assert set(origins) <= {"compiled", "disk"} and "compiled" in origins
    entries = sorted(p.name for p in folder.iterdir())
    assert len(entries) == 1 and entries[0].endswith(".bin"), entries  # no temporary left over
    code, out, err = finish([spawn(BUILDER, source, 0, 1, env=env)])[0]
    assert code == 0 and out.split() == ["disk"], (out, err)


def test_readers_never_take_a_torn_entry(tmp_path):
    device = first_real_device()
    folder = tmp_path / "cache"
    source = MIX.format(nonce=f"torn {time.time_ns()}")
    env = cache_env(folder, device)
    code, out, err = finish([spawn(BUILDER, source, 0, 1, env=env)])[0]
    assert code == 0 and out.split() == ["compiled"], (out, err)
    (entry,) = folder.glob("*.bin")
    until = time.time() + 6.0
    tearer = spawn(TEARER, entry, until, env=env)
    readers = [spawn(BUILDER, source, 0, 25, env=env) for _ in range(3)]
    results = finish(readers + [tearer])
    origins = []
    for code, out, err in results[:3]:
        assert code == 0, f"a reader failed (exit {code}): {out}\n{err[-2000:]}"
        origins += out.split()
    assert results[3][0] == 0 and int(results[3][1]) > 10  # the entry was torn many times
    # every result was right: torn entries were refused (and rebuilt), never run
    assert "compiled" in origins and set(origins) <= {"compiled", "disk"}, origins
    # and the entry the tearer left whole at the end is loaded, not rebuilt
    code, out, err = finish([spawn(BUILDER, source, 0, 1, env=env)])[0]
    assert code == 0 and out.split() == ["disk"], (out, err)
