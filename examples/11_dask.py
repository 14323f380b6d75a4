"""11 - Dask: arrays in chunks, filtered on a cluster of devices.

    python examples/11_dask.py
    POCL_DEVICES="pthread pthread" python examples/11_dask.py   # two CPU devices, two workers

Needs clkit[dask] (dask and distributed).

clkit.dask.local_cluster() starts one dask worker process per OpenCL device,
each told its device by CLKIT_DEVICE.  The filters of clkit.dask take a dask
array and give one back; each block is filtered on its worker's device from
a window that reaches past it by the mask's radius, so the seams are
invisible: the result equals the unchunked call, border modes included (each
filter's mode applies at the array's true edges; `wrap` reaches across the
whole array).  Two filters applied one after the other run in one pass, the
intermediate staying on the device.
"""

import numpy as np
import scipy.ndimage as ndi

try:
    import dask.array as da
    from distributed import Client
except ImportError:
    raise SystemExit("this tutorial needs dask and distributed: pip install 'clkit[dask]'")

import clkit.dask

SHARPEN = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.float32)


def main():
    with clkit.dask.local_cluster() as cluster, Client(cluster) as client:
        for name, device in client.run(lambda: clkit.dask.worker_device().id).items():
            print(f"worker {name} runs on device {device}")

        # A 4096x4096 float32 image made by the workers, in 1024x1024 chunks: never whole here.
        image = da.random.default_rng(0).random((4096, 4096), dtype=np.float32,
                                                chunks=1024)
        sharp = clkit.dask.convolve(image, SHARPEN, mode="mirror")
        result = clkit.dask.gaussian_blur(sharp, 2.0, mode="mirror")  # the same pass
        print(f"{result.shape} {result.dtype} in {result.npartitions} blocks, one task each")

        # Two crops against scipy.ndimage, each computed from its own crop of the input plus
        # the halo of the two filters (the sharpening mask's radius 1, the Gaussian's 4 * 2):
        # dask computes only the blocks a crop needs.
        halo = 1 + 8
        for name, (r, c) in {"top-left corner": (0, 0), "middle": (2000, 1000)}.items():
            got = result[r:r + 256, c:c + 256].compute()
            r0, c0 = max(0, r - halo), max(0, c - halo)   # mirror at the array's true edges
            patch = image[r0:r + 256 + halo, c0:c + 256 + halo].compute()
            ref = ndi.gaussian_filter(ndi.convolve(patch, SHARPEN, mode="mirror"), 2.0,
                                      mode="mirror")[r - r0:r - r0 + 256, c - c0:c - c0 + 256]
            assert np.allclose(got, ref, atol=1e-4), f"the {name} must equal scipy"
            print(f"the {name} 256x256 equals scipy.ndimage (largest difference "
                  f"{np.abs(got - ref).max():.1e})")


if __name__ == "__main__":   # the workers are spawned processes: they import this file
    main()
