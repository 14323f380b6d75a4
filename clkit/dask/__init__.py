"""clkit's filters on dask arrays, block by block on each worker's OpenCL device.

A dask array given to a filter here returns a dask array whose values equal the
unchunked call at every seam and edge, in every border mode.  Filters applied one after
another to a result of this module run in one pass over the chunks (the halos added up),
the intermediates staying on the device; :func:`vector_add` joins that pass too, and any
other dask operation in between (or ``.persist()``) ends the chain.  Each task moves its window to the device once and brings
its block home once: device arrays never leave a task, and the graphs pickle without
device objects.

:mod:`clkit.dask.ndimage` holds :mod:`clkit.ndimage`'s filters, with scipy.ndimage's names
and signatures, on dask arrays of any number of dimensions.

:func:`local_cluster` starts a worker process per OpenCL device; on any other cluster each
worker picks its device by the rule of :func:`worker_device`.  Needs the ``dask`` extra:
``pip install clkit[dask]``.
"""

from ._cluster import local_cluster
from ._filters import apply, worker_device
from ._kernels import convolve, gaussian_blur, grayscale, vector_add

__all__ = ["apply", "convolve", "gaussian_blur", "grayscale", "local_cluster", "vector_add",
           "worker_device"]
