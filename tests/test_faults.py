"""Faults users meet: errors that cross processes.

- Every clkit exception, raised for real, survives ``pickle`` with its type, message and
  attributes (devices as id and name, driver errors as code and text), and reaches the parent
  of a ``spawn`` pool.
"""

import base64
import functools
import json
import multiprocessing
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.ndimage

import clkit
from clkit._errors import DeviceRef
from clkit.kernels import convolve

ROOT = Path(__file__).resolve().parent.parent
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
    """Run ``script`` in a new Python process using this checkout's clkit; its stdout as JSON."""
    env = dict(os.environ, **env, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                          timeout=timeout, env=env)
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
