"""Numpy and pinned arrays in and out, batches and the wide filters, against the link and OpenCV.

    python benchmarks/gpu_e2e.py OUTDIR [--device SPEC] [--size WxH] [--batch N] [--repeat N]

Everything in one run, on one device (default: the first GPU, else the best
device), so that the figures sit side by side:

- the link: host<->device copies of pinned memory (``ALLOC_HOST_PTR`` buffers,
  mapped), each direction alone and both at once on two queues;
- one image (default 7680x4320), ``grayscale`` uint8 and ``convolve`` 5x5
  float32: the whole call with numpy in and a new numpy result, with pinned
  arrays in and out (``clkit.pinned_like``, ``out=``), the kernels' event
  time, the time the link needs for the bytes moved (up at the upload rate,
  down at the download rate), and OpenCV on all host cores;
- batches of N such images through ``clkit.map``: ordinary numpy images, and
  images held in pinned arrays with pinned results; against the link with
  both directions busy (the slower direction's bytes at its rate) and
  against OpenCV on all cores over the same images;
- numpy<->device copies staged through pinned buffers (what numpy inputs,
  and results when pinned memory is not at hand, go through), for several
  copier-thread counts and chunk sizes; and a new numpy array uploaded by the
  driver from pageable memory, through a ``USE_HOST_PTR`` buffer, and staged;
- ``gaussian_blur`` sigma 2 and sigma 10 and ``convolve`` 9x9 on a float32
  device array of that size: kernel event time against a device-to-device
  copy of the same bytes (one read and one write per pixel).

Whole calls are wall-clock medians of ``--repeat`` runs after a warm-up.
Writes ``gpu_e2e.json`` and ``gpu_e2e.txt`` (the table) into OUTDIR.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import clkit
from clkit._memory import transfer as _transfer
from clkit import kernels as ck
from scale import kernel_ms, median_ms  # benchmarks/ is the script's folder, first on sys.path

try:
    import cv2
except ImportError:  # the OpenCV columns stay empty
    cv2 = None


def event_ms(event) -> float:
    event.wait()
    return (event.profile.end - event.profile.start) * 1e-6


def gbs(nbytes, ms):
    return nbytes / ms / 1e6 if ms else float("nan")


# -- the link ----------------------------------------------------------------------------------

def pinned_host(rt, queue, nbytes):
    """A mapped ``ALLOC_HOST_PTR`` buffer's host memory (the driver's pinned memory)."""
    buf = cl.Buffer(rt.context, cl.mem_flags.ALLOC_HOST_PTR | cl.mem_flags.READ_WRITE, nbytes)
    host, _ = cl.enqueue_map_buffer(queue, buf, cl.map_flags.READ | cl.map_flags.WRITE, 0,
                                    (nbytes,), np.uint8)
    host[...] = 1
    return host


def link(rt, nbytes, repeat):
    """GB/s of pinned copies: up and down alone, then both at once on two queues."""
    up_q, down_q = rt.new_queue(), rt.new_queue()
    host_up, host_down = pinned_host(rt, up_q, nbytes), pinned_host(rt, down_q, nbytes)
    dev_up = cl.Buffer(rt.context, cl.mem_flags.READ_WRITE, nbytes)
    dev_down = cl.Buffer(rt.context, cl.mem_flags.READ_WRITE, nbytes)
    cl.enqueue_copy(up_q, dev_down, host_up).wait()

    def alone(copy):
        copy().wait()
        return float(np.median([event_ms(copy()) for _ in range(repeat)]))

    up_ms = alone(lambda: cl.enqueue_copy(up_q, dev_up, host_up, is_blocking=False))
    down_ms = alone(lambda: cl.enqueue_copy(down_q, host_down, dev_down, is_blocking=False))
    both = []
    for _ in range(repeat + 1):
        t0 = time.perf_counter()
        a = cl.enqueue_copy(up_q, dev_up, host_up, is_blocking=False)
        b = cl.enqueue_copy(down_q, host_down, dev_down, is_blocking=False)
        up_q.flush()
        down_q.flush()
        both.append((event_ms(a), event_ms(b), (time.perf_counter() - t0) * 1e3))
    both = np.median(np.array(both[1:]), axis=0)
    return {"bytes": nbytes, "up_GBs": gbs(nbytes, up_ms), "down_GBs": gbs(nbytes, down_ms),
            "both_up_GBs": gbs(nbytes, both[0]), "both_down_GBs": gbs(nbytes, both[1]),
            "both_total_GBs": gbs(2 * nbytes, both[2])}


def staging(rt, nbytes, repeat):
    """GB/s of numpy<->device copies staged through pinned buffers: threads x chunk size.

    ``default`` is clkit's own choice; downloads go into a reused array and
    into a new one each time (whose pages fault on first touch).
    """
    queue = rt.new_queue()
    host = np.random.default_rng(1).integers(0, 256, nbytes, dtype=np.uint8)
    back = np.empty_like(host)
    dev = cl.Buffer(rt.context, cl.mem_flags.READ_WRITE, nbytes)
    saved = _transfer.THREADS, _transfer.MIN_CHUNK
    cores = os.cpu_count() or 1
    rows = []
    settings = [("default", saved[0], None)] + [
        (f"{t} threads, {c >> 20} MiB", t, c) for t in sorted({4, 8, cores}) for c in
        (8 << 20, 16 << 20, 32 << 20, 64 << 20)]
    try:
        for name, threads, chunk in settings:
            _transfer.THREADS = threads
            if chunk is None:
                _transfer.MIN_CHUNK = saved[1]
                stage = _transfer.Staging(rt.context, queue)
            else:
                _transfer.MIN_CHUNK = chunk
                stage = _transfer.Staging(rt.context, queue, chunk=chunk)
            up = median_ms(lambda: (stage.upload(queue, dev, host), queue.finish()), repeat)
            down = median_ms(lambda: stage.download(queue, dev, back), repeat)
            fresh = median_ms(lambda: stage.download(queue, dev, np.empty_like(host)), repeat)
            rows.append({"setting": name, "up_GBs": gbs(nbytes, up), "down_GBs": gbs(nbytes, down),
                         "down_new_GBs": gbs(nbytes, fresh)})
            del stage
    finally:
        _transfer.THREADS, _transfer.MIN_CHUNK = saved
    np.testing.assert_array_equal(back, host)
    return {"bytes": nbytes, "rows": rows}


def fresh_uploads(rt, nbytes, repeat):
    """GB/s of uploads of a new numpy array each time (filled before the clock starts), three
    ways: the driver's copy from pageable memory, a ``USE_HOST_PTR`` buffer over the array
    (which NVIDIA's driver pins, page by page, for the copy), and clkit's staged upload."""
    queue = rt.new_queue()
    dev = cl.Buffer(rt.context, cl.mem_flags.READ_WRITE, nbytes)
    target = cl_array.Array(queue, (nbytes,), np.uint8, data=dev)

    def pageable(host):
        cl.enqueue_copy(queue, dev, host)

    def host_ptr(host):
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR
        wrapped = cl.Buffer(rt.context, flags, hostbuf=host)
        cl.enqueue_copy(queue, dev, wrapped)
        queue.finish()
        wrapped.release()

    def staged(host):
        _transfer.upload(rt, host, queue, out=target)

    rows = {}
    for name, copy in (("pageable", pageable), ("host_ptr", host_ptr), ("staged", staged)):
        times = []
        for _ in range(repeat):
            host = np.empty(nbytes, np.uint8)
            host[:] = 7
            queue.finish()
            start = time.perf_counter()
            copy(host)
            queue.finish()
            times.append((time.perf_counter() - start) * 1e3)
        rows[name] = gbs(nbytes, float(np.median(times)))
    return {"bytes": nbytes, **rows}


# -- one image and batches -----------------------------------------------------------------------

def cases(height, width, rng):
    """(name, input, function on (image, out, device), OpenCV function) for one image each."""
    rgb = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    image = rng.random((height, width), dtype=np.float32)
    mask = rng.random((5, 5)).astype(np.float32)
    flipped = np.ascontiguousarray(mask[::-1, ::-1])  # filter2D correlates; convolve flips
    out = []
    out.append(("grayscale uint8", rgb, (height, width), np.uint8,
                lambda x, o, d: ck.grayscale(x, out=o, device=d),
                None if cv2 is None else lambda x: cv2.cvtColor(x, cv2.COLOR_RGB2GRAY)))
    out.append(("convolve 5x5 float32", image, (height, width), np.float32,
                lambda x, o, d: ck.convolve(x, mask, out=o, device=d),
                None if cv2 is None else
                lambda x: cv2.filter2D(x, -1, flipped, borderType=cv2.BORDER_REFLECT)))
    return out


def one_image(dev, rt, case, lk, repeat):
    name, host, shape, dtype, run, ocv = case
    up, down = host.nbytes, int(np.prod(shape)) * np.dtype(dtype).itemsize
    limit = up / lk["up_GBs"] / 1e6 + down / lk["down_GBs"] / 1e6
    row = {"case": name, "bytes_up": up, "bytes_down": down, "limit_ms": limit}
    row["numpy_ms"] = median_ms(lambda: run(host, None, dev), repeat)
    out = np.empty(shape, dtype)
    row["numpy_out_ms"] = median_ms(lambda: run(host, out, dev), repeat)
    p_in, p_out = clkit.pinned_like(host, device=dev), clkit.pinned_empty(shape, dtype, dev)
    row["pinned_ms"] = median_ms(lambda: run(p_in, p_out, dev), repeat)
    d_in, d_out = clkit.to_device(host, device=dev), clkit.empty(shape, dtype, device=dev)
    row["kernel_ms"] = kernel_ms(lambda: run(d_in, d_out, dev), rt.queue, repeat)
    row["device_call_ms"] = median_ms(lambda: (run(d_in, d_out, dev), rt.queue.finish()), repeat)
    row["opencv_ms"] = median_ms(lambda: ocv(host), repeat) if ocv else None
    np.testing.assert_array_equal(p_out, run(host, None, dev))  # the pinned path's result
    return row


def batch(dev, case, lk, count, repeat):
    name, host, shape, dtype, run, ocv = case
    images = [host if i == 0 else np.roll(host, 17 * i, axis=1) for i in range(count)]
    up, down = host.nbytes * count, int(np.prod(shape)) * np.dtype(dtype).itemsize * count
    allowed = max(up / lk["both_up_GBs"], down / lk["both_down_GBs"]) / 1e6
    row = {"case": name, "images": count, "bytes_up": up, "bytes_down": down,
           "link_both_ms": allowed}

    def ordinary():
        for _ in clkit.map(lambda x, device: run(x, None, device), images, device=dev):
            pass

    row["numpy_ms"] = median_ms(ordinary, max(1, repeat // 2))
    p_in = [clkit.pinned_like(x, device=dev) for x in images]
    p_out = [clkit.pinned_empty(shape, dtype, dev) for _ in images]

    def pinned():
        for _ in clkit.map(lambda i, device: run(p_in[i], p_out[i], device), range(count),
                           device=dev):
            pass

    row["pinned_ms"] = median_ms(pinned, max(1, repeat // 2))
    if ocv:
        row["opencv_ms"] = median_ms(lambda: [ocv(x) for x in images], max(1, repeat // 2))
    del p_in, p_out
    return row


# -- filters on the device ---------------------------------------------------------------------

def filters(dev, rt, height, width, rng, repeat):
    image = clkit.to_device(rng.random((height, width), dtype=np.float32), device=dev)
    out = clkit.empty((height, width), np.float32, device=dev)
    nbytes = image.nbytes
    copy_ms = float(np.median([event_ms(cl.enqueue_copy(rt.queue, out.base_data,
                                                        image.base_data))
                               for _ in range(repeat + 1)][1:]))
    copy_GBs = gbs(2 * nbytes, copy_ms)
    mask9 = rng.random((9, 9)).astype(np.float32)
    rows = []
    for name, fn in [("gaussian_blur sigma 2", lambda: ck.gaussian_blur(image, 2.0, out=out)),
                     ("gaussian_blur sigma 10", lambda: ck.gaussian_blur(image, 10.0, out=out)),
                     ("convolve 9x9", lambda: ck.convolve(image, mask9, out=out))]:
        k = kernel_ms(fn, rt.queue, repeat)  # waits for the call's optimised builds
        call = median_ms(lambda: (fn(), rt.queue.finish()), repeat)
        rows.append({"case": name, "kernel_ms": k, "call_ms": call,
                     "GBs": gbs(2 * nbytes, k), "of_copy": gbs(2 * nbytes, k) / copy_GBs})
    return {"copy_ms": copy_ms, "copy_GBs": copy_GBs, "rows": rows}


# -- report ------------------------------------------------------------------------------------

def table(res) -> str:
    f = lambda v, fmt="{:.2f}": "-" if v is None else fmt.format(v)  # noqa: E731
    lk = res["link"]
    lines = [f"device: {res['device']}; image {res['size']}; {res['host_cores']} host cores; "
             f"OpenCV threads {res['opencv_threads']}",
             f"link, pinned copies of {lk['bytes'] / 1e6:.1f} MB: up {lk['up_GBs']:.1f} GB/s, "
             f"down {lk['down_GBs']:.1f} GB/s; both at once: up {lk['both_up_GBs']:.1f}, "
             f"down {lk['both_down_GBs']:.1f}, {lk['both_total_GBs']:.1f} GB/s together", "",
             "one image, ms | link limit | numpy in/out (x limit) | numpy, out= | pinned in/out "
             "(x limit) | kernels | device arrays, whole call | OpenCV all cores | numpy vs OpenCV"]
    for r in res["single"]:
        vs = None if r["opencv_ms"] is None else r["opencv_ms"] / r["numpy_ms"]
        lines.append(f"{r['case']} | {f(r['limit_ms'])} | {f(r['numpy_ms'])} "
                     f"({r['numpy_ms'] / r['limit_ms']:.2f}x) | {f(r['numpy_out_ms'])} | "
                     f"{f(r['pinned_ms'])} ({r['pinned_ms'] / r['limit_ms']:.2f}x) | "
                     f"{f(r['kernel_ms'], '{:.3f}')} | {f(r['device_call_ms'], '{:.3f}')} | "
                     f"{f(r['opencv_ms'])} | {f(vs, '{:.2f}x')}")
    lines += ["", "batch, ms per image | link, both directions | pinned (of link) | numpy "
              "| OpenCV all cores | numpy vs OpenCV"]
    for r in res["batch"]:
        n = r["images"]
        ocv = r.get("opencv_ms")
        lines.append(f"{n} x {r['case']} | {r['link_both_ms'] / n:.2f} | "
                     f"{r['pinned_ms'] / n:.2f} ({r['link_both_ms'] / r['pinned_ms']:.2f}x) | "
                     f"{r['numpy_ms'] / n:.2f} | {f(None if ocv is None else ocv / n)} | "
                     f"{f(None if ocv is None else ocv / r['numpy_ms'], '{:.2f}x')}")
    st = res["staging"]
    lines += ["", f"numpy<->device staged through pinned buffers, {st['bytes'] / 1e6:.0f} MB, GB/s "
              "| up | down | down into a new array"]
    for r in st["rows"]:
        lines.append(f"{r['setting']} | {r['up_GBs']:.1f} | {r['down_GBs']:.1f} | "
                     f"{r['down_new_GBs']:.1f}")
    fu = res["fresh_uploads"]
    lines += ["", f"a new numpy array of {fu['bytes'] / 1e6:.0f} MB to the device, GB/s: the "
              f"driver's copy from pageable memory {fu['pageable']:.1f}, a USE_HOST_PTR buffer "
              f"over it {fu['host_ptr']:.1f}, clkit's staged upload {fu['staged']:.1f}"]
    fl = res["filters"]
    lines += ["", f"float32 device array, copy {fl['copy_GBs']:.0f} GB/s ({fl['copy_ms']:.3f} ms)"
              " | kernel ms | whole call ms | GB/s (one read, one write) | of copy"]
    for r in fl["rows"]:
        lines.append(f"{r['case']} | {r['kernel_ms']:.3f} | {r['call_ms']:.3f} | {r['GBs']:.0f} | "
                     f"{r['of_copy']:.2f}x")
    return "\n".join(lines) + "\n"


def arguments(doc: str, repeat: int) -> argparse.ArgumentParser:
    """The options of this script and of those built on it (OUTDIR, device, size, batch,
    repeat); ``doc`` is the script's docstring."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("outdir")
    parser.add_argument("--device", default=None, help="a device spec (default: the first GPU)")
    parser.add_argument("--size", default="7680x4320", help="image WxH (default 7680x4320)")
    parser.add_argument("--batch", type=int, default=32, help="images per batch (default 32)")
    parser.add_argument("--repeat", type=int, default=repeat, help="timed runs per figure")
    return parser


def chosen(args):
    """(device, its runtime, width, height) of parsed :func:`arguments`."""
    width, height = (int(v) for v in args.size.lower().split("x"))
    spec = args.device if args.device else ("gpu" if clkit.devices("gpu") else None)
    dev = clkit.select(spec)
    return dev, clkit.runtime(dev), width, height


def main(argv=None):
    args = arguments(__doc__, repeat=10).parse_args(argv)
    dev, rt, width, height = chosen(args)
    if cv2 is not None:
        cv2.setNumThreads(os.cpu_count() or 1)
    rng = np.random.default_rng(0)
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=os.path.dirname(os.path.abspath(__file__)),
                                check=False).stdout.strip() or None
    except OSError:
        commit = None
    res = {"device": str(dev), "size": f"{width}x{height}", "host_cores": os.cpu_count(),
           "opencv_threads": cv2.getNumThreads() if cv2 is not None else None,
           "commit": commit, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "command": " ".join([os.path.basename(sys.executable)] + sys.argv)}
    all_cases = cases(height, width, rng)
    largest = max(c[1].nbytes for c in all_cases)
    res["link"] = link(rt, largest, args.repeat)
    res["staging"] = staging(rt, largest, args.repeat)
    res["fresh_uploads"] = fresh_uploads(rt, largest, args.repeat)
    res["single"] = [one_image(dev, rt, c, res["link"], args.repeat) for c in all_cases]
    res["batch"] = [batch(dev, c, res["link"], args.batch, args.repeat) for c in all_cases]
    res["filters"] = filters(dev, rt, height, width, rng, args.repeat)
    os.makedirs(args.outdir, exist_ok=True)
    with open(os.path.join(args.outdir, "gpu_e2e.json"), "w") as fh:
        json.dump(res, fh, indent=1)
    text = table(res)
    with open(os.path.join(args.outdir, "gpu_e2e.txt"), "w") as fh:
        fh.write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
