"""Pinned batches: which way of waiting lets uploads and downloads share the link.

    python3 benchmarks/dma_overlap.py [--device nvidia] [--mb 133] [--images 32] [--lanes 3]

Images in pinned host memory (mapped ``ALLOC_HOST_PTR`` buffers) go up, through a
copy kernel and back down, several at once, with plain pyopencl, in each of
these ways:

- ``threads, blocking read``: one thread per lane, each with its own queue:
  upload enqueued, kernel, blocking download;
- ``threads, event.wait``: the download enqueued without blocking, then its event
  waited for;
- ``threads, polled``: the same, its event's status polled with short sleeps;
- ``threads, finish``: the download enqueued without blocking, then ``queue.finish()``;
- ``threads, marker``: the same, then a marker enqueued and its event waited for;
- ``one thread, lanes' queues``: every command enqueued without blocking on LANES
  in-order queues, round robin, waiting only for the download LANES images back;
- ``one thread, a queue per direction``: uploads, kernels and downloads on three
  queues, ordered by events, waiting as above.

Each way prints ms per image and its share of what the link allows with both
directions busy (measured first, as ``gpu_e2e.py`` does: pinned copies up and down at
once on two queues, each direction's bytes at its event-timed rate).

With ``--library``, batches of 7680x4320 images in pinned arrays go through
``clkit.map`` instead (``grayscale`` uint8 and ``convolve`` 5x5 float32, as in
``gpu_e2e.py``), alternating between clkit's downloads into pinned memory
(enqueued, then their event waited for) and blocking ones, ROUNDS times.
"""

from __future__ import annotations

import argparse
import threading
import time

import numpy as np
import pyopencl as cl

import clkit
import gpu_e2e  # benchmarks/ is the script's folder, first on sys.path

SRC = """
__kernel void twice(__global const float4* a, __global float4* b) {
    const size_t i = get_global_id(0);
    b[i] = 2 * a[i];
}
"""


class Lane:
    def __init__(self, rt, nbytes):
        self.queue = cl.CommandQueue(rt.context)
        self.dev_in = cl.Buffer(rt.context, cl.mem_flags.READ_WRITE, nbytes)
        self.dev_out = cl.Buffer(rt.context, cl.mem_flags.READ_WRITE, nbytes)
        self.host_in = gpu_e2e.pinned_host(rt, self.queue, nbytes).view(np.float32)
        self.host_out = gpu_e2e.pinned_host(rt, self.queue, nbytes).view(np.float32)


def wait_polled(event):
    while event.command_execution_status != cl.command_execution_status.COMPLETE:
        time.sleep(0.0002)


def by_threads(lanes, knl, images, finish):
    """Each lane a thread taking the next image until none is left."""
    counter = iter(range(images))
    lock = threading.Lock()

    def work(lane):
        n = lane.host_in.size // 4
        while True:
            with lock:
                if next(counter, None) is None:
                    return
            q = lane.queue
            cl.enqueue_copy(q, lane.dev_in, lane.host_in, is_blocking=False)
            knl(q, (n,), None, lane.dev_in, lane.dev_out)
            if finish == "blocking":
                cl.enqueue_copy(q, lane.host_out, lane.dev_out, is_blocking=True)
            else:
                ev = cl.enqueue_copy(q, lane.host_out, lane.dev_out, is_blocking=False)
                q.flush()
                if finish == "wait":
                    ev.wait()
                elif finish == "poll":
                    wait_polled(ev)
                elif finish == "finish":
                    q.finish()
                else:
                    cl.enqueue_marker(q).wait()

    threads = [threading.Thread(target=work, args=(lane,)) for lane in lanes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def by_one_thread(lanes, knl, images, per_direction, context):
    n = lanes[0].host_in.size // 4
    pending = []
    if per_direction:
        up_q, run_q, down_q = (cl.CommandQueue(context) for _ in range(3))
    for i in range(images):
        lane = lanes[i % len(lanes)]
        if len(pending) >= len(lanes):
            pending.pop(0).wait()
        if per_direction:
            # the lane's previous image is home (waited for above): its buffers are free
            up = cl.enqueue_copy(up_q, lane.dev_in, lane.host_in, is_blocking=False)
            k = knl(run_q, (n,), None, lane.dev_in, lane.dev_out, wait_for=[up])
            down = cl.enqueue_copy(down_q, lane.host_out, lane.dev_out, is_blocking=False,
                                   wait_for=[k])
            for q in (up_q, run_q, down_q):
                q.flush()
        else:
            q = lane.queue
            cl.enqueue_copy(q, lane.dev_in, lane.host_in, is_blocking=False)
            knl(q, (n,), None, lane.dev_in, lane.dev_out)
            down = cl.enqueue_copy(q, lane.host_out, lane.dev_out, is_blocking=False)
            q.flush()
        pending.append(down)
    for ev in pending:
        ev.wait()


def library(args):
    """clkit.map over pinned images: the library's event waits against blocking downloads."""
    from clkit._memory import transfer as _transfer

    def blocking_download(queue, host, src, offset):
        cl.enqueue_copy(queue, host, src, src_offset=offset, is_blocking=True)

    sides = {"event waits": _transfer.pinned_download, "blocking downloads": blocking_download}
    dev = clkit.select(args.device or "gpu")
    rt = clkit.runtime(dev)
    cases = gpu_e2e.cases(4320, 7680, np.random.default_rng(0))
    lk = gpu_e2e.link(rt, max(c[1].nbytes for c in cases), 5)
    print(f"{dev}: link {lk['both_up_GBs']:.1f} + {lk['both_down_GBs']:.1f} GB/s both at once")
    try:
        for r in range(args.rounds):
            for name, download in sides.items():
                _transfer.pinned_download = download
                for case in cases:
                    row = gpu_e2e.batch(dev, case, lk, args.images, 6)
                    n = row["images"]
                    print(f"round {r}, {name:24s} {row['case']:22s} pinned "
                          f"{row['pinned_ms'] / n:.2f} ms per image "
                          f"({row['link_both_ms'] / row['pinned_ms']:.2f}x of the link), "
                          f"numpy {row['numpy_ms'] / n:.2f}", flush=True)
    finally:
        _transfer.pinned_download = sides["event waits"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default=None)
    ap.add_argument("--mb", type=float, default=132.7, help="MB each way per image")
    ap.add_argument("--images", type=int, default=32)
    ap.add_argument("--lanes", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--library", action="store_true", help="clkit.map over pinned images")
    args = ap.parse_args()
    if args.library:
        return library(args)
    rt = clkit.runtime(args.device)
    context = rt.context
    nbytes = int(args.mb * 1e6) // 16 * 16
    knl = cl.Program(context, SRC).build().twice
    lk = gpu_e2e.link(rt, nbytes, 5)
    both = max(nbytes / lk["both_up_GBs"], nbytes / lk["both_down_GBs"]) / 1e6
    print(f"{rt.device.name}: {nbytes / 1e6:.1f} MB each way per image, link with both "
          f"directions busy {both:.2f} ms ({nbytes / both / 1e6:.1f} GB/s each way)")
    lanes = [Lane(rt, nbytes) for _ in range(args.lanes)]
    ways = {
        "threads, blocking read": lambda: by_threads(lanes, knl, args.images, "blocking"),
        "threads, event.wait": lambda: by_threads(lanes, knl, args.images, "wait"),
        "threads, polled": lambda: by_threads(lanes, knl, args.images, "poll"),
        "threads, finish": lambda: by_threads(lanes, knl, args.images, "finish"),
        "threads, marker": lambda: by_threads(lanes, knl, args.images, "marker"),
        "one thread, lanes' queues": lambda: by_one_thread(lanes, knl, args.images, False,
                                                           context),
        "one thread, a queue per direction": lambda: by_one_thread(lanes, knl, args.images,
                                                                   True, context),
    }
    for name, way in ways.items():
        way()  # warm-up
        for r in range(args.rounds):
            t0 = time.perf_counter()
            way()
            ms = (time.perf_counter() - t0) * 1e3 / args.images
            print(f"{name:36s} round {r}: {ms:7.2f} ms per image ({both / ms:.2f}x of the link)")


if __name__ == "__main__":
    main()
