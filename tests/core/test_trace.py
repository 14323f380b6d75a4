"""clkit.trace(): the kernels and transfers of a block, their device times, the JSON and the plot.

The expected sequences are written out from what each call has to move: a numpy image goes
to the device and back (or, where the device shares memory with the host, is used in place
and only mapped back), a user kernel's numpy argument is copied at buffer creation and read
back after the kernel, device arrays stay put.
"""

import contextlib
import json
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from scipy import ndimage

import clkit
from clkit._build import tiers as _tiers
from clkit._trace import trace as _trace
from clkit._memory import transfer as _transfer
from clkit.kernels import gaussian_blur, vector_add

from _where import CWD, REPO, child_env

TWICE = "__kernel void twice(__global float* a) { a[get_global_id(0)] *= 2.0f; }"
SMALL_ARGUMENT = 1024  # masks and tables a library kernel takes as numpy arguments are smaller


def main_events(t):
    """The trace's events but the small tables (masks, row maps) copied at buffer creation."""
    kept = []
    for e in t.events:
        if e["name"] == "h2d (buffer creation)" and e["bytes"] < SMALL_ARGUMENT:
            continue
        kept.append(e)
    return kept


def test_a_known_sequence_gives_exactly_its_events(device, rng):
    image = rng.random((61, 67), dtype=np.float32)  # 16348 bytes
    x = rng.random(1000, dtype=np.float32)  # 4000 bytes
    twice = clkit.Program.from_source(TWICE).twice
    # The separable Gaussian's own kernels, not the generic one that answers until they are
    # built; built outside the trace so that the block's host times are the calls' own.
    with _tiers.tier("specialised"):
        gaussian_blur(image, 2.0, device=device), twice(x.copy(), device=device)
        vector_add(x, x, device=device)
        wall_clock = time.time_ns() - time.perf_counter_ns()
        with clkit.trace() as t:
            blurred = gaussian_blur(image, 2.0, device=device)
            doubled = _transfer.aligned_empty(x.shape, x.dtype)  # used in place on CPU drivers
            doubled[...] = x
            twice(doubled, device=device)
            total = vector_add(x, x, device=device)
        # Oclgrind times commands with the wall clock (gettimeofday), which clkit maps onto the
        # host's monotonic one: time synchronisation that steps or slews the wall clock during
        # the block moves the simulator's times by as much (seen once in a test run; a step of 3 ms
        # maps the first commands 1.1 ms early).
        stepped_ms = abs(time.time_ns() - time.perf_counter_ns() - wall_clock) / 1e6 \
            if device.simulator else 0.0
    np.testing.assert_allclose(blurred, ndimage.gaussian_filter(image, 2.0), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(doubled, 2 * x)
    np.testing.assert_array_equal(total, x + x)

    got = [(e["kind"], e["name"], e["bytes"]) for e in main_events(t)]
    user = [("h2d", "h2d (buffer creation)", 4000), ("kernel", "twice", 4000), ("d2h", "d2h", 4000)]
    # a 17 x 17 Gaussian: one fused kernel on GPUs, a row and a column pass elsewhere
    blur = [("kernel", "convolve_fused", None)] if device.type == "gpu" else \
        [("kernel", "convolve_rows", None), ("kernel", "convolve_cols", None)]
    if device.unified_memory:  # numpy inputs used in place, outputs mapped back
        user = [("kernel", "twice", 4000), ("d2h", "d2h (map)", None)]
        want = [*blur, ("d2h", "d2h (map)", None), *user,
                ("kernel", "vector_add", 12000), ("d2h", "d2h (map)", None)]
    else:
        want = [("h2d", "h2d", 16348), *blur, ("d2h", "d2h", 16348), *user,
                ("h2d", "h2d", 4000), ("h2d", "h2d", 4000), ("kernel", "vector_add", 12000),
                ("d2h", "d2h", 4000)]
    # A convolution kernel's bytes also count its mask and row map: compare those apart.
    assert [g if g[0] != "kernel" or g[1] in ("twice", "vector_add") else g[:2] + (None,)
            for g in got] == want
    assert all(e["device"] == device.id and e["thread"] == threading.current_thread().name
               for e in t.events), t.events
    assert all(e["kind"] == "h2d" and e["start_ms"] is None for e in t.events
               if e["name"] == "h2d (buffer creation)"), t.events

    timed = [e for e in t.events if e["start_ms"] is not None]
    # Oclgrind's clock ticks in microseconds: a small copy there may last no tick.
    assert all(e["end_ms"] > e["start_ms"] or device.simulator and e["kind"] != "kernel"
               and e["end_ms"] == e["start_ms"] for e in timed), timed
    # Inside the block. The device's clock is mapped with the latest offset its enqueues allow,
    # so a time is never early and at most the bracket's width late (wider on a loaded host).
    early_ms = 0.002 + stepped_ms
    late_ms = t._tracks[1].spread[device] / 1e6 + early_ms
    assert all(-early_ms <= e["start_ms"] and e["end_ms"] <= t.wall_ns / 1e6 + late_ms
               for e in timed), (timed, t.wall_ns, late_ms, stepped_ms)
    for queue in {e["queue"] for e in timed}:
        on_queue = sorted((e for e in timed if e["queue"] == queue), key=lambda e: e["start_ms"])
        for a, b in zip(on_queue, on_queue[1:]):
            assert a["end_ms"] <= b["start_ms"] + 1e-6 + stepped_ms, (a, b)  # in-order queue
    assert sum(e["end_ms"] - e["start_ms"] for e in timed) <= t.wall_ns / 1e6 + stepped_ms
    # Events are listed in the order enqueued, which on one queue is the order they ran.
    queue0 = [e for e in timed if e["queue"] == 0]
    assert all(a["start_ms"] <= b["start_ms"] + stepped_ms for a, b in zip(queue0, queue0[1:])), \
        queue0


def test_staged_copies_give_one_event_per_chunk(device, rng):
    import pyopencl as cl
    rt = clkit.runtime(device)
    host = rng.integers(0, 255, 5000, dtype=np.uint8)
    buf = cl.Buffer(rt.context, cl.mem_flags.READ_WRITE, host.nbytes)
    back = np.zeros_like(host)
    staging = _transfer.Staging(rt.context, rt.queue, chunk=1024, slots=2)
    with clkit.trace() as t:
        staging.upload(rt.queue, buf, host)
        staging.download(rt.queue, buf, back)
    np.testing.assert_array_equal(back, host)
    chunks = [1024] * 4 + [904]
    assert [(e["kind"], e["bytes"]) for e in t.events] == \
        [("h2d", n) for n in chunks] + [("d2h", n) for n in chunks]
    assert all(e["queue"] == 0 and e["end_ms"] >= e["start_ms"] for e in t.events)


def test_a_trace_that_has_not_run_says_how_to_run_it():
    t = clkit.trace()
    assert repr(t) == "<clkit.Trace 0 commands, not run>"
    with pytest.raises(clkit.ClkitError, match=r"has not run: use it as `with clkit.trace\(\)"):
        t.summary()


def test_summary_rows_count_the_calls(device, rng):
    x = rng.random(4096, dtype=np.float32)
    a = clkit.to_device(x, device=device)
    vector_add(a, a)
    with clkit.trace() as t:
        for _ in range(3):
            vector_add(a, a)
        back = clkit.to_device(x, device=device)
    np.testing.assert_array_equal(back.get(), x)
    lines = t.summary().splitlines()
    assert lines[0].startswith("clkit trace: 4 commands in ")
    header = lines[1].split()
    assert header == ["device", "kind", "name", "calls", "total", "ms", "mean", "ms", "GB/s",
                      "%", "wall", "host", "ms"]
    row = next(r.split() for r in lines if " vector_add " in r)
    assert row[:4] == [device.id, "kernel", "vector_add", "3"]
    kernels = [e for e in t.events if e["kind"] == "kernel"]
    total_ms = sum(e["end_ms"] - e["start_ms"] for e in kernels)
    assert float(row[4]) == pytest.approx(total_ms, abs=2e-3)
    gbs = 3 * 3 * x.nbytes / (total_ms * 1e6)  # three arrays per call, each counted once
    assert float(row[6]) == pytest.approx(gbs, rel=0.05, abs=0.01)
    upload = next(r.split() for r in lines if " h2d " in r)
    assert upload[:4] == [device.id, "h2d", "h2d", "1"]
    assert any(r.startswith(f"device {device.id} queue 0: busy ") and "idle waiting for the host"
               in r for r in lines)


def test_the_json_has_the_trace_event_fields(device, tmp_path):
    x = np.arange(1000, dtype=np.float32)
    with clkit.trace() as t:
        vector_add(x, x, device=device)
    path = tmp_path / "trace.json"
    t.save(path)
    data = json.loads(path.read_text())
    complete = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert complete, data
    for e in complete:
        assert {"ph", "ts", "dur", "pid", "tid", "name"} <= set(e)
        assert e["dur"] >= 0 and e["ts"] >= 0
    names = {(e["pid"], e["tid"], e["name"]): e["args"]["name"]
             for e in data["traceEvents"] if e["ph"] == "M"}
    assert names[0, 0, "process_name"] == "host"
    kernel = next(e for e in complete if e["cat"] == "kernel")
    assert kernel["name"] == "vector_add" and kernel["pid"] != 0
    assert names[kernel["pid"], 0, "process_name"] == f"device {device}"
    assert names[kernel["pid"], kernel["tid"], "thread_name"] == "queue 0"
    host = [e for e in complete if e["pid"] == 0]
    assert [e["name"] for e in host] == [e["name"] for e in t.events]


def test_threads_and_queues_get_their_own_tracks(device, tmp_path):
    twice = clkit.Program.from_source(TWICE).twice
    rt = clkit.runtime(device)
    queues = [rt.new_queue(), rt.new_queue()]
    arrays = [clkit.to_device(np.full(512, i + 1, np.float32), device=device) for i in range(2)]
    twice(arrays[0], device=device)
    arrays[0].set(np.full(512, 1, np.float32))
    barrier = threading.Barrier(2)
    # Oclgrind runs one kernel at a time: there the threads take turns.
    turns = threading.Lock() if device.simulator else contextlib.nullcontext()

    def work(i):
        barrier.wait()
        for _ in range(3):
            with turns:
                twice(arrays[i], queue=queues[i])

    with clkit.trace() as t:
        threads = [threading.Thread(target=work, args=(i,), name=f"worker-{i}") for i in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    for i in range(2):
        np.testing.assert_array_equal(arrays[i].get(), np.full(512, (i + 1) * 8, np.float32))
    by_thread = {}
    for e in t.events:
        by_thread.setdefault(e["thread"], set()).add(e["queue"])
    assert set(by_thread) == {"worker-0", "worker-1"}
    assert len(t.events) == 6
    q0, q1 = by_thread["worker-0"], by_thread["worker-1"]
    assert len(q0) == len(q1) == 1 and q0 != q1 and 0 not in q0 | q1  # not the runtime's queue
    data = t.to_json()["traceEvents"]
    host_tids = {e["tid"] for e in data if e["ph"] == "X" and e["pid"] == 0}
    device_tids = {e["tid"] for e in data if e["ph"] == "X" and e["pid"] != 0}
    assert len(host_tids) == 2 and device_tids == q0 | q1


def test_device_all_puts_each_band_on_its_device():
    usable = [d for d in clkit.devices() if not d.simulator]
    sims = [d for d in clkit.devices() if d.simulator]
    devices = usable if len(usable) >= 2 else usable[:1] + sims[:1]
    if len(devices) < 2:
        pytest.skip("needs two OpenCL devices (e.g. POCL_DEVICES='pthread pthread')")
    spec = "all" if devices == usable else devices
    a = np.arange(1 << 16, dtype=np.float32)
    with clkit.trace() as t:
        total = vector_add(a, a, device=spec)
    np.testing.assert_array_equal(total, a + a)
    kernels = [e for e in t.events if e["kind"] == "kernel"]
    assert {e["device"] for e in kernels} == {d.id for d in devices}
    assert all(0 < e["bytes"] <= 3 * a.nbytes for e in kernels)  # each band is a part
    processes = {e["pid"]: e["args"]["name"] for e in t.to_json()["traceEvents"]
                 if e["ph"] == "M" and e["name"] == "process_name"}
    for e in t.to_json()["traceEvents"]:
        if e["ph"] == "X" and e["pid"] != 0:
            assert processes[e["pid"]].startswith(f"device {e['args']['device']} ")


def test_nothing_is_recorded_outside_a_trace(device):
    x = np.ones(100, np.float32)
    vector_add(x, x, device=device)
    with clkit.trace() as t:
        pass
    vector_add(x, x, device=device)
    assert t.events == [] and _trace.active == ()
    with clkit.trace() as outer:
        vector_add(x, x, device=device)
        with clkit.trace() as inner:
            vector_add(x, x, device=device)
        vector_add(x, x, device=device)
    vector_add(x, x, device=device)
    kernels = [e["name"] for e in outer.events if e["kind"] == "kernel"]
    assert kernels == ["vector_add"] * 3
    assert [e["name"] for e in inner.events if e["kind"] == "kernel"] == ["vector_add"]
    assert _trace.active == ()
    with pytest.raises(clkit.ClkitError, match="this trace has already recorded a block; "
                                               r"start another with clkit.trace\(\)"):
        with outer:
            pass
    assert _trace.active == ()


def test_a_full_trace_counts_what_it_drops(device):
    twice = clkit.Program.from_source(TWICE).twice
    a = clkit.to_device(np.ones(64, np.float32), device=device)
    with clkit.trace(limit=3) as t:
        for _ in range(5):
            twice(a)
    np.testing.assert_array_equal(a.get(), np.full(64, 32, np.float32))
    assert len(t.events) == 3 and t.dropped == 2
    assert "2 later commands were not recorded (the trace keeps 3; pass " \
           "clkit.trace(limit=...) for more)" in t.summary()
    assert t.to_json()["otherData"]["dropped"] == 2


@pytest.mark.parametrize("limit", [0, -1, 2.5, True])
def test_bad_limit(limit):
    with pytest.raises(ValueError, match="trace: limit must be a positive number of records"):
        clkit.trace(limit=limit)


def test_plot_writes_an_image(device, tmp_path):
    x = np.ones(1000, np.float32)
    with clkit.trace() as t:
        vector_add(x, x, device=device)
    path = tmp_path / "timeline.png"
    t.plot(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_clkit_trace_environment_writes_the_file_at_exit(tmp_path):
    script = tmp_path / "job.py"
    script.write_text("import numpy as np\nfrom clkit.kernels import vector_add\n"
                      "x = np.ones(100, np.float32)\nprint(vector_add(x, x).sum())\n")
    out = tmp_path / "whole.json"
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=child_env(CLKIT_TRACE=str(out)), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "200.0"
    events = json.loads(out.read_text())["traceEvents"]
    kernels = [e["name"] for e in events if e["ph"] == "X" and e["cat"] == "kernel"]
    assert kernels == ["vector_add"]


def clkit_trace(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "clkit", "trace", *map(str, args)],
                          capture_output=True, text=True, env=child_env(), cwd=cwd or CWD,
                          timeout=600)


def test_clkit_trace_runs_the_grayscale_tutorial(tmp_path):
    out, png = tmp_path / "trace.json", tmp_path / "timeline.png"
    proc = clkit_trace(REPO / "examples" / "04_grayscale.py", "-o", out, "--plot", png)
    assert proc.returncode == 0, proc.stderr
    assert "all results agree" in proc.stdout
    lines = proc.stderr.splitlines()
    row = next(r.split() for r in lines if " grayscale " in r)
    # One call to compile, five timed with numpy frames, one to warm up and five timed on
    # the device.
    assert row[1:4] == ["kernel", "grayscale", "12"], proc.stderr
    assert f"clkit trace: wrote {out} (open it in https://ui.perfetto.dev or " \
           "chrome://tracing)" in lines
    events = json.loads(out.read_text())["traceEvents"]
    kernels = [e for e in events if e["ph"] == "X" and e["cat"] == "kernel"]
    assert [e["name"] for e in kernels] == ["grayscale"] * 12
    frame = 1920 * 1080 * 3
    uploads = [e["args"]["bytes"] for e in events if e["ph"] == "X" and e["cat"] == "h2d"]
    assert frame in uploads or sum(uploads) >= frame  # clkit.to_device(frame), maybe in chunks
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_clkit_trace_keeps_the_scripts_arguments_and_status(tmp_path):
    script = tmp_path / "job.py"
    script.write_text("import sys\nimport numpy as np\nfrom clkit.kernels import vector_add\n"
                      "print('args', sys.argv[1:], __name__)\n"
                      "vector_add(np.ones(8, np.float32), np.ones(8, np.float32))\n"
                      "if '--fail' in sys.argv:\n    raise RuntimeError('the script failed')\n"
                      "sys.exit(3)\n")
    out = tmp_path / "t.json"
    proc = clkit_trace(script, "a", "-o", out, "b", "--", "-o", "c", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout.strip() == "args ['a', 'b', '-o', 'c'] __main__"
    assert any(" vector_add " in line for line in proc.stderr.splitlines())
    assert out.is_file()
    # a -- right after the script, or before it: everything after it is the script's
    for args in ([script, "--", "-o", "x.json"], ["--", script, "-o", "x.json"]):
        proc = clkit_trace(*args, cwd=tmp_path)
        assert proc.stdout.strip() == "args ['-o', 'x.json'] __main__", (args, proc.stderr)
        assert not (tmp_path / "x.json").exists()
    proc = clkit_trace(cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.strip() == "clkit: error: give the Python " \
                                                           "script to run: clkit trace " \
                                                           "SCRIPT.py [ARGS...]"
    proc = clkit_trace(script, "--fail", cwd=tmp_path)
    assert proc.returncode == 1
    assert "RuntimeError: the script failed" in proc.stderr
    assert "runpy" not in proc.stderr and " vector_add " in proc.stderr


def test_clkit_trace_bad_input(tmp_path):
    proc = clkit_trace(tmp_path / "missing.py")
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"clkit: error: {tmp_path / 'missing.py'}: no such script"
    script = tmp_path / "job.py"
    script.write_text("print('ran')\n")
    proc = clkit_trace(script, "-o", tmp_path / "nowhere" / "t.json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == f"clkit: error: -o {tmp_path / 'nowhere' / 't.json'}: the " \
                                  f"folder {tmp_path / 'nowhere'} does not exist"
