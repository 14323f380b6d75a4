"""Run under mpiexec: every clkit.mpi function equals the single-process library call.

Prints one "ok NAME" line per function on the root; exits non-zero on a mismatch.
"""

import sys

import numpy as np
from mpi4py import MPI

import clkit.mpi
from clkit import kernels

comm = MPI.COMM_WORLD
root = comm.Get_size() - 1  # not rank 0, to exercise the root argument
mine = comm.Get_rank() == root
rng = np.random.default_rng(7)
image = rng.random((67, 45), dtype=np.float32)
rgb = rng.integers(0, 256, (31, 29, 3), dtype=np.uint8)
tiny = rng.random((2, 9), dtype=np.float32)  # fewer rows than ranks
mask = rng.random((5, 4))
a = rng.integers(-1000, 1000, 1003).astype(np.int32)
cases = [
    ("convolve", lambda: clkit.mpi.convolve(image if mine else None, mask, "wrap", comm=comm,
                                             root=root),
     lambda: kernels.convolve(image, mask, "wrap")),
    ("convolve-tiny", lambda: clkit.mpi.convolve(tiny if mine else None, mask, "constant", 2.0,
                                                  comm=comm, root=root),
     lambda: kernels.convolve(tiny, mask, "constant", 2.0)),
    ("gaussian_blur", lambda: clkit.mpi.gaussian_blur(image if mine else None, 1.7, "mirror",
                                                       comm=comm, root=root),
     lambda: kernels.gaussian_blur(image, 1.7, "mirror")),
    ("grayscale", lambda: clkit.mpi.grayscale(rgb if mine else None, comm=comm, root=root),
     lambda: kernels.grayscale(rgb)),
    ("mandelbrot", lambda: clkit.mpi.mandelbrot(53, 37, comm=comm, root=root, max_iter=80),
     lambda: kernels.mandelbrot(53, 37, max_iter=80)),
    ("vector_add", lambda: clkit.mpi.vector_add(a if mine else None, a if mine else None,
                                                 comm=comm, root=root),
     lambda: kernels.vector_add(a, a)),
]


def say(line):
    """One line in one write: the ranks share the output, and print's separate write of the
    line end let another rank's line in between ("ok vector_addrank 0 RankError ...")."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


failed = False
for name, parallel, single in cases:
    got = parallel()
    if mine:
        want = single()
        if got is None or got.dtype != want.dtype or not np.array_equal(got, want):
            say(f"MISMATCH {name}")
            failed = True
        else:
            say(f"ok {name}")
    elif got is not None:
        say(f"rank {comm.Get_rank()} got a result for {name}; only the root should")
        failed = True

# A mistake on the root reaches every rank as an exception, not a hang.
try:
    clkit.mpi.convolve(image if mine else None, np.ones(3), comm=comm, root=root)
except clkit.mpi.RankError as exc:
    say(f"rank {comm.Get_rank()} RankError {exc}")
except ValueError as exc:
    say(f"rank {comm.Get_rank()} ValueError {exc}")
else:
    failed = True
sys.exit(1 if comm.allreduce(failed, op=MPI.LOR) else 0)
