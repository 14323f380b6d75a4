"""The GPU convolution kernels' layouts swept: kernel time of each mask for each tile.

    python benchmarks/gpu_conv_sweep.py OUTDIR [--device gpu] [--size 7680x4320] [--rounds 20]
                                        [--dtype float32] [--no-tiles]

For 2-D masks of 3x3, 5x5 and 9x9 and Gaussians of sigma 2 (one kernel, and
two passes) and sigma 10 on a float32 device image (--dtype: of another type,
times 100 for integers; the results are float32), the kernels' event time
(median of ROUNDS calls, the specialised build) for every work-group tile
(LX, LY, PX, PY) of the 2-D and two-pass kernels (outputs LX apart), every
tile of the 2-D masks' four adjacent outputs and every shape of the
one-kernel separable filter, beside a device-to-device copy of a float32 image
of that size (the memory-bandwidth bound: one read and one write).  Every layout's result is
compared with the shipped one's (the same sums in the same order: bit-equal).
``--streamed``: only the two passes of Gaussians of sigma 2, 5 and 10, both streamed through
registers with each (work-group width, outputs per work-item) of STREAMED or both through the
tiles (None).
``--stream``: 2-D masks of 3x3 to 9x9 with each (LX, LY, PY) of STREAM_2D, and the one-kernel
Gaussian of sigma 1.5 to 2.5 (float32; uint8 at sigma 2) with each of STREAM_FUSED, both
streamed through registers, beside the tiles through local memory (None).
Writes OUTDIR/gpu_conv_sweep.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl

import clkit
from clkit._build import tiers as _tiers
from clkit._launch.kernel import recording
from clkit._engine import conv_geometry as geo
from clkit._engine import dispatch as _dispatch, filter as _filter
from clkit.kernels import convolve, gaussian_blur

TILES = [(32, 4, 8, 4), (32, 4, 4, 6), (32, 4, 4, 4), (32, 8, 4, 4), (32, 8, 8, 4), (32, 8, 2, 4),
         (32, 4, 2, 8), (32, 4, 4, 8), (32, 2, 4, 8), (32, 8, 2, 2)]
#: (LX, LY, PX, PY) of the 2-D masks' four adjacent outputs per work-item (PX = 4)
TILES4 = [(32, 4, 4, 6), (16, 8, 4, 6), (32, 4, 4, 4), (32, 4, 4, 8), (16, 8, 4, 4),
          (32, 8, 4, 4), (16, 4, 4, 8), (64, 2, 4, 6), (16, 16, 4, 4), (32, 2, 4, 8),
          (8, 16, 4, 6), (16, 8, 4, 8)]
#: (LX, LY, PY) of the one-kernel separable filter
FUSED_SHAPES = [(32, 8, 16), (64, 4, 16), (32, 4, 16), (32, 8, 8), (16, 16, 8), (16, 16, 16),
                (32, 4, 8)]
#: the same with four row elements per work-item (images summed in float)
FUSED_SHAPES4 = [(32, 8, 8), (32, 8, 4), (32, 8, 16), (16, 16, 8), (32, 4, 8), (64, 4, 4),
                 (16, 8, 16), (32, 4, 16), (16, 16, 4), (16, 16, 16), (16, 32, 4), (8, 32, 8),
                 (8, 32, 4), (8, 16, 16), (8, 16, 8), (4, 64, 4), (4, 64, 8), (4, 32, 8)]

#: ((ROW_LX, ROW_SX), (COL_LX, COL_SY)) of the streamed passes; (None, None): both through the tiles
STREAMED = [((64, 8), (64, 16)), ((64, 4), (64, 16)), ((128, 8), (64, 16)), ((32, 8), (64, 16)),
            ((64, 8), (64, 8)), ((64, 8), (128, 16)), ((64, 8), (32, 16)), ((64, 16), (64, 16)),
            ((64, 16), (64, 16)), ((32, 16), (64, 16)), ((128, 16), (64, 16)), ((64, 32), (64, 16)),
            ((32, 32), (64, 16)), (None, None)]

#: (LX, LY, PY) of the 2-D masks and of the one-kernel Gaussian streamed through registers
#: (4 adjacent outputs of PY rows per work-item); None: the tiles through local memory
STREAM_2D = [None, (64, 1, 8), (32, 1, 8), (128, 1, 8), (64, 1, 4), (64, 1, 6), (64, 1, 12),
             (64, 1, 16), (32, 2, 8), (32, 4, 4), (64, 2, 4), (32, 4, 8)]
STREAM_FUSED = [None, (64, 1, 16), (64, 1, 8), (32, 1, 16), (128, 1, 16), (64, 1, 12),
                (64, 1, 24), (32, 2, 8), (32, 4, 8), (64, 1, 32), (32, 4, 4)]


def kernel_median_ms(call, rounds):
    """The kernels' event time of ``call``, median of ``rounds``, in the specialised build made
    anew: clkit's cached builds and made filters are forgotten first, so that layouts set in
    ``_conv_geometry`` take effect."""
    _dispatch.forget()
    _filter._made.clear()
    with _tiers.tier("specialised"):
        call()
        times = []
        for _ in range(rounds):
            with recording() as launches:
                call()
            times.append(sum(launch.kernel_ms for launch in launches))
    return float(np.median(times))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--device", default="gpu")
    parser.add_argument("--size", default="7680x4320")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--dtype", default="float32", help="the image's (default float32)")
    parser.add_argument("--no-tiles", action="store_true",
                        help="the shipped 2-D and two-pass tiles only")
    parser.add_argument("--stream", action="store_true",
                        help="only the 2-D masks and the one kernel, each layout of STREAM_2D "
                             "and STREAM_FUSED")
    parser.add_argument("--streamed", action="store_true",
                        help="only the two passes, each layout of STREAMED")
    args = parser.parse_args(argv)
    args.outdir.mkdir(parents=True, exist_ok=True)
    device = clkit.select(args.device)
    width, height = (int(v) for v in args.size.split("x"))
    rng = np.random.default_rng(3)
    dtype = np.dtype(args.dtype)
    values = rng.random((height, width)) * (100 if dtype.kind in "iu" else 1)
    image = clkit.to_device(values.astype(dtype), device=device)
    out = clkit.empty(image.shape, np.float32, device=device)
    float_image = clkit.to_device(values.astype(np.float32), device=device)
    queue = out.queue
    masks = {k: rng.standard_normal((k, k)).astype(np.float32) for k in (3, 5, 9)}
    cases = {f"{k}x{k}": (lambda m=m: convolve(image, m, out=out), False)
             for k, m in masks.items()}
    cases["gauss2 fused"] = (lambda: gaussian_blur(image, 2.0, out=out), False)
    cases["gauss2 2-pass"] = (lambda: gaussian_blur(image, 2.0, out=out), True)
    cases["gauss10"] = (lambda: gaussian_blur(image, 10.0, out=out), False)

    copy_times = []
    for _ in range(args.rounds):
        copy_times.append(cl.enqueue_copy(queue, out.base_data, float_image.base_data))
    queue.finish()
    copy_ms = float(np.median([(e.profile.end - e.profile.start) * 1e-6 for e in copy_times]))

    if args.streamed or args.stream:
        results = (sweep_stream(image, out, copy_ms, args.rounds, device) if args.stream
                   else sweep_streamed(image, out, copy_ms, args.rounds))
        report = {"device": str(device), "size": [width, height], "dtype": dtype.name,
                  "rounds": args.rounds, "copy_ms": copy_ms, "streamed": results}
        (args.outdir / "gpu_conv_sweep.json").write_text(json.dumps(report, indent=1))
        return 0

    shipped_tile, shipped_tile4 = geo.gpu_tile, geo.gpu_tile4
    shipped_rows, shipped_vec4 = geo.FUSED_MAX_ROWS, geo.GPU_VEC4_MAX
    results, reference = {}, {}
    # (label, tile, tile of four adjacent outputs): None keeps the shipped one, and a tile of
    # outputs LX apart is measured with the 2-D masks taking it too
    layouts = [("shipped", None, None), ("shipped, outputs LX apart", None, False)]
    if not args.no_tiles:
        layouts += [(str(t), t, False) for t in TILES]
        layouts += [(f"4 adjacent {t}", None, t) for t in TILES4]
    for label, tile, tile4 in layouts:
        geo.gpu_tile = shipped_tile if tile is None else (lambda kh, kw, sep, t=tile: t)
        geo.gpu_tile4 = tile4 and (lambda kh, kw, t=tile4: t) or shipped_tile4
        geo.GPU_VEC4_MAX = 0 if tile4 is False else shipped_vec4
        row = {}
        for case, (call, two_pass) in cases.items():
            if tile4 and "x" not in case:
                continue  # the separable passes do not take it
            geo.FUSED_MAX_ROWS = dict.fromkeys(shipped_rows, 0) if two_pass else shipped_rows
            try:
                ms = kernel_median_ms(call, args.rounds)
                got = out.get()
            except clkit.ClkitError as exc:
                row[case] = {"error": str(exc).splitlines()[0]}
                continue
            if case not in reference:
                reference[case] = got
            diff = float(np.max(np.abs(got - reference[case])))
            row[case] = {"ms": ms, "copy_bandwidth": copy_ms / ms, "max_diff": diff}
        results[label] = row
        print(f"{label:16s}", " ".join(
            f"{c}: {v['ms']:.4f} ({v['copy_bandwidth']:.2f}x{'' if v['max_diff'] == 0 else ' DIFF'})"
            if "ms" in v else f"{c}: {v['error']}" for c, v in row.items()), flush=True)
    geo.gpu_tile, geo.gpu_tile4 = shipped_tile, shipped_tile4
    geo.FUSED_MAX_ROWS, geo.GPU_VEC4_MAX = shipped_rows, shipped_vec4
    shipped = geo.FUSED_SHAPE, geo.FUSED_SHAPE4, geo.FUSED_VEC4
    for vec4, shapes in ((False, FUSED_SHAPES), (True, FUSED_SHAPES4)):
        for shape in shapes:
            geo.FUSED_VEC4 = vec4
            if vec4:
                geo.FUSED_SHAPE4 = shape
            else:
                geo.FUSED_SHAPE = shape
            label = f"fused {'4 elements' if vec4 else '1 element'} (LX, LY, PY) {shape}"
            try:
                ms = kernel_median_ms(cases["gauss2 fused"][0], args.rounds)
                diff = float(np.max(np.abs(out.get() - reference["gauss2 fused"])))
            except clkit.ClkitError as exc:
                print(f"{label}: {str(exc).splitlines()[0]}", flush=True)
                continue
            results[label] = {"gauss2 fused": {"ms": ms, "copy_bandwidth": copy_ms / ms,
                                               "max_diff": diff}}
            print(f"{label}: {ms:.4f} ms ({copy_ms / ms:.2f}x{'' if diff == 0 else ' DIFF'})",
                  flush=True)
        geo.FUSED_SHAPE, geo.FUSED_SHAPE4, geo.FUSED_VEC4 = shipped
    print(f"device copy of the image: {copy_ms:.4f} ms")
    report = {"device": str(device), "size": [width, height], "dtype": dtype.name,
              "rounds": args.rounds,
              "copy_ms": copy_ms, "layouts": results}
    (args.outdir / "gpu_conv_sweep.json").write_text(json.dumps(report, indent=1))
    return 0


def sweep_stream(image, out, copy_ms, rounds, device) -> dict:
    """2-D masks and the one-kernel Gaussian, each layout of STREAM_2D and STREAM_FUSED."""
    rng = np.random.default_rng(5)
    byte_image = clkit.to_device((rng.random(image.shape) * 255).astype(np.uint8), device=device)
    cases = {f"{k}x{k}": (lambda m=rng.standard_normal((k, k)): convolve(image, m, out=out))
             for k in (3, 5, 7, 9)}
    gaussians = {f"sigma {s:g}": (lambda s=s: gaussian_blur(image, s, out=out))
                 for s in (1.5, 2.0, 2.5)}
    gaussians["uint8 sigma 2"] = lambda: gaussian_blur(byte_image, 2.0, out=out)
    shipped = geo.GPU_STREAM_2D, geo.FUSED_STREAM
    results, reference = {}, {}
    try:
        for kind, layouts, calls in (("2-D", STREAM_2D, cases),
                                     ("one kernel", STREAM_FUSED, gaussians)):
            for layout in layouts:
                if kind == "2-D":
                    geo.GPU_STREAM_2D = layout
                else:
                    geo.FUSED_STREAM = layout
                label = f"{kind} {layout}"
                results[label] = measured_row(label, calls, out, copy_ms, rounds, reference)
    finally:
        geo.GPU_STREAM_2D, geo.FUSED_STREAM = shipped
    print(f"device copy of the image: {copy_ms:.4f} ms")
    return results


def sweep_streamed(image, out, copy_ms, rounds) -> dict:
    """Gaussians of sigma 2, 5 and 10 in two passes with each layout of STREAMED."""
    shipped = geo.GPU_ROWS, geo.GPU_COLS, geo.FUSED_MAX_ROWS
    geo.FUSED_MAX_ROWS = dict.fromkeys(shipped[2], 0)
    calls = {f"sigma {s:g}": (lambda s=s: gaussian_blur(image, s, out=out))
             for s in (2.0, 5.0, 10.0)}
    results, reference = {}, {}
    try:
        for passes in STREAMED:
            geo.GPU_ROWS, geo.GPU_COLS = passes
            results[str(passes)] = measured_row(f"rows, columns {passes}", calls, out, copy_ms,
                                                rounds, reference)
    finally:
        geo.GPU_ROWS, geo.GPU_COLS, geo.FUSED_MAX_ROWS = shipped
    print(f"device copy of the image: {copy_ms:.4f} ms")
    return results


def measured_row(label, calls, out, copy_ms, rounds, reference) -> dict:
    """Each call's kernel median, copy bandwidth and largest difference from the first result
    of its case (kept in ``reference``), printed on one line after ``label``."""
    row = {}
    for case, call in calls.items():
        try:
            ms = kernel_median_ms(call, rounds)
        except clkit.ClkitError as exc:
            row[case] = {"error": str(exc).splitlines()[0]}
            continue
        got = out.get()
        diff = float(np.max(np.abs(got - reference.setdefault(case, got))))
        row[case] = {"ms": ms, "copy_bandwidth": copy_ms / ms, "max_diff": diff}
    print(f"{label}:", " ".join(
        f"{c}: {v['ms']:.4f} ({v['copy_bandwidth']:.2f}x"
        f"{'' if v['max_diff'] == 0 else ' DIFF %.2g' % v['max_diff']})"
        if "ms" in v else f"{c}: {v['error']}" for c, v in row.items()), flush=True)
    return row

if __name__ == "__main__":
    sys.exit(main())
