"""A local dask cluster with one worker process per OpenCL device."""

from __future__ import annotations


def local_cluster(devices=None, *, env=None, dashboard_address=None, **worker_options):
    """Start a ``distributed`` cluster on this machine: one worker per OpenCL device.

    Each worker is a process of its own with one thread, started by ``spawn`` (a forked
    child could not use OpenCL state of its parent), and told its device by
    ``CLKIT_DEVICE`` in its environment; it makes its OpenCL context when its first task
    runs.  Worker ``i`` is named ``i``.

    Parameters
    ----------
    devices : sequence of Device or str, optional
        One worker per entry, in order: a :class:`clkit.Device` or a spec as the workers
        will read it (``"1:0"``, ``"gpu:1"``), which may name devices that only the workers'
        environment shows (``env={"POCL_DEVICES": "pthread pthread"}``).  By default every
        device :func:`clkit.devices` lists here but the Oclgrind simulator.
    env : dict, optional
        More environment variables for every worker.
    dashboard_address : str, optional
        Where to serve the scheduler's dashboard (such as ``":8787"``; it needs bokeh);
        by default none.
    **worker_options
        Passed on to each ``distributed.Nanny`` (``memory_limit``, ``local_directory``...).

    Returns
    -------
    distributed.SpecCluster
        A ``LocalCluster``'s base class, used the same way: ``distributed.Client(cluster)``,
        ``cluster.close()`` or a ``with`` block.

    Examples
    --------
    >>> import clkit.dask
    >>> from distributed import Client
    >>> with clkit.dask.local_cluster(devices=["cpu"]) as cluster:   # doctest: +SKIP
    ...     with Client(cluster) as client:
    ...         blurred = clkit.dask.gaussian_blur(image, 4.0).compute()
    """
    import logging

    import dask
    from distributed import Nanny, Scheduler, SpecCluster

    from .. import ArgumentValueError, Device
    from .. import devices as all_devices

    if devices is None:
        specs = [d.id for d in all_devices() if not d.simulator]
    else:
        specs = [d.id if isinstance(d, Device) else d for d in devices]
        if not specs or not all(isinstance(s, str) and s.strip() for s in specs):
            raise ArgumentValueError(f"local_cluster: devices must be a non-empty list of "
                                     f"clkit devices or device specs, not {devices!r}")
    scheduler = {"cls": Scheduler, "options": {
        "host": "127.0.0.1", "dashboard": dashboard_address is not None,
        "dashboard_address": dashboard_address}}
    workers = {}
    for i, spec in enumerate(specs):
        options = {"nthreads": 1, "host": "127.0.0.1", "silence_logs": logging.WARNING,
                   **worker_options,
                   "env": {**(env or {}), "CLKIT_DEVICE": spec}}
        workers[i] = {"cls": Nanny, "options": options}
    with dask.config.set({"distributed.worker.multiprocessing-method": "spawn"}):
        return SpecCluster(workers=workers, scheduler=scheduler, name="clkit",
                           silence_logs=logging.WARNING)
