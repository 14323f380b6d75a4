"""01 - Hello, World!: the classic first OpenCL program, three ways.

    python examples/01_hello_world.py

The device writes the 13 characters of "Hello, World!" into a buffer, one
character per work-item, and the host reads them back.  The kernel is
kernels_cl/hello.cl; read it beside this file, its comments explain it.

The words you need:

- A *platform* is one installed OpenCL driver (PoCL, NVIDIA CUDA, Oclgrind...).
- A *device* is something a platform can run kernels on: a GPU, a CPU, a
  simulator.  `clkit devices` lists them with their ids.
- A *context* owns memory and programs for one or more devices.
- A *command queue* sends work to one device: copies and kernel launches, run
  in the order they were queued.
- A *kernel* is a function the device runs many times at once; each run is a
  *work-item*, told apart only by its index, get_global_id(0).  The number of
  work-items is the *global size*.  Work-items are grouped into *work-groups*
  (the *local size*) that one compute unit runs together.
"""

from pathlib import Path

import numpy as np
import pyopencl as cl

import clkit
from clkit.kernels import hello

# 1. The short way: the library function builds hello.cl, runs it and decodes the result.
greeting = hello()
print(f"clkit.kernels.hello():  {greeting}")

# 2. The same steps through clkit. select() picks the best device (GPUs first; set
#    CLKIT_DEVICE=cpu or --device in the clkit command to choose another). load() finds
#    kernels_cl/hello.cl; it is compiled for this device the first time it runs, then cached.
device = clkit.select()
program = clkit.load("hello")

# The kernel writes `__global char* out`: OpenCL's char is numpy's int8, one byte each.
out = np.zeros(13, dtype=np.int8)

# One work-item per character. clkit uploads `out`, launches 13 work-items and, because the
# parameter is not const, copies the buffer back into `out` when the kernel has finished.
launch = program.hello(out, global_size=13, device=device)
via_load = out.tobytes().decode("ascii")
print(f"clkit.load('hello'):    {via_load}   ({launch.kernel_ms:.3f} ms on {device.name})")

# 3. The raw steps, with pyopencl alone: what clkit does for you in step 2.
cl_device = device.cl_device  # the same device, as a pyopencl object
print(f"\nplatform: {cl_device.platform.name}, device: {cl_device.name}")
context = cl.Context([cl_device])                  # memory and programs live in a context
queue = cl.CommandQueue(context)                   # work for the device goes through a queue
source = Path(program.origin).read_text()          # kernels_cl/hello.cl
raw_program = cl.Program(context, source).build()  # compile the OpenCL C source for the device
buffer = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, size=13)  # 13 bytes of device memory
# Launch: global size (13,), local size None (the driver picks a work-group size).
raw_program.hello(queue, (13,), None, buffer)
host = np.empty(13, dtype=np.int8)
cl.enqueue_copy(queue, host, buffer)               # copy device -> host, waits by default
queue.finish()
via_pyopencl = host.tobytes().decode("ascii")
print(f"raw pyopencl:           {via_pyopencl}")

assert greeting == via_load == via_pyopencl == "Hello, World!"
print("\nall three agree")
