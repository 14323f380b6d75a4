"""clkit.dask on a distributed cluster of worker processes, one per OpenCL device."""

import os
import subprocess
import sys

import dask.array as da
import numpy as np
import pytest
import scipy.ndimage as ndi
from distributed import Client, LocalCluster

import clkit
import clkit.dask as cd
import clkit.kernels as ck
from clkit.dask import _blocks

from _where import CWD, child_env


def _pocl():
    return [d for d in clkit.devices() if d.short_platform == "pocl"]


def _state():
    """What a worker did: the devices its tasks used and the device it was told."""
    return sorted(_blocks.used_devices), os.environ.get("CLKIT_DEVICE")


@pytest.mark.skipif(not _pocl(), reason="needs the PoCL CPU driver, which can show two devices")
def test_two_pocl_workers_each_on_its_own_device(rng):
    x = rng.random((64, 48), dtype=np.float32)
    mask = rng.random((4, 3))
    with cd.local_cluster(devices=["pocl:0", "pocl:1"],
                          env={"POCL_DEVICES": "pthread pthread"}) as cluster, \
            Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        def filtered(name):
            return cd.gaussian_blur(cd.convolve(da.from_array(x, chunks=(16, 12), name=name),
                                                mask, mode="wrap"), 2.0, mode="mirror")
        # once on each worker alone (graphs of their own), so that each surely runs blocks
        results = [client.compute(filtered(f"x-{i}"), workers=[address]).result()
                   for i, address in enumerate(client.scheduler_info()["workers"])]
        states = client.run(_state)
    want = ck.gaussian_blur(ck.convolve(x, mask, mode="wrap"), 2.0, mode="mirror")
    for got in results:
        np.testing.assert_array_equal(got, want)
    told = sorted(spec for _, spec in states.values())
    assert told == ["pocl:0", "pocl:1"]
    used = [devices for devices, _ in states.values()]
    # each worker ran its tasks on one device, and not the other's
    assert all(len(devices) == 1 for devices in used), states
    assert len({devices[0] for devices in used}) == 2, states


def _pid():
    return os.getpid()


@pytest.mark.skipif(not _pocl(), reason="needs the PoCL CPU driver, which can show two devices")
def test_a_cluster_starts_computes_and_closes(rng):
    """Two workers filter blocks on their devices, then the cluster closes: its worker
    processes have ended (the nanny waited for them) when the ``with`` block is left."""
    x = rng.random((96, 80), dtype=np.float32)
    b = rng.random((96, 80), dtype=np.float32)
    with cd.local_cluster(devices=["pocl:0", "pocl:1"],
                          env={"POCL_DEVICES": "pthread pthread"}) as cluster, \
            Client(cluster) as client:
        y = cd.vector_add(cd.gaussian_blur(da.from_array(x, chunks=(24, 40)), 2.0,
                                           mode="mirror"), da.from_array(b, chunks=(48, 80)))
        got = client.compute(y).result()
        pids = list(client.run(_pid).values())
    assert cluster.status.name == "closed"
    np.testing.assert_allclose(got, ndi.gaussian_filter(x, 2.0, mode="mirror") + b,
                               rtol=1e-5, atol=1e-6)
    assert len(pids) == 2
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # gone, and reaped


def _named_worker_device():
    from distributed import get_worker
    return get_worker().name, cd.worker_device().id


@pytest.mark.skipif(not _pocl(), reason="needs the PoCL CPU driver, which can show two devices")
def test_on_a_plain_local_cluster_worker_i_takes_device_i(rng, monkeypatch):
    """dask's own LocalCluster (processes, no CLKIT_DEVICE): worker i takes device i modulo
    the default type's devices, so two workers on two PoCL devices use one each."""
    monkeypatch.delenv("CLKIT_DEVICE", raising=False)
    x = rng.random((40, 30), dtype=np.float32)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      env={"POCL_DEVICES": "pthread pthread"}) as cluster, \
            Client(cluster) as client:
        picked = [client.submit(_named_worker_device, workers=[address], pure=False).result()
                  for address in client.scheduler_info()["workers"]]
        results = [client.compute(cd.gaussian_blur(da.from_array(x, chunks=10, name=f"x-{i}"),
                                                    1.5, mode="wrap"), workers=[address]).result()
                   for i, address in enumerate(client.scheduler_info()["workers"])]
        states = client.run(_state)
    for got in results:
        np.testing.assert_array_equal(got, ck.gaussian_blur(x, 1.5, mode="wrap"))
    names = {name: device for name, device in picked}
    assert sorted(names) == [0, 1] and names[0] != names[1], picked
    for devices, _ in states.values():
        assert len(devices) == 1, states  # each worker on its own device only
    assert {devices[0] for devices, _ in states.values()} == set(names.values())


def test_no_opencl_context_before_a_task_runs():
    """Importing clkit.dask and building a graph makes no context (workers make theirs)."""
    code = ("import pyopencl as cl\n"
            "made, context = [], cl.Context\n"
            "cl.Context = lambda *a, **k: made.append(a) or context(*a, **k)\n"
            "import numpy as np, dask.array as da, clkit.dask as cd\n"
            "y = cd.gaussian_blur(cd.convolve(da.ones((8, 8), chunks=4), np.ones((3, 3))), 1.0)\n"
            "assert not made, made\n"
            "y.compute(scheduler='single-threaded')\n"
            "assert len(made) == 1, made  # the check sees contexts: one, at the first task\n"
            "print('no context')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=child_env(), cwd=CWD, timeout=120)
    assert out.returncode == 0 and "no context" in out.stdout, out.stderr


def test_local_cluster_refuses_an_empty_device_list():
    with pytest.raises(ValueError, match="non-empty list of clkit devices"):
        cd.local_cluster(devices=[])
