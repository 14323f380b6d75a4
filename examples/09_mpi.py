"""09 - MPI: the same work across processes (and machines).

    mpiexec -n 2 python examples/09_mpi.py
    python examples/09_mpi.py            # one rank works too

Needs clkit[mpi] (mpi4py and MPICH from PyPI: `pip install mpi4py mpich` gives
a working `mpiexec` in the virtual environment).

Rank 0, the root, holds the image.  clkit.mpi cuts it into one row band per
rank, each band with the halo rows the mask needs, and scatters the bands
(MPI Scatterv); every rank filters its band on its own device (ranks on one
node take the node's devices in turn); the root gathers the bands (Gatherv).
Only the root gets the result; the other ranks get None.
"""

import numpy as np
try:
    from mpi4py import MPI
except ImportError:
    raise SystemExit("this tutorial needs mpi4py and an MPI library: pip install 'clkit[mpi]'")

import clkit.mpi
from clkit.kernels import gaussian_blur

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
print(f"rank {rank} of {size} runs on {clkit.mpi.local_device(comm)}", flush=True)

image = None
if rank == 0:
    image = np.random.default_rng(0).random((1080, 1920), dtype=np.float32)

blurred = clkit.mpi.gaussian_blur(image, 3.0, comm=comm)

if rank == 0:
    assert np.array_equal(blurred, gaussian_blur(image, 3.0)), "must equal one process"
    print(f"root: blurred {image.shape[1]}x{image.shape[0]} across {size} rank(s); "
          "equal to the single-process result")
