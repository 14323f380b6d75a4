"""Batches: one function over many images, several images in flight.

Each device gets a few lanes, each a worker thread with its own in-order
queue.  A lane runs one image's whole call (upload, kernels, download) on its
queue, so the lanes' commands interleave on the device: while one image
uploads, another's kernels run and a third's result comes back, on a GPU's
separate copy engines for each direction.  Free lanes take the next image,
whichever device they belong to, so faster devices take more images.

At most a few images per lane are read from the input ahead of the one the
caller is consuming, so memory stays bounded however long the batch is.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import queue as queue_module
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl.array as cl_array

from .._errors import ArgumentTypeError, ArgumentValueError
from .._platform.devices import one_launch_at_a_time, select, select_many, turns
from .._platform.runtime import Runtime, runtime, simulator_turn, using_queue

# A GPU overlaps three things: an upload, kernels, a download.  A CPU driver's kernels use
# every core already; a second lane hides the host work between two images' kernels.
LANES = {"gpu": 3, "cpu": 2}
AHEAD = 2  # images read ahead per lane: one waiting for each lane that finishes

_lane_queues_lock = threading.Lock()


def map(function, images, *args, device=None, in_flight=None,  # noqa: A001 (clkit.map)
        **kwargs):
    """``function(image, *args, device=..., **kwargs)`` for every image, several at once.

    The images are processed in overlapping lanes, each with its own queue
    on its device, so that on a GPU one image's upload, another's kernels
    and a third's download run at the same time.  Results come in input
    order.  Only a few images are read ahead of the result being consumed,
    so a batch of any length (a generator reading files, frames of a video)
    runs in bounded memory.

    With images in pinned memory (:func:`clkit.pinned_empty`), uploads need
    no host-side staging copy: keep a few pinned arrays, refill them in
    turn, and say how many with ``in_flight``.

    Parameters
    ----------
    function : callable
        Called as ``function(image, *args, device=dev, **kwargs)``: any
        function of :mod:`clkit.kernels`, or your own that passes ``device``
        on to them.
    images : iterable
        Numpy arrays or device arrays (a list, a generator, ...); shapes and
        dtypes may differ from one image to the next.
    *args, **kwargs
        The same for every image.
    device : Device or str, optional
        Where to run: a spec, ``"all"`` (every device but the simulator) or
        a list of specs to spread the images over several devices.
    in_flight : int, optional
        At most this many images read from ``images`` whose results have not
        been yielded yet.  By default twice the lanes: 6 per GPU, 4 per CPU
        device.  A generator that refills ``K`` arrays in turn (reusing its
        buffers) must pass ``in_flight=K``, or have ``K`` above that number:
        otherwise it refills an array whose image is still being processed.
        The next image is then read only once the image ``K`` places back is
        done.

    Yields
    ------
    object
        ``function``'s result for each image, in input order.

    Raises
    ------
    Exception
        The first image whose call (or reading, for a generator) fails stops
        the batch: the exception raised, with the image's position (from 0)
        in front of its message. Results yielded before it are complete and
        untouched.

    Examples
    --------
    >>> import numpy as np, clkit
    >>> from clkit.kernels import gaussian_blur
    >>> frames = (np.full((8, 8), i, np.float32) for i in range(5))
    >>> [round(float(b[0, 0]), 4) for b in clkit.map(gaussian_blur, frames, 1.0, device="cpu")]
    [0.0, 1.0, 2.0, 3.0, 4.0]
    """
    if not callable(function):
        raise ArgumentTypeError(f"map: function must be callable, not {type(function).__name__} "
                                "(e.g. clkit.kernels.grayscale)")
    try:
        source = iter(images)
    except TypeError:
        raise ArgumentTypeError(f"map: images must be an iterable of arrays (a list, a "
                                f"generator), not {type(images).__name__}") from None
    if in_flight is not None and (isinstance(in_flight, bool) or not isinstance(
            in_flight, (int, np.integer)) or in_flight < 1):
        raise ArgumentValueError(f"map: in_flight must be a whole number of at least 1 (the "
                                 f"arrays a generator refills in turn), got {in_flight!r}")
    targets = _devices(device)
    return _batch(function, source, args, kwargs, targets, in_flight)


def _devices(device) -> list:
    if isinstance(device, (list, tuple)) or (isinstance(device, str)
                                              and device.strip().lower() == "all"):
        return select_many(device)
    return [select(device)]


def _batch(function, source, args, kwargs, targets, in_flight=None):
    rts = [runtime(d) for d in targets]
    if any(d.simulator for d in targets):
        # Oclgrind runs one kernel at a time and only from the thread that made its context.
        yield from _serial(function, source, args, kwargs, rts)
        return
    # The devices' lanes in turn (a first lane of each, then a second ...), so that a batch
    # shorter than the lanes still reaches every device.
    per_device = [[(rt, q) for q in _queues(rt, LANES.get(rt.device.type, 2))] for rt in rts]
    lanes = queue_module.SimpleQueue()
    count = 0
    for turn in itertools.zip_longest(*per_device):
        for lane in filter(None, turn):
            lanes.put(lane)
            count += 1
    local = threading.local()
    together = turns(targets)

    def claim():
        local.lane = lanes.get_nowait()

    def run(index, image):
        rt, q = local.lane
        return _call(function, index, image, args, kwargs, rt, q, together)

    window = collections.deque()
    most = count * AHEAD if in_flight is None else min(count * AHEAD, in_flight)
    failure = None
    numbered = _numbered(source)
    with ThreadPoolExecutor(max_workers=count, thread_name_prefix="clkit-map",
                            initializer=claim) as pool:
        try:
            while True:
                while failure is None and len(window) < most:
                    try:
                        index, image = next(numbered)
                    except StopIteration:
                        break
                    except Exception as exc:  # the input failed: finish what came before it
                        failure = exc
                        break
                    window.append(pool.submit(run, index, image))
                if not window:
                    break
                result = window.popleft().result()
                yield result
            if failure is not None:
                raise failure
        finally:
            for future in window:  # stopped early (an error, or the caller left the loop)
                future.cancel()


def _numbered(source):
    """``(position, image)`` for each image; an input that fails says at which position."""
    for index in itertools.count():
        try:
            image = next(source)
        except StopIteration:
            return
        except Exception as exc:
            _at(exc, index)
            raise
        yield index, image


def _serial(function, source, args, kwargs, rts):
    for index, image in _numbered(source):
        rt = rts[index % len(rts)]
        yield _call(function, index, image, args, kwargs, rt, rt.queue)


def _call(function, index, image, args, kwargs, rt: Runtime, q,
          together=contextlib.nullcontext()):
    if isinstance(image, cl_array.Array):
        with simulator_turn(rt.device):
            image.queue.finish()  # made on another queue: its data must be there before this lane reads
    try:
        with together, using_queue(rt, q):
            result = function(image, *args, device=rt.device, **kwargs)
            with simulator_turn(rt.device):
                q.finish()
    except Exception as exc:
        _at(exc, index)
        raise
    if isinstance(result, cl_array.Array) and result.queue is q and not rt.device.simulator:
        result = result.with_queue(rt.own_queue)  # later work on it follows the runtime's order
    return result


def _at(exc: Exception, index: int) -> Exception:
    """``exc`` itself, the image's position in front of its message: its type and attributes
    stay, so that ``except`` clauses and error codes work as for a single call."""
    where = f"image {index} of the batch (counting from 0)"
    if len(exc.args) == 1 and isinstance(exc.args[0], str):
        exc.args = (f"{where}: {exc.args[0]}",)
    elif hasattr(exc, "add_note"):  # (Python 3.11 and later) shown below the message
        exc.add_note(where)
    return exc


def _queues(rt: Runtime, n: int) -> list:
    """``n`` lane queues of a runtime, made once and kept by it (their ids identify it).

    On PoCL 4 and 5 (:func:`~clkit._platform.devices.one_launch_at_a_time`) the lanes take turns on one
    queue: PoCL 5.0 aborted in 7 runs of 53 of a batch cut into tiles of unequal rows on two
    queues, none in 30 on one.  A lane there still overlaps its host work with the other
    lane's kernels, but PoCL no longer runs two kernels at once (PoCL 3.1, which has not
    failed so, keeps two queues: faster).  Lanes on several such devices take turns image by
    image (``turns``).
    """
    have = rt.held(_queues, list)  # the runtime's: a new context gets queues of its own
    with _lane_queues_lock:
        while len(have) < n:
            have.append(have[0] if have and one_launch_at_a_time(rt.device) else rt.new_queue())
        return have[:n]


