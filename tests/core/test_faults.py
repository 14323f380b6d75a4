"""Faults users meet: errors that cross processes, forked workers, a device context lost.

- Every clkit exception, raised for real, survives ``pickle`` with its type, message and
  attributes (devices as id and name, driver errors as code and text), and reaches the parent
  of a ``spawn`` pool.
- A process forked after clkit used OpenCL gets a clear ``ClkitError`` at once, never a hang
  (each case runs in a child process under a timeout, so a regression fails instead of
  hanging); one forked before any OpenCL use works normally.
- A lost device context: the driver's failure codes are made to appear (a stub that fails the
  calls on one context's queues, as NVIDIA's driver does after a kernel faults), on every
  device. The failing launch says the context was lost, later calls get a new context, device
  arrays from before say so, and a driver that cannot make a new context gives a restart
  message; never the out-of-memory advice.
"""

import base64
import functools
import gc
import json
import multiprocessing
import pickle
import subprocess
import sys

import numpy as np
import pyopencl as cl
import pytest
import scipy.ndimage

import clkit
from clkit._build import tiers as _tiers
from clkit._launch import kernel as _launch
from clkit._platform import runtime as _runtime
from clkit._memory import transfer as _transfer
from clkit._errors import DeviceRef, DriverError
from clkit.kernels import convolve

from _where import CWD, child_env

FILL = "__kernel void fill(__global float* x, const float v) { x[get_global_id(0)] = v; }"
MASK = np.array([[1, 2, 0], [0.5, 1, -1], [3, 0, 1]], np.float32)


def roundtrip(exc):
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc)
    assert str(back) == str(exc) and back.args == exc.args
    return back


def raised(call, *args, **kwargs):
    try:
        call(*args, **kwargs)
    except clkit.ClkitError as exc:
        return exc
    raise AssertionError(f"{call} raised nothing")


def run_child(script, *args, timeout=120, **env):
    """Run ``script`` in a new Python process using the clkit under test; its stdout as JSON."""
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                          timeout=timeout, env=child_env(**env), cwd=CWD)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def build_broken(device):
    clkit.Program.from_source("__kernel void k( { }", name="broken.cl").build(device)


def real_device():
    return next(d for d in clkit.devices() if not d.simulator)


# -- exceptions across processes ------------------------------------------------------------

def test_argument_errors_pickle(device):
    prg = clkit.Program.from_source(FILL, device=device)
    exc = raised(prg.fill, np.zeros(4, np.int32), 1.0)
    back = roundtrip(exc)
    assert isinstance(back, TypeError) and "parameter 'x'" in str(back) and "float32" in str(back)
    back = roundtrip(raised(prg.fill, np.zeros(4, np.float32), 1.0, global_size=(1, 2, 3, 4)))
    assert isinstance(back, ValueError) and "global_size" in str(back)


def test_build_error_pickles_with_its_device_as_id_and_name(device):
    exc = raised(clkit.Program.from_source("__kernel void k( { }", name="broken.cl").build,
                 device)
    assert isinstance(exc, clkit.BuildError)
    back = roundtrip(exc)
    assert isinstance(back.device, DeviceRef)
    assert (back.device.id, back.device.name) == (device.id, device.name)
    assert str(device.id) in str(back.device)
    assert (back.file, back.options, back.log) == (exc.file, exc.options, exc.log)
    assert "broken.cl" in back.log


TBLIB = r"""
import pickle, sys
from tblib import pickling_support
import clkit

pickling_support.install()  # as dask's distributed and multiprocessing schedulers do
try:
    clkit.Program.from_source("__kernel void k( { }", name="broken.cl").build(sys.argv[1])
except clkit.BuildError as exc:
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is clkit.BuildError and str(back) == str(exc), back
    cause = back.__cause__
    print(type(cause).__module__, cause.code, cause.routine)
"""


def test_errors_pickle_with_their_driver_error_where_tblib_pickles_causes(device):
    # tblib pickles every exception's __cause__ and __context__ as they are: here the pyopencl
    # error the BuildError was raised from, which holds a record pyopencl does not pickle
    pytest.importorskip("tblib", reason="tblib comes with dask's distributed (the test extra)")
    done = subprocess.run([sys.executable, "-c", TBLIB, device.id], capture_output=True,
                          text=True, timeout=300, env=child_env(), cwd=CWD)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["pyopencl._cl", "-11", "clBuildProgram"]


def test_unknown_device_pickles():
    back = roundtrip(raised(clkit.select, "no-such-device-anywhere"))
    assert isinstance(back, LookupError) and "the visible devices are" in str(back)


def test_out_of_memory_refusal_pickles(device):
    exc = raised(clkit.empty, device.max_alloc + 1, np.uint8, device=device)
    back = roundtrip(exc)
    assert isinstance(back, clkit.OutOfDeviceMemoryError) and isinstance(back, MemoryError)
    assert back.device == DeviceRef(device.id, device.name)
    assert back.code is None and not back.context_lost


def test_no_opencl_error_pickles_from_a_process_without_drivers(tmp_path):
    script = ("import base64, json, pickle, clkit\n"
              "try:\n    clkit.devices()\n"
              "except clkit.ClkitError as exc:\n"
              "    print(json.dumps(base64.b64encode(pickle.dumps(exc)).decode()))\n")
    blob = run_child(script, OCL_ICD_VENDORS=str(tmp_path), OCL_ICD_FILENAMES="")
    back = pickle.loads(base64.b64decode(blob))
    assert type(back) is clkit.NoOpenCLError and "pocl-opencl-icd" in str(back)


def test_errors_reach_the_parent_of_a_spawn_pool_and_the_pool_works():
    dev = real_device()
    rng = np.random.default_rng(5)
    images = [rng.random((20 + i, 17), dtype=np.float32) for i in range(4)]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.map(functools.partial(convolve, mask=MASK, device=dev.id), images)
        with pytest.raises(clkit.ArgumentTypeError, match="complex") as info:
            pool.apply(convolve, (np.zeros((4, 4), np.complex64), MASK))
        with pytest.raises(clkit.BuildError) as build:
            pool.apply(build_broken, (dev.id,))
    for image, result in zip(images, results):
        np.testing.assert_allclose(result, scipy.ndimage.convolve(image, MASK, mode="reflect"),
                                   rtol=1e-5, atol=1e-5)
    assert "convolve" in str(info.value)
    assert build.value.device == DeviceRef(dev.id, dev.name)


# -- fork ----------------------------------------------------------------------------------

FORK_AFTER_USE = r"""
import json, os, pickle, sys, time
import numpy as np
import clkit
from clkit.kernels import convolve
dev = sys.argv[1]
image = np.ones((8, 8), np.float32)
prg = clkit.Program.from_source(
    "__kernel void fill(__global float* x, const float v) { x[get_global_id(0)] = v; }")
x = clkit.to_device(np.zeros(8, np.float32), device=dev)
prg.fill(x, 1.0)
convolve(image, np.ones((3, 3), np.float32), device=dev)        # the parent uses OpenCL
calls = {
    "convolve": lambda: convolve(image, np.ones((3, 3), np.float32), device=dev),
    "kernel": lambda: prg.fill(x, 2.0),                         # everything cached already
    "to_device": lambda: clkit.to_device(image, device=dev),
    "devices": clkit.devices,
}
report = {}
for name, call in calls.items():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        start = time.perf_counter()
        try:
            call()
            outcome = ["ran", "", 0.0]
        except Exception as exc:
            again = pickle.loads(pickle.dumps(exc))
            outcome = [type(again).__name__, str(again), time.perf_counter() - start]
        os.write(write, json.dumps(outcome).encode())
        os._exit(0)
    os.close(write)
    data = b"".join(iter(lambda: os.read(read, 1 << 16), b""))
    os.waitpid(pid, 0)
    report[name] = json.loads(data)
print(json.dumps(report))
"""


def test_a_child_forked_after_opencl_use_gets_a_clear_error_at_once():
    report = run_child(FORK_AFTER_USE, real_device().id, timeout=60)
    for name, (kind, message, seconds) in report.items():
        assert kind == "ClkitError", (name, kind, message)
        assert "forked" in message and "'spawn'" in message and "forkserver" in message
        assert seconds < 1.0, (name, seconds)


FORK_POOL = r"""
import json, multiprocessing, sys
import numpy as np
import clkit
from clkit.kernels import convolve
dev = sys.argv[1]
image = np.ones((8, 8), np.float32)
convolve(image, np.ones((3, 3), np.float32), device=dev)
with multiprocessing.get_context("fork").Pool(2) as pool:
    try:
        pool.starmap_async(convolve, [(image, np.ones((3, 3), np.float32))] * 4).get(timeout=30)
        print(json.dumps(["ran", ""]))
    except Exception as exc:
        print(json.dumps([type(exc).__name__, str(exc)]))
"""


def test_a_fork_pool_after_opencl_use_reports_the_error_instead_of_hanging():
    kind, message = run_child(FORK_POOL, real_device().id, timeout=90)
    assert kind == "ClkitError" and "forked" in message and "'spawn'" in message


FORK_BEFORE_USE = r"""
import json, os, sys
import numpy as np
import clkit                                                    # no OpenCL call yet
from clkit.kernels import convolve
image = np.arange(130, dtype=np.float32).reshape(10, 13)
mask = np.array([[1, 2, 0], [0.5, 1, -1], [3, 0, 1]], np.float32)
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    result = convolve(image, mask, device=sys.argv[1])
    os.write(write, json.dumps(result.tolist()).encode())
    os._exit(0)
os.close(write)
data = b"".join(iter(lambda: os.read(read, 1 << 16), b""))
os.waitpid(pid, 0)
print(json.dumps(json.loads(data)))
"""


def test_a_child_forked_before_any_opencl_use_works_normally():
    result = np.array(run_child(FORK_BEFORE_USE, real_device().id, timeout=60), np.float32)
    image = np.arange(130, dtype=np.float32).reshape(10, 13)
    np.testing.assert_allclose(result, scipy.ndimage.convolve(image, MASK), rtol=1e-6)


# -- a lost device context ------------------------------------------------------------------

@pytest.fixture
def restore_runtimes(monkeypatch):
    """Put clkit's runtimes back afterwards: these tests make it drop contexts that work.

    No background build runs meanwhile: its launches, on any device, would meet the failing
    driver calls the tests put in place, and its builds the runtimes they swap."""
    monkeypatch.setenv("CLKIT_BACKGROUND_BUILDS", "0")
    _tiers.wait_idle()
    names = ("_runtimes", "_by_queue", "_lost", "_losses", "_dead")
    saved = {name: type(getattr(_runtime, name))(getattr(_runtime, name)) for name in names}
    held = {rt: dict(rt._held) for rt in _runtime._runtimes.values()}  # builds, pools...
    yield
    for name, value in saved.items():
        current = getattr(_runtime, name)
        current.clear()
        (current.extend if isinstance(current, list) else current.update)(value)
    for rt in _runtime._runtimes.values():
        rt.lost = None
        rt._held.clear()
        rt._held.update(held.get(rt, {}))


def fail_driver(monkeypatch, code, dead, *, on_wait=False):
    """Make every call on a queue that ``dead(queue)`` picks fail with ``code``.

    ``on_wait``: kernels are enqueued and run, and waiting for them fails (NVIDIA reports a
    kernel's fault so, as -9999 from clWaitForEvents); else the enqueue itself fails.
    """
    def error(routine):
        return cl.RuntimeError(cl._cl._ErrorRecord(routine, code, "made to fail by the test"))

    class FaultedEvent:
        def __init__(self, event):
            self.event = event

        def wait(self):
            self.event.wait()
            raise error("clWaitForEvents")

    enqueue, copy, map_buffer = _launch._enqueue, cl.enqueue_copy, cl.enqueue_map_buffer

    def failing_enqueue(queue, *args):
        if not dead(queue):
            return enqueue(queue, *args)
        if on_wait:
            return FaultedEvent(enqueue(queue, *args))
        raise error("clEnqueueNDRangeKernel")

    def failing_copy(queue, *args, **kwargs):
        if dead(queue):
            raise error("clEnqueueReadBuffer")
        return copy(queue, *args, **kwargs)

    def failing_map(queue, *args, **kwargs):
        if dead(queue):
            raise error("clEnqueueMapBuffer")
        return map_buffer(queue, *args, **kwargs)

    monkeypatch.setattr(_launch, "_enqueue", failing_enqueue)
    monkeypatch.setattr(cl, "enqueue_copy", failing_copy)
    monkeypatch.setattr(cl, "enqueue_map_buffer", failing_map)


def context_of(rt):
    return lambda queue: queue.context == rt.context


def check_context_lost(exc, kernel):
    assert type(exc) is clkit.LaunchError and exc.context_lost
    text = str(exc)
    assert f"kernel {kernel}" in text and "context was lost" in text and "clkit check" in text
    assert "memory" not in text  # none of the out-of-memory advice


def used(device):
    """The device's runtime, a program used on it, and a device array made there."""
    prg = clkit.Program.from_source(FILL, device=device)
    x = clkit.to_device(np.zeros(16, np.float32), device=device)
    prg.fill(x, 1.0)
    return clkit.runtime(device), prg, x


def test_a_fault_reported_on_wait_loses_the_context_and_the_next_calls_work(
        device, monkeypatch, restore_runtimes):
    rt, prg, before = used(device)
    fail_driver(monkeypatch, -9999, context_of(rt), on_wait=True)
    exc = raised(prg.fill, before, 2.0)
    check_context_lost(exc, "fill")
    assert exc.code == -9999 and exc.kernel == "fill" and exc.device == device
    assert "-9999" in str(exc) and rt.lost
    back = roundtrip(exc)  # a launch failure, with the driver's code and text
    assert back.context_lost and back.code == -9999 and back.kernel == "fill"
    # the cause: a DriverError, or pyopencl's error itself where tblib pickles causes as they
    # are (dask's schedulers install it; then tests/dask imported it)
    assert isinstance(back.__cause__, (DriverError, cl.Error)) and back.__cause__.code == -9999
    assert "clWaitForEvents" in str(back.__cause__)

    fresh = clkit.runtime(device)
    assert fresh is not rt and not fresh.lost
    rng = np.random.default_rng(3)
    for _ in range(10):
        image = rng.random((9, 14), dtype=np.float32)
        np.testing.assert_allclose(convolve(image, MASK, device=device),
                                   scipy.ndimage.convolve(image, MASK), rtol=1e-5, atol=1e-5)
    after = clkit.to_device(np.zeros(16, np.float32), device=device)
    prg.fill(after, 3.0)
    np.testing.assert_array_equal(after.get(), 3.0)

    for call in (lambda: prg.fill(before, 4.0), lambda: prg.fill(before, 4.0, device=device),
                 lambda: convolve(clkit.to_device(np.ones((4, 4), np.float32), device=device),
                                  MASK, out=before.reshape(4, 4)),
                 lambda: convolve(before.reshape(4, 4), MASK)):
        stale = raised(call)
        assert type(stale) is clkit.LaunchError and stale.context_lost
        assert "device array was made in a device context" in str(stale)
        assert "kernel fill failed" in str(stale) and "make it again" in str(stale)


def test_after_a_lost_context_every_kind_of_call_runs_on_the_new_runtime(
        device, monkeypatch, restore_runtimes):
    """What the lost runtime held (builds, plans, masks on the device, pools, the queues of
    clkit.map's lanes and of bands) goes with it: the library, clkit.map and a user kernel
    all work on the new runtime, in its context, with the same results."""
    from clkit.kernels import gaussian_blur
    rng = np.random.default_rng(5)
    images = [rng.random((11, 17), dtype=np.float32) for _ in range(4)]

    def blurred(image, device):
        contexts.add(clkit.runtime(device).queue.context.int_ptr)
        return gaussian_blur(image, 1.5, device=device)

    def everything(rt, prg):
        """Every kind of call once, each checked against scipy or numpy."""
        for image in images:
            np.testing.assert_allclose(convolve(image, MASK, device=device),
                                       scipy.ndimage.convolve(image, MASK), rtol=1e-5, atol=1e-5)
        expected = [scipy.ndimage.gaussian_filter(x.astype(np.float64), 1.5) for x in images]
        np.testing.assert_allclose(gaussian_blur(images[0], 1.5, device=device), expected[0],
                                   rtol=1e-5, atol=1e-6)
        on_device = clkit.to_device(images[1], device=device)
        np.testing.assert_allclose(gaussian_blur(on_device, 1.5).get(), expected[1],
                                   rtol=1e-5, atol=1e-6)
        for got, want in zip(clkit.map(blurred, images, device=device), expected):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        assert contexts == {rt.context.int_ptr}  # the lanes' queues are the runtime's
        x = clkit.to_device(np.zeros(16, np.float32), device=device)
        prg.fill(x, 6.0)
        np.testing.assert_array_equal(x.get(), 6.0)

    contexts = set()
    rt, prg, before = used(device)
    everything(rt, prg)  # the old runtime holds plans, masks, pools and lanes now
    fail_driver(monkeypatch, -9999, context_of(rt), on_wait=True)
    check_context_lost(raised(prg.fill, before, 2.0), "fill")
    assert rt.lost

    fresh = clkit.runtime(device)
    assert fresh is not rt and not fresh.lost
    contexts = set()
    everything(fresh, prg)


def test_a_lost_context_takes_its_pinned_result_blocks_along(restore_runtimes, discrete,
                                                            monkeypatch):
    """The pinned blocks that GPU results come home in belong to their context: once it is
    lost its idle blocks are unmapped and leave the budget at once, a result still held keeps
    its values and its block goes when the result does (not back to a pool), and the new
    context's results get blocks of their own."""
    from clkit._memory import pinned as _pinned
    device, _ = discrete
    image = np.random.default_rng(7).random((600, 700), dtype=np.float32)
    expected = scipy.ndimage.convolve(image, MASK)
    block = -(-image.nbytes // _pinned._GRAIN) * _pinned._GRAIN

    def blocks_of(context):
        return sum(ctx == context for _, _, ctx in list(_pinned._regions.values()))

    rt, prg, before = used(device)
    rt.drop_held()  # no idle blocks of earlier calls
    gc.collect()
    others, held = blocks_of(rt.context), _pinned._budget.held  # pinned arrays still alive
    idle, kept = (convolve(image, MASK, device=device) for _ in range(2))
    for result in (idle, kept):
        assert _pinned.pinned_context(result) == rt.context
        np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)
    del idle, result
    gc.collect()
    assert blocks_of(rt.context) == others + 2 and _pinned._budget.held == held + 2 * block

    fail_driver(monkeypatch, -9999, context_of(rt), on_wait=True)
    check_context_lost(raised(prg.fill, before, 2.0), "fill")
    assert rt.lost
    gc.collect()
    assert blocks_of(rt.context) == others + 1 and _pinned._budget.held == held + block
    np.testing.assert_allclose(kept, expected, rtol=1e-5, atol=1e-5)
    del kept
    gc.collect()
    assert blocks_of(rt.context) == others and _pinned._budget.held == held

    fresh = clkit.runtime(device)
    again = convolve(image, MASK, device=device)
    assert fresh is not rt and _pinned.pinned_context(again) == fresh.context
    np.testing.assert_allclose(again, expected, rtol=1e-5, atol=1e-5)


def test_out_of_resources_with_a_working_context_is_out_of_memory(
        device, monkeypatch, restore_runtimes):
    rt, prg, x = used(device)
    enqueue = _launch._enqueue

    def refusing(queue, *args):
        raise cl.RuntimeError(cl._cl._ErrorRecord("clEnqueueNDRangeKernel", -5, "refused"))

    monkeypatch.setattr(_launch, "_enqueue", refusing)
    exc = raised(prg.fill, x, 2.0)
    assert type(exc) is clkit.OutOfDeviceMemoryError and not exc.context_lost
    assert "ran out of memory or resources" in str(exc) and "fewer work-items" in str(exc)
    monkeypatch.setattr(_launch, "_enqueue", enqueue)
    assert clkit.runtime(device) is rt and not rt.lost
    prg.fill(x, 5.0)
    np.testing.assert_array_equal(x.get(), 5.0)


@pytest.mark.parametrize("code", [-5, -36, -9999])
def test_a_failing_enqueue_in_a_lost_context_says_so(device, monkeypatch, restore_runtimes,
                                                      code):
    rt, prg, _ = used(device)
    fail_driver(monkeypatch, code, context_of(rt))
    exc = raised(prg.fill, np.zeros(4, np.float32), 2.0)
    check_context_lost(exc, "fill")
    assert not isinstance(exc, MemoryError) and exc.code == code
    out = np.zeros(8, np.float32)
    prg.fill(out, 7.0)
    np.testing.assert_array_equal(out, 7.0)


def test_a_driver_that_cannot_make_a_new_context_says_to_restart(
        device, monkeypatch, restore_runtimes):
    _, prg, _ = used(device)
    fail_driver(monkeypatch, -9999, lambda queue: queue.device == device.cl_device, on_wait=True)
    check_context_lost(raised(prg.fill, np.zeros(4, np.float32), 2.0, device=device), "fill")
    for call in (lambda: prg.fill(np.zeros(4, np.float32), 3.0, device=device),
                 lambda: convolve(np.ones((5, 5), np.float32), MASK, device=device),
                 lambda: clkit.runtime(device)):
        exc = raised(call)
        assert type(exc) is clkit.LaunchError and exc.context_lost
        assert "cannot make a new one" in str(exc) and "restart the process" in str(exc)
        assert str(device) in str(exc) and "memory" not in str(exc)


def test_a_copy_in_a_lost_context_says_so(device, monkeypatch, restore_runtimes):
    rt, _, x = used(device)
    fail_driver(monkeypatch, -9999, context_of(rt))
    host = np.zeros(16, np.float32)
    exc = raised(_transfer.download, rt, x, host)
    assert type(exc) is clkit.LaunchError and exc.context_lost and exc.code == -9999
    assert "copying 64 bytes from the device" in str(exc) and "context was lost" in str(exc)
    exc = raised(_transfer.upload, rt, host, out=x)
    assert type(exc) is clkit.LaunchError and exc.context_lost
    assert "copying 64 bytes to the device" in str(exc) and "memory" not in str(exc)
