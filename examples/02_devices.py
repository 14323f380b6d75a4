"""02 - Devices: what OpenCL can run on here, and how to choose.

    python examples/02_devices.py

Lists every device clkit sees, shows the facts that matter when you write
kernels (compute units, memory, work-group limits, double precision), picks
devices by spec, and runs one small kernel on every device to show that the
same source runs on all of them.
"""

import numpy as np

import clkit

# Every device of every platform, in a stable order; the id "P:D" is platform:device.
found = clkit.devices()
print(f"{len(found)} device(s):")
for d in found:
    print(f"  {d.id}  {d.type:<11} {d.name}  [{d.platform}]")
    print(f"        {d.compute_units} compute units, {d.global_mem / 2**30:.1f} GiB memory "
          f"(largest buffer {d.max_alloc / 2**20:,.0f} MiB), {d.local_mem // 1024} KiB local "
          f"memory per work-group")
    print(f"        work-groups of up to {d.max_work_group_size} work-items, "
          f"double precision: {'yes' if d.fp64 else 'no'}, {d.version}")

# Choosing: None means $CLKIT_DEVICE if set, else the best device (GPUs before CPUs; the
# Oclgrind simulator only when asked for by name). A spec can be an id, a type or a name.
best = clkit.select()
print(f"\n{'clkit.select()':<22} -> {best}")
for spec in ("cpu", "gpu", best.id, best.short_platform):
    call = f"clkit.select({spec!r})"
    try:
        print(f"{call:<22} -> {clkit.select(spec)}")
    except clkit.DeviceNotFoundError as exc:  # e.g. no GPU on this machine
        print(f"{call:<22} -> DeviceNotFoundError: {str(exc).split(';')[0]}")

# One source, every device: clkit compiles it once per device and caches the binary.
program = clkit.Program.from_source("""
__kernel void square(__global const float* x, __global float* y)
{
    const size_t i = get_global_id(0);   /* one work-item per element */
    y[i] = x[i] * x[i];
}
""", name="square")
x = np.arange(1000, dtype=np.float32)
print()
for d in found:
    y = np.zeros_like(x)
    launch = program.square(x, y, device=d)   # global size: x.size work-items
    assert np.array_equal(y, x * x), d        # every device agrees with numpy
    print(f"square on {d.id} ({d.short_platform}): correct, kernel {launch.kernel_ms:.3f} ms")
