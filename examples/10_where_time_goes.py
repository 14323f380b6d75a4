"""10 - Where the time goes: a timeline of every kernel and transfer.

    python examples/10_where_time_goes.py

"Why is my GPU slower than my CPU?"  The answer is rarely the kernel: it is
the copies between host and device, or the host leaving the device idle.
clkit.trace() records every kernel launch and copy clkit makes inside a
`with` block, with the device's own start and end times, and prints a table
of them; t.save() writes a timeline that https://ui.perfetto.dev or
chrome://tracing opens (drag the file onto the page).

The same two steps, grayscale then a Gaussian blur of a Full-HD frame, run
three ways: with numpy arrays (each call copies its input in and its result
out), with device arrays (one copy in, the intermediate image stays on the
device), and, where there is a GPU, with pinned numpy arrays (copied by DMA
with no staging copy on the host).  On a CPU driver the device shares the
host's memory: numpy arrays are used in place and the copies vanish.
"""

from pathlib import Path

import numpy as np
import scipy.ndimage as ndi
from PIL import Image

import clkit
from clkit.kernels import gaussian_blur, grayscale, warmup

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "output"
OUTPUT.mkdir(exist_ok=True)

with Image.open(HERE / "data" / "astronaut.jpg") as photo:
    frame = np.asarray(photo.convert("RGB").resize((1920, 1080), Image.BILINEAR))
device = clkit.select()
SIGMA, REPEAT = 2.0, 3

# The reference, in numpy and scipy: gray = 0.299 R + 0.587 G + 0.114 B, then the blur.
want_gray = np.rint(frame @ np.array([0.299, 0.587, 0.114], np.float32)).astype(np.uint8)


def check(gray, soft):
    assert np.abs(gray.astype(int) - want_gray).max() <= 1
    want_soft = ndi.gaussian_filter(gray.astype(np.float32), SIGMA)
    assert np.allclose(soft, want_soft, rtol=1e-4, atol=1e-3)


def report(name, t):
    print(f"\n== {name}\n{t.summary()}")
    t.save(OUTPUT / f"10_{name}.json")  # open it in https://ui.perfetto.dev
    try:
        t.plot(OUTPUT / f"10_{name}.png")
    except clkit.ClkitError:  # no matplotlib: the JSON timeline is there all the same
        pass


# The first call of each kernel variant compiles it (or loads it from the disk cache), and some
# drivers finish compiling at the first launch: keep that out of the timelines. warmup() builds
# the blur's specialised kernels now (until they are built, a generic kernel answers).
warmup(sigmas=[SIGMA], dtypes=["uint8"], device=device)
gaussian_blur(grayscale(frame, device=device), SIGMA, device=device)
gaussian_blur(grayscale(clkit.to_device(frame, device=device)), SIGMA).get()

# 1. Numpy in, numpy out: each call copies its input to the device and its result back.
with clkit.trace() as t:
    for _ in range(REPEAT):
        gray = grayscale(frame, device=device)
        soft = gaussian_blur(gray, SIGMA, device=device)
check(gray, soft)
report("numpy_arrays", t)

# 2. Device arrays: one copy in; the gray image never leaves the device. (`.get()` at the end
#    is pyopencl's own copy, outside what clkit records.)
with clkit.trace() as t:
    for _ in range(REPEAT):
        frame_dev = clkit.to_device(frame, device=device)
        gray_dev = grayscale(frame_dev)
        soft_dev = gaussian_blur(gray_dev, SIGMA)
    clkit.runtime(device).queue.finish()
check(gray_dev.get(), soft_dev.get())
report("device_arrays", t)

# 3. Pinned numpy arrays (on a GPU): the same calls as in 1, with inputs and outputs in
#    page-locked memory, which the GPU's copy engine reads and writes directly.
if device.type == "gpu":
    frame_pinned = clkit.pinned_like(frame, device=device)
    gray = clkit.pinned_empty(want_gray.shape, np.uint8, device=device)
    soft = clkit.pinned_empty(want_gray.shape, np.float32, device=device)
    with clkit.trace() as t:
        for _ in range(REPEAT):
            grayscale(frame_pinned, out=gray, device=device)
            gaussian_blur(gray, SIGMA, out=soft, device=device)
    check(gray, soft)
    report("pinned_arrays", t)
else:
    print(f"\n(no pinned-array run: {device.name} shares memory with the host)")

print(f"\nall results agree with numpy and scipy; timelines in {OUTPUT}")
