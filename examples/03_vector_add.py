"""03 - Vector add: your own kernel, written here, run with clkit.

    python examples/03_vector_add.py

The "hello world" of data parallelism: out[i] = a[i] + b[i] for a million
elements, one work-item per element.  The kernel source is a string in this
file; clkit.load("my_kernels.cl") does the same for a source file.
"""

import time

import numpy as np

import clkit
from clkit.kernels import vector_add

SOURCE = """
// One work-item per element. The work-items of a launch run in any order, at the same time,
// so each must only touch its own element: out[i] depends on a[i] and b[i] alone.
__kernel void add(__global const float* a,   // const: only read, clkit does not copy it back
                  __global const float* b,
                  __global float* out,       // written: clkit copies it back after the kernel
                  const uint n)              // the element count
{
    const uint i = get_global_id(0);         // which element is mine?
    // The global size may be rounded up to a multiple of the work-group size; work-items
    // past the end must not write outside the buffer.
    if (i < n)
        out[i] = a[i] + b[i];
}
"""

n = 1_000_000
rng = np.random.default_rng(0)
a = rng.random(n, dtype=np.float32)
b = rng.random(n, dtype=np.float32)
out = np.empty_like(a)

# Program.from_source compiles lazily: on the first launch, for the device it runs on.
program = clkit.Program.from_source(SOURCE, name="vector_add_example")
device = clkit.select()

# The first launch compiles (or loads the compiled kernel from clkit's disk cache).
start = time.perf_counter()
launch = program.add(a, b, out, n, global_size=n, device=device)
first_ms = (time.perf_counter() - start) * 1e3
assert np.array_equal(out, a + b)  # float addition is exact to the last bit, as numpy's
print(f"add on {device}: correct")
print(f"  first call (compile or cache, upload, run, download): {first_ms:8.2f} ms")

# Later calls reuse the build. clkit checks each argument against the kernel's signature:
# a float64 array, a wrong count or a negative n would raise an error naming the parameter.
start = time.perf_counter()
launch = program.add(a, b, out, n, global_size=n, device=device)
print(f"  second call, with transfers:                         "
      f"{(time.perf_counter() - start) * 1e3:8.2f} ms  (kernel alone {launch.kernel_ms:.3f} ms)")

# Data that stays on the device is not copied at all: to_device uploads once, kernels use the
# device arrays in place, .get() downloads the result.
a_dev, b_dev = clkit.to_device(a, device), clkit.to_device(b, device)
out_dev = clkit.empty(n, np.float32, device)
launch = program.add(a_dev, b_dev, out_dev, n, global_size=n)
launch = program.add(out_dev, b_dev, out_dev, n, global_size=n)  # out = (a + b) + b
assert np.array_equal(out_dev.get(), (a + b) + b)
print(f"  two launches on device arrays: correct, {launch.kernel_ms:.3f} ms for the second")

# The library's vector_add does the same for every numeric dtype, with a tuned kernel.
assert np.array_equal(vector_add(a, b), a + b)
ints = np.arange(n, dtype=np.int64)
assert np.array_equal(vector_add(ints, ints), ints + ints)
print("clkit.kernels.vector_add: correct for float32 and int64")
print(f"\nnumpy check: out[:4] = {out[:4]} = a[:4] + b[:4] = {(a + b)[:4]}")
