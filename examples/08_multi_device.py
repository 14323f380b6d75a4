"""08 - Several devices at once.

    python examples/08_multi_device.py
    POCL_DEVICES="pthread pthread" python examples/08_multi_device.py   # two CPU devices

Every library function takes device="all" (every visible device but the
Oclgrind simulator) or a list of device specs.  clkit then cuts the image into
row bands, one per device, sized by how fast each device ran that kernel the
first time (measured once, remembered for the process), runs the bands at
once, and stitches the result together.  A convolution's band also carries
the halo rows its mask reaches into, so the seams are invisible: the result
equals the one-device result exactly.

With one device, "all" is that device: the script still runs and checks.
"""

import time

import numpy as np

import clkit
from clkit.kernels import convolve, grayscale

devices = [d for d in clkit.devices() if not d.simulator]
print("devices used by device='all':")
for d in devices:
    print(f"  {d}")

rng = np.random.default_rng(0)
image = rng.random((2160, 3840), dtype=np.float32)
mask = rng.random((7, 7)).astype(np.float32)

one = convolve(image, mask)                    # warm-up and the reference: one device
start = time.perf_counter()
one = convolve(image, mask)
t_one = time.perf_counter() - start

many = convolve(image, mask, device="all")     # first call measures each device's speed
start = time.perf_counter()
many = convolve(image, mask, device="all")
t_many = time.perf_counter() - start
# Devices of one kind give identical bits; a GPU and a CPU round multiply-adds differently.
same_kind = len({(d.platform, d.name) for d in devices}) == 1
assert np.array_equal(one, many) if same_kind else np.allclose(one, many, rtol=2e-6, atol=2e-6)

rgb = rng.integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
assert np.array_equal(grayscale(rgb, device="all"), grayscale(rgb))

agree = "identical" if same_kind else "equal to float32 rounding"
if len(devices) == 1:
    print(f"7x7 convolution of 3840x2160 on the only device ({devices[0].name}): "
          f"{t_one * 1e3:.1f} ms, and {t_many * 1e3:.1f} ms with device='all', which is that "
          f"device; results {agree}.\nFor two CPU devices: POCL_DEVICES=\"pthread pthread\" "
          "python examples/08_multi_device.py")
else:
    print(f"7x7 convolution of 3840x2160: {t_one * 1e3:.1f} ms on the default device, "
          f"{t_many * 1e3:.1f} ms on {len(devices)} devices together; results {agree}")
