"""clkit.dask on a distributed cluster of worker processes, one per OpenCL device."""

import os
import subprocess
import sys

import dask.array as da
import numpy as np
import pytest
from distributed import Client, LocalCluster

import clkit
import clkit.dask as cd
import clkit.kernels as ck
from clkit.dask import _blocks


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
        y = cd.gaussian_blur(cd.convolve(da.from_array(x, chunks=(16, 12)), mask, mode="wrap"),
                             2.0, mode="mirror")
        got = y.compute()
        states = client.run(_state)
    np.testing.assert_array_equal(got, ck.gaussian_blur(ck.convolve(x, mask, mode="wrap"),
                                                        2.0, mode="mirror"))
    told = sorted(spec for _, spec in states.values())
    assert told == ["pocl:0", "pocl:1"]
    used = [devices for devices, _ in states.values()]
    # each worker ran its tasks on one device, and not the other's
    assert all(len(devices) == 1 for devices in used), states
    assert len({devices[0] for devices in used}) == 2, states


def _named_worker_device():
    from distributed import get_worker
    return get_worker().name, cd.worker_device().id


def test_a_worker_of_another_cluster_picks_by_its_number(monkeypatch):
    """Without CLKIT_DEVICE, worker i takes device i modulo the default type's devices."""
    monkeypatch.delenv("CLKIT_DEVICE", raising=False)
    _blocks._resolved.clear()
    default = clkit.select()
    peers = [d for d in clkit.devices() if d.type == default.type and not d.simulator]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        picked = [client.submit(_named_worker_device, workers=[address], pure=False).result()
                  for address in client.scheduler_info()["workers"]]
    _blocks._resolved.clear()
    assert sorted(name for name, _ in picked) == [0, 1]
    for name, device in picked:
        assert device == peers[name % len(peers)].id


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
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root,
                                                                   os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0 and "no context" in out.stdout, out.stderr


def test_local_cluster_refuses_an_empty_device_list():
    with pytest.raises(ValueError, match="non-empty list of clkit devices"):
        cd.local_cluster(devices=[])
