"""GPU figures, side by side with torch in one run: kernel times, transfers, several GPUs.

    python benchmarks/gpu_probe.py [OUT_DIR]

Kernel times are OpenCL event times of library calls on device arrays
(clkit._launch.kernel.recording), against torch's CUDA event times; transfers are
numpy in and out through clkit's staged copies against torch's pinned copies;
with two or more GPUs, grayscale and convolution of a 16k x 16k image on one
GPU and on two (numpy in, numpy out).  Prints a table; writes gpu_probe.json.
"""

import json
import os
import sys
import time

import numpy as np
import pyopencl.array as cl_array
import torch

import clkit
from clkit._memory import transfer as _transfer
from clkit import kernels as ck
from clkit._engine import conv_geometry as _conv_geometry
import scale  # benchmarks/ is the script's folder, first on sys.path
from scale import median_ms

out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
gpus = clkit.devices("gpu")
dev = gpus[0]
rt = clkit.runtime(dev)
q = rt.queue
rng = np.random.default_rng(0)
res = {"device": str(dev), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def kernel_ms(fn, n=30):
    return scale.kernel_ms(fn, q, n)


def torch_ms(fn, n=30):
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(n):
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return float(np.median(times))


H, W = 4320, 7680
px = H * W
t_a = torch.empty(1 << 28, dtype=torch.float32, device="cuda")
t_b = torch.empty_like(t_a)
copy_gbs = 2 * 4 * (1 << 28) / torch_ms(lambda: t_b.copy_(t_a)) / 1e6
res["torch_copy_GBs"] = copy_gbs

img = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
d_img = clkit.to_device(img, device=dev)
gray = clkit.empty((H, W), np.uint8, device=dev)
res["gray_ms"] = kernel_ms(lambda: ck.grayscale(d_img, out=gray))
t_img = torch.from_numpy(img).cuda()
w = torch.tensor([0.299, 0.587, 0.114], device="cuda")
res["torch_gray_ms"] = torch_ms(lambda: (t_img.float() @ w).to(torch.uint8))
f = rng.random((H, W), dtype=np.float32)
d_f = clkit.to_device(f, device=dev)
d_o = clkit.empty((H, W), np.float32, device=dev)
tf = torch.from_numpy(f).cuda()[None, None]
for k in (3, 5, 9):
    m = rng.random((k, k)).astype(np.float32)
    res[f"conv{k}_ms"] = kernel_ms(lambda: ck.convolve(d_f, m, out=d_o))
    mt = torch.from_numpy(m.copy()).cuda()[None, None]
    res[f"torch_conv{k}_ms"] = torch_ms(lambda: torch.nn.functional.conv2d(tf, mt, padding=k // 2))
res["gauss2_ms"] = kernel_ms(lambda: ck.gaussian_blur(d_f, 2.0, out=d_o))
n = 1 << 26
a = clkit.to_device(rng.random(n, dtype=np.float32), device=dev)
b = clkit.to_device(rng.random(n, dtype=np.float32), device=dev)
c = clkit.empty(n, np.float32, device=dev)
res["vadd_ms"] = kernel_ms(lambda: ck.vector_add(a, b, out=c))
ta, tb = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
res["torch_vadd_ms"] = torch_ms(lambda: torch.add(ta, tb))
res["mandel_ms"] = kernel_ms(lambda: ck.mandelbrot(1920, 1080, out=clkit.empty((1080, 1920),
                                                                               np.int32,
                                                                               device=dev)))

# The GPU convolution tile, swept: each tile for every mask, then the shipped choice by mask
# (_conv_geometry.gpu_tile). Kernel ms of 3x3, 5x5, 7x7, 9x9, 15x15 and Gaussian sigma 2.
shipped = _conv_geometry.gpu_tile
sweep_masks = [rng.random((k, k)).astype(np.float32) for k in (3, 5, 7, 9, 15)]
m5 = sweep_masks[1]


def sweep_row():
    row = [kernel_ms(lambda: ck.convolve(d_f, m, out=d_o), 10) for m in sweep_masks]
    return row + [kernel_ms(lambda: ck.gaussian_blur(d_f, 2.0, out=d_o), 10)]


sweep = {}
for tile in ((32, 4, 4, 4), (32, 4, 8, 4), (32, 4, 4, 6), (32, 8, 4, 4)):
    _conv_geometry.gpu_tile = lambda kh, kw, separable, tile=tile: tile
    sweep[str(tile)] = sweep_row()
_conv_geometry.gpu_tile = shipped
sweep["shipped"] = sweep_row()
res["conv_tile_sweep_ms_3_5_7_9_15_gauss2"] = sweep

# numpy in, numpy out
big = rng.random(1 << 28, dtype=np.float32)
nb = big.nbytes
darr = cl_array.empty(q, big.shape, big.dtype)
back = np.empty_like(big)
res["staged_h2d_GBs"] = nb / median_ms(lambda: (_transfer.upload(rt, big, q, out=darr), q.finish())) / 1e6
res["staged_d2h_GBs"] = nb / median_ms(lambda: _transfer.download(rt, darr, back)) / 1e6
assert np.array_equal(back, big)
tp = torch.from_numpy(big).pin_memory()
td = torch.empty_like(tp, device="cuda")
res["torch_pinned_h2d_GBs"] = nb / median_ms(lambda: (td.copy_(tp, non_blocking=True),
                                                torch.cuda.synchronize())) / 1e6
res["torch_pinned_d2h_GBs"] = nb / median_ms(lambda: (tp.copy_(td, non_blocking=True),
                                                torch.cuda.synchronize())) / 1e6
res["gray_e2e_ms"] = median_ms(lambda: ck.grayscale(img, device=dev))
res["conv5_e2e_ms"] = median_ms(lambda: ck.convolve(f, m5, device=dev))

if len(gpus) >= 2:
    two = [g.id for g in gpus[:2]]
    img16 = rng.integers(0, 256, (16384, 16384, 3), dtype=np.uint8)
    f16 = rng.random((16384, 16384), dtype=np.float32)
    for name, fn in (("gray16k", lambda d: ck.grayscale(img16, device=d)),
                     ("conv5_16k", lambda d: ck.convolve(f16, m5, device=d))):
        res[f"{name}_1gpu_ms"] = median_ms(lambda: fn(dev), 3)
        res[f"{name}_2gpu_ms"] = median_ms(lambda: fn(two), 3)
        assert np.allclose(fn(dev), fn(two))

gbs = lambda nbytes, ms: nbytes / ms / 1e6  # noqa: E731
table = [
    ("grayscale 7680x4320 uint8", res["gray_ms"], f"{gbs(4 * px, res['gray_ms']):.0f} GB/s = "
     f"{gbs(4 * px, res['gray_ms']) / copy_gbs:.2f}x torch copy; torch {res['torch_gray_ms']:.3f} ms"),
    ("vector_add 2^26 float32", res["vadd_ms"], f"{gbs(12 * n, res['vadd_ms']):.0f} GB/s = "
     f"{res['torch_vadd_ms'] / res['vadd_ms']:.2f}x torch.add ({res['torch_vadd_ms']:.3f} ms)"),
]
for k in (3, 5, 9):
    ms = res[f"conv{k}_ms"]
    table.append((f"convolve {k}x{k} float32 7680x4320", ms,
                  f"{gbs(8 * px, ms):.0f} GB/s = {gbs(8 * px, ms) / copy_gbs:.2f}x torch copy; "
                  f"{res[f'torch_conv{k}_ms'] / ms:.1f}x faster than conv2d "
                  f"({res[f'torch_conv{k}_ms']:.3f} ms)"))
table.append(("gaussian_blur sigma 2 7680x4320", res["gauss2_ms"], ""))
table.append(("mandelbrot 1920x1080 256 it", res["mandel_ms"], ""))
print(f"{'case':36s} {'kernel ms':>10s}  vs baseline")
for name, ms, note in table:
    print(f"{name:36s} {ms:10.4f}  {note}")
print(f"torch device copy: {copy_gbs:.0f} GB/s")
print(f"staged numpy->device {res['staged_h2d_GBs']:.1f} GB/s "
      f"({res['staged_h2d_GBs'] / res['torch_pinned_h2d_GBs']:.2f}x torch pinned "
      f"{res['torch_pinned_h2d_GBs']:.1f}); device->numpy {res['staged_d2h_GBs']:.1f} GB/s "
      f"({res['staged_d2h_GBs'] / res['torch_pinned_d2h_GBs']:.2f}x torch pinned "
      f"{res['torch_pinned_d2h_GBs']:.1f})")
print(f"end to end (numpy in, numpy out): grayscale {res['gray_e2e_ms']:.2f} ms, convolve 5x5 "
      f"{res['conv5_e2e_ms']:.2f} ms")
print("GPU tile sweep, kernel ms (3x3, 5x5, 7x7, 9x9, 15x15, gaussian sigma 2):")
for tile, row in sweep.items():
    print(f"  {tile:14s}", " ".join(f"{t:.4f}" for t in row))
for name in ("gray16k", "conv5_16k"):
    if f"{name}_2gpu_ms" in res:
        print(f"{name}: 1 GPU {res[name + '_1gpu_ms']:.1f} ms, 2 GPUs {res[name + '_2gpu_ms']:.1f} ms"
              f" = {res[name + '_1gpu_ms'] / res[name + '_2gpu_ms']:.2f}x")
with open(os.path.join(out_dir, "gpu_probe.json"), "w") as fh:
    json.dump(res, fh, indent=1)
