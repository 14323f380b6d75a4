"""Bad inputs, table by table: each gets clkit's own exception, with a message that says what is
wrong, and never a bare pyopencl error, a crash or a hang.  Inputs that are unusual but valid
(views with any strides, empty arrays, sigma 0, offsets into device buffers) must work.

The mistakes already checked next to each function (``tests/kernels/``, ``tests/core/``:
``test_launch.py``, ``test_devices.py``) are not repeated here; this fills the gaps between them.
"""


import re

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest
import scipy.ndimage

import clkit
import clkit.kernels as ck
from clkit import ArgumentTypeError as ArgType
from clkit import ArgumentValueError as ArgValue
from clkit import BuildError, DeviceNotFoundError, OutOfDeviceMemoryError
from _reference import reporting

IMAGE = np.arange(20, dtype=np.float32).reshape(4, 5)
RGB = np.zeros((4, 5, 3), np.uint8)
DEPTH = np.ones((3, 4), np.uint16)
MASK = np.ones((3, 3))


def cam(**kw):
    return {"fx": 1.0, "fy": 1.0, "cx": 0.0, "cy": 0.0, **kw}


# (id, call(device), exception, a regular expression the message must match)
LIBRARY_MISTAKES = [
    ("vector_add-float16", lambda d: ck.vector_add(np.ones(3, np.float16), np.ones(3, np.float16),
                                                   device=d), ArgType, r"float16.*float32"),
    ("vector_add-strings", lambda d: ck.vector_add(["a"], ["b"], device=d), ArgType, r"<U1"),
    ("vector_add-ragged", lambda d: ck.vector_add([[1, 2], [3]], [1, 2], device=d), ArgType,
     r"vector_add: a must be an array"),
    ("vector_add-numpy-and-device", lambda d: ck.vector_add(
        clkit.to_device(np.ones(3, np.float32), device=d), np.ones(3, np.float32), device=d),
     ArgType, r"as numpy arrays or all as device arrays, not a mix"),
    ("vector_add-read-only-out", lambda d: ck.vector_add(
        np.ones(3, np.float32), np.ones(3, np.float32),
        out=np.broadcast_to(np.float32(0), (3,)), device=d), ArgValue, r"out is read-only"),
    ("grayscale-bool", lambda d: ck.grayscale(RGB.astype(bool), device=d), ArgType,
     r"dtype bool.*uint8, float32"),
    ("grayscale-list-of-ints", lambda d: ck.grayscale(RGB.tolist(), device=d), ArgType,
     r"dtype int64"),
    ("grayscale-nan-weight", lambda d: ck.grayscale(RGB, weights=(np.nan, 0.5, 0.5), device=d),
     ArgValue, r"3 finite numbers"),
    ("grayscale-numpy-out-for-device", lambda d: ck.grayscale(
        clkit.to_device(RGB, device=d), out=np.zeros((4, 5), np.uint8)), ArgType,
     r"out must be a device array"),
    ("convolve-none", lambda d: ck.convolve(None, MASK, device=d), ArgType, r"Python objects"),
    ("convolve-string", lambda d: ck.convolve("image.png", MASK, device=d), ArgValue,
     r"HxW or HxWxC; got an array of shape \(\)"),
    ("convolve-5-channels", lambda d: ck.convolve(np.zeros((4, 5, 5), np.float32), MASK,
                                                  device=d), ArgValue, r"1 to 4 channels"),
    ("convolve-no-channels", lambda d: ck.convolve(np.zeros((4, 5, 0), np.float32), MASK,
                                                   device=d), ArgValue, r"1 to 4 channels"),
    ("convolve-float16", lambda d: ck.convolve(np.zeros((4, 5), np.float16), MASK, device=d),
     ArgType, r"float16.*bool, uint8.*astype"),
    ("convolve-ragged-mask", lambda d: ck.convolve(IMAGE, [[1, 2], [3]], device=d), ArgType,
     r"mask must be an array"),
    ("convolve-complex-mask", lambda d: ck.convolve(IMAGE, MASK.astype(np.complex64), device=d),
     ArgType, r"mask has dtype complex64; pass real numbers"),
    ("convolve-mode-none", lambda d: ck.convolve(IMAGE, MASK, mode=None, device=d), ArgValue,
     r"unknown mode None; use one of reflect"),
    ("convolve-cval-text", lambda d: ck.convolve(IMAGE, MASK, cval="0", device=d), ArgType,
     r"cval must be a number"),
    ("convolve-strided-device-out", lambda d: ck.convolve(
        clkit.to_device(IMAGE, device=d), MASK,
        out=clkit.empty((4, 10), np.float32, device=d)[:, ::2]), ArgValue,
     r"out is a strided view of a device array"),
    ("gaussian-negative-sigma", lambda d: ck.gaussian_blur(IMAGE, -0.5, device=d), ArgValue,
     r"sigma must not be negative"),
    ("gaussian-negative-sigma-pair", lambda d: ck.gaussian_blur(IMAGE, (1.0, -1.0), device=d),
     ArgValue, r"sigma must not be negative"),
    ("gaussian-nan-sigma", lambda d: ck.gaussian_blur(IMAGE, np.nan, device=d), ArgValue,
     r"sigma must be finite"),
    ("gaussian-three-sigmas", lambda d: ck.gaussian_blur(IMAGE, (1, 2, 3), device=d), ArgValue,
     r"one per image axis"),
    ("gaussian-sigma-text", lambda d: ck.gaussian_blur(IMAGE, "2", device=d), ArgType,
     r"sigma must be a number"),
    ("gaussian-zero-truncate", lambda d: ck.gaussian_blur(IMAGE, 1.0, truncate=0, device=d),
     ArgValue, r"truncate must be positive"),
    ("gaussian-huge-sigma", lambda d: ck.gaussian_blur(IMAGE, 1e6, device=d), ArgValue,
     r"8000001 x 8000001 taps, more than clkit handles"),
    ("gaussian-complex", lambda d: ck.gaussian_blur(IMAGE.astype(np.complex64), 1.0, device=d),
     ArgType, r"complex64"),
    ("mandelbrot-zero-width", lambda d: ck.mandelbrot(0, 5, device=d), ArgValue,
     r"width must be positive, got 0"),
    ("mandelbrot-zero-height", lambda d: ck.mandelbrot(5, 0, device=d), ArgValue,
     r"height must be positive, got 0"),
    ("mandelbrot-max-iter-0", lambda d: ck.mandelbrot(5, 5, max_iter=0, device=d), ArgValue,
     r"max_iter must be at least 1.*got 0"),
    ("mandelbrot-max-iter-2**31", lambda d: ck.mandelbrot(5, 5, max_iter=2**31, device=d),
     ArgValue, r"below 2\*\*31"),
    ("mandelbrot-max-iter-float", lambda d: ck.mandelbrot(5, 5, max_iter=10.0, device=d),
     ArgType, r"max_iter must be an integer"),
    ("mandelbrot-bool-width", lambda d: ck.mandelbrot(True, 5, device=d), ArgType,
     r"width must be an integer, not True"),
    ("mandelbrot-nan-window", lambda d: ck.mandelbrot(5, 5, xmin=np.nan, device=d), ArgValue,
     r"xmin must be finite"),
    ("mandelbrot-infinite-window", lambda d: ck.mandelbrot(5, 5, ymax=np.inf, device=d),
     ArgValue, r"ymax must be finite"),
    ("mandelbrot-float16", lambda d: ck.mandelbrot(5, 5, dtype=np.float16, device=d), ArgType,
     r"float16.*float32, float64"),
    ("mandelbrot-strided-device-out", lambda d: ck.mandelbrot(
        5, 3, out=clkit.empty((3, 10), np.int32, device=d)[:, ::2], device=d), ArgValue,
     r"strided view"),
    ("depth-int32", lambda d: ck.depth_to_points(DEPTH.astype(np.int32), device=d, **cam()),
     ArgType, r"int32.*uint16, float32"),
    ("depth-zero-fx", lambda d: ck.depth_to_points(DEPTH, device=d, **cam(fx=0.0)), ArgValue,
     r"fx and fy must not be 0"),
    ("depth-infinite-cy", lambda d: ck.depth_to_points(DEPTH, device=d, **cam(cy=np.inf)),
     ArgValue, r"cy must be finite"),
    ("depth-zero-scale", lambda d: ck.depth_to_points(DEPTH, depth_scale=0, device=d, **cam()),
     ArgValue, r"depth_scale must not be 0"),
    ("depth-text-fx", lambda d: ck.depth_to_points(DEPTH, device=d, **cam(fx="500")), ArgType,
     r"fx must be a number"),
    ("depth-numpy-and-device-rgb", lambda d: ck.depth_to_points(
        DEPTH, rgb=clkit.to_device(np.zeros((3, 4, 3), np.uint8), device=d), device=d, **cam()),
     ArgType, r"both as numpy arrays or both as device arrays"),
]

DEVICE_MISTAKES = [
    ("unknown-spec", lambda: ck.convolve(IMAGE, MASK, device="no-such-gpu"), DeviceNotFoundError,
     r"'no-such-gpu'; the visible devices are: .*A spec is"),
    ("spec-of-wrong-type", lambda: ck.grayscale(RGB, device=0), TypeError,
     r"a device spec is a clkit.Device or a string, not int"),
    ("empty-device-list", lambda: ck.convolve(IMAGE, MASK, device=[]), DeviceNotFoundError,
     r"empty list of devices"),
    ("empty-device-list-depth", lambda: ck.depth_to_points(DEPTH, device=[], **cam()),
     DeviceNotFoundError, r"empty list of devices"),
    ("list-with-unknown", lambda: ck.vector_add(IMAGE, IMAGE, device=["cpu", "no-such-gpu"]),
     DeviceNotFoundError, r"'no-such-gpu'"),
    ("index-past-the-last", lambda: ck.hello(device="cpu:99"), DeviceNotFoundError, r"cpu:99"),
]


@pytest.mark.parametrize("call, error, match", [row[1:] for row in LIBRARY_MISTAKES],
                         ids=[row[0] for row in LIBRARY_MISTAKES])
def test_library_mistakes(device, call, error, match):
    with pytest.raises(error, match=match) as info:
        call(device)
    assert isinstance(info.value, clkit.ClkitError)


@pytest.mark.parametrize("call, error, match", [row[1:] for row in DEVICE_MISTAKES],
                         ids=[row[0] for row in DEVICE_MISTAKES])
def test_device_spec_mistakes(call, error, match):
    with pytest.raises(error, match=match):
        call()


# -- the launch API: user kernels ------------------------------------------------------------

USER = """
__kernel void fill(__global int* out, const uchar u, const uint n, const long l, const float f,
                   const double d)
{ out[get_global_id(0)] = (int)u + (int)n + (int)l + (int)f + (int)d; }
__kernel void echo(__global uchar* u_out, __global uint* n_out, __global long* l_out,
                   __global float* f_out, __global double* d_out, const uchar u, const uint n,
                   const long l, const float f, const double d)
{ *u_out = u; *n_out = n; *l_out = l; *f_out = f; *d_out = d; }
__kernel void copy(__global const float* src, __global float* dst)
{ dst[get_global_id(0)] = src[get_global_id(0)]; }
__kernel void stage(__global float* a, __local float* tmp)
{
    tmp[get_local_id(0)] = a[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    a[get_global_id(0)] = tmp[get_local_size(0) - 1 - get_local_id(0)];
}
"""

OK_SCALARS = (1, 2, 3, 4.0, 5.0)


def scalars(**changed):
    names = ("u", "n", "l", "f", "d")
    values = dict(zip(names, OK_SCALARS), **changed)
    return [values[n] for n in names]


LAUNCH_MISTAKES = [
    ("too-many-arguments", lambda k, d: k.copy(np.zeros(4, np.float32), np.zeros(4, np.float32),
                                               np.zeros(4, np.float32)),
     ArgType, r"copy takes 2 arguments \(__global const float\* src, __global float\* dst\); "
              r"got 3"),
    ("no-arguments", lambda k, d: k.copy(), ArgType, r"copy takes 2 arguments .*got 0"),
    ("negative-for-uchar", lambda k, d: k.fill(np.zeros(2, np.int32), *scalars(u=-1)), ArgValue,
     r"parameter 'u' \(uchar u\): -1 is out of range for uchar \(0 to 255\)"),
    ("negative-for-uint", lambda k, d: k.fill(np.zeros(2, np.int32), *scalars(n=-5)), ArgValue,
     r"'n' \(uint n\): -5 is out of range for uint"),
    ("too-big-for-long", lambda k, d: k.fill(np.zeros(2, np.int32), *scalars(l=2**63)),
     ArgValue, r"'l' \(long l\): 9223372036854775808 is out of range for long"),
    ("numpy-uint64-too-big-for-long", lambda k, d: k.fill(
        np.zeros(2, np.int32), *scalars(l=np.uint64(2**64 - 1))), ArgValue, r"out of range"),
    ("float-for-int", lambda k, d: k.fill(np.zeros(2, np.int32), *scalars(n=2.0)), ArgType,
     r"'n' \(uint n\): pass an integer, not 2.0"),
    ("bool-for-int", lambda k, d: k.fill(np.zeros(2, np.int32), *scalars(n=True)), ArgType,
     r"'n' \(uint n\): pass a number, not bool"),
    ("complex-for-float", lambda k, d: k.fill(np.zeros(2, np.int32), *scalars(f=1j)), ArgType,
     r"'f' \(float f\): pass a number, not complex"),
    ("numpy-complex-for-float", lambda k, d: k.fill(np.zeros(2, np.int32),
                                                    *scalars(f=np.complex64(1))), ArgType,
     r"'f' \(float f\): a complex number cannot be passed as float"),
    ("double-beyond-float", lambda k, d: k.fill(np.zeros(2, np.int32),
                                                *scalars(f=np.float64(1e300))), ArgValue,
     r"'f' \(float f\): 1e\+300 is out of range for float"),
    ("int-beyond-any-float", lambda k, d: k.fill(np.zeros(2, np.int32), *scalars(d=10**400)),
     ArgValue, r"'d' \(double d\): .* is out of range for double"),
    ("text-for-double", lambda k, d: k.fill(np.zeros(2, np.int32), *scalars(d="1")), ArgType,
     r"'d' \(double d\): pass a number, not str"),
    ("list-for-pointer", lambda k, d: k.copy([1.0], np.zeros(1, np.float32)), ArgType,
     r"'src' \(__global const float\* src\): pass a numpy array or a device array, not list"),
    ("int-array-for-float-pointer", lambda k, d: k.copy(np.zeros(4, np.int32),
                                                        np.zeros(4, np.float32)), ArgType,
     r"'src'.*dtype int32; pass dtype float32"),
    ("negative-global-size", lambda k, d: k.copy(np.zeros(4, np.float32), np.zeros(4, np.float32),
                                                 global_size=-4), ArgValue,
     r"global_size must be a non-negative int"),
    ("float-global-size", lambda k, d: k.copy(np.zeros(4, np.float32), np.zeros(4, np.float32),
                                              global_size=4.0), ArgValue,
     r"global_size must be a non-negative int or a tuple of 1 to 3 of them, got 4.0"),
    ("local-memory-beyond-the-device", lambda k, d: k.stage(
        np.zeros(4, np.float32), clkit.LocalMemory(d.local_mem + 4), local_size=4), ArgValue,
     r"kernel stage: its __local arguments ask for .* per work-group, and .* has .* of local "
     r"memory left for them .*pass smaller LocalMemory sizes"),
    ("zero-local-size", lambda k, d: k.copy(np.zeros(4, np.float32), np.zeros(4, np.float32),
                                            local_size=0), ArgValue,
     r"local_size \(0,\) has a 0 in dimension 0; every size must be at least 1"),
    ("local-size-of-other-rank", lambda k, d: k.copy(np.zeros(4, np.float32),
                                                     np.zeros(4, np.float32),
                                                     local_size=(2, 2)), ArgValue,
     r"different numbers of dimensions"),
    ("strided-device-array", lambda k, d: k.copy(
        clkit.to_device(np.zeros(8, np.float32), device=d)[::2], np.zeros(4, np.float32)),
     ArgValue, r"'src'.*strided view .*numpy array"),
    ("misaligned-device-slice", lambda k, d: k.copy(
        clkit.to_device(np.zeros(300, np.float32), device=d)[3:], np.zeros(297, np.float32)),
     ArgValue, r"'src'.*starts 12 bytes into its buffer.*multiples of \d+ bytes"),
    # the context stays referenced while the array is made: Intel's CPU runtime cannot give a
    # queue's context back once the Context object that made it is gone
    ("device-array-of-a-foreign-context", lambda k, d: (lambda ctx: k.copy(
        cl_array.to_device(cl.CommandQueue(ctx), np.zeros(4, np.float32)),
        np.zeros(4, np.float32)))(cl.Context([d.cl_device])), ArgValue,
     r"'src'.*made in a pyopencl context that clkit did not create; make it with "
     r"clkit.to_device"),
]


@pytest.fixture
def user_kernels(device):
    prg = clkit.Program.from_source(USER, device=device, name="<user>")
    if not device.fp64:
        pytest.skip(f"{device} has no cl_khr_fp64 (the test kernel takes a double)")
    return prg


@pytest.mark.parametrize("call, error, match", [row[1:] for row in LAUNCH_MISTAKES],
                         ids=[row[0] for row in LAUNCH_MISTAKES])
def test_launch_mistakes(user_kernels, device, call, error, match):
    with pytest.raises(error, match=match):
        call(user_kernels, device)


@pytest.mark.parametrize("values", [
    (np.uint8(255), 2**32 - 1, -2**63, np.float32(3.4e38), -1e308),
    (0, np.uint32(0), 2**63 - 1, float("nan"), float("-inf")),
    (1, 1, np.int64(7), -np.float32(1.5e-45), 5e-324),  # denormals pass unchanged
    # numpy scalars take the checked conversion, Python ones a faster path: both exact
    (np.uint8(0), np.uint32(1), np.int64(-2**63), np.float64(-3.4e38), np.float64(-1e308)),
    (np.uint8(1), np.uint32(2), np.int64(0), np.float64(1e-45), np.float64(5e-324)),
], ids=["max", "min-and-special", "small", "numpy", "numpy-small"])
def test_scalars_at_their_limits_pass(user_kernels, values):
    outs = [np.zeros(1, t) for t in (np.uint8, np.uint32, np.int64, np.float32, np.float64)]
    user_kernels.echo(*outs, *values, global_size=1)
    for out, value in zip(outs, values):
        np.testing.assert_array_equal(out, np.array([value]).astype(out.dtype))


def test_local_memory_within_the_device_runs(user_kernels):
    a = np.arange(12, dtype=np.float32)
    user_kernels.stage(a, clkit.LocalMemory(4 * 4), local_size=4)
    np.testing.assert_array_equal(a, np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::-1].ravel())


PROGRAM_MISTAKES = [
    ("source-as-bytes", lambda p: clkit.Program.from_source(b"__kernel void k() {}"), ArgType,
     r"takes the source as str, not bytes"),
    ("define-name-with-space", lambda p: clkit.Program.from_source(
        "__kernel void k() {}", defines={"A B": 1}), ArgValue, r"'A B' is not a C identifier"),
    ("define-value-with-space", lambda p: clkit.Program.from_source(
        "__kernel void k() {}", defines={"T": "unsigned int"}), ArgValue,
     r"a value with spaces cannot be passed"),
    ("define-value-list", lambda p: clkit.Program.from_source(
        "__kernel void k() {}", defines={"T": [1]}), ArgType, r"define T: use a string"),
    ("defines-not-a-dict", lambda p: clkit.Program.from_source(
        "__kernel void k() {}", defines=["T=float"]), ArgType, r"defines must be a dict"),
    ("load-none", lambda p: clkit.load(None), ArgType, r"load takes a kernel name or a path"),
    ("load-missing-file", lambda p: clkit.load(p / "absent.cl"), FileNotFoundError,
     r"no kernel source file .*absent.cl"),
    ("load-a-folder", lambda p: clkit.load(p), FileNotFoundError, r"no kernel source file"),
    ("load-unknown-library-kernel", lambda p: clkit.load("sharpen"), FileNotFoundError,
     r"'sharpen' is neither a library kernel \(.*grayscale.*\) nor an existing .cl file"),
]


@pytest.mark.parametrize("call, error, match", [row[1:] for row in PROGRAM_MISTAKES],
                         ids=[row[0] for row in PROGRAM_MISTAKES])
def test_program_mistakes(tmp_path, call, error, match):
    with pytest.raises(error, match=match):
        call(tmp_path)


BUILD_FAILURES = [
    ("missing-include", '#include "nowhere.h"\n__kernel void k(__global int* x) { x[0] = 1; }\n',
     (), r"nowhere.h"),
    ("unknown-option", "__kernel void k(__global int* x) { x[0] = 1; }\n",
     ("-fno-such-option",), r"-fno-such-option"),
    ("undeclared-define", "__kernel void k(__global T* x) { x[0] = 1; }\n", (), r"T"),
]


@pytest.mark.parametrize("source, options, match", [row[1:] for row in BUILD_FAILURES],
                         ids=[row[0] for row in BUILD_FAILURES])
def test_sources_that_do_not_compile(device, tmp_path, source, options, match):
    path = tmp_path / "broken.cl"
    path.write_text(source)
    with pytest.raises(BuildError, match=match) as info:
        clkit.load(path, options=options).k(np.zeros(1, np.int32), device=device)
    assert str(path) in str(info.value) and device.id in str(info.value)


def test_a_file_without_kernels(device, tmp_path):
    path = tmp_path / "helpers.cl"
    path.write_text("int twice(int x) { return 2 * x; }\n")
    prg = clkit.load(path)
    with pytest.raises(AttributeError, match=r"helpers.cl has no kernel 'k'"):
        prg.kernel("k")
    assert prg.build(device).kernel_names == []


# -- inputs too large for any device -----------------------------------------------------------

def shrunk(device, max_alloc):
    """Make ``device`` report a small max allocation (and memory) for a while."""
    return reporting(device, max_alloc=max_alloc, global_mem=8 * max_alloc)


TOO_LARGE = [
    ("empty", lambda d: clkit.empty((1025,), np.uint8, device=d), r"empty: 1.00 KiB is more than "
     r"one allocation may hold on .* \(max 1.00 KiB\); split the data"),
    ("to_device", lambda d: clkit.to_device(np.zeros(257, np.float32), device=d),
     r"to_device: 1.00 KiB is more than one allocation"),
    ("user-kernel-numpy-argument", lambda d: clkit.Program.from_source(
        "__kernel void k(__global float* x) { x[get_global_id(0)] = 1; }").k(
        np.zeros(257, np.float32), device=d),
     r"kernel k, parameter 'x' \(__global float\* x\): 1.00 KiB is more than one allocation"),
    ("row-of-an-image", lambda d: ck.grayscale(np.zeros((2, 400, 3), np.uint8), device=d),
     r"even one row of the .* does not fit in"),
    ("row-of-a-convolution", lambda d: ck.convolve(np.zeros((2, 300), np.float32), MASK,
                                                   device=d),
     r"even one row of the image .* does not fit in"),
]


@pytest.mark.parametrize("call, match", [row[1:] for row in TOO_LARGE],
                         ids=[row[0] for row in TOO_LARGE])
def test_inputs_too_large_for_the_device(device, call, match):
    with shrunk(device, 1024):
        with pytest.raises(OutOfDeviceMemoryError, match=match) as info:
            call(device)
    assert isinstance(info.value, MemoryError)


def test_an_allocation_beyond_any_memory(device):
    with pytest.raises(OutOfDeviceMemoryError, match=r"TiB is more than one allocation"):
        clkit.empty((2**40,), np.float32, device=device)
    with pytest.raises(ArgValue, match=r"shape must be whole numbers of at least 0"):
        clkit.empty((-1, 3), np.float32, device=device)
    with pytest.raises(ArgType, match=r"Python objects cannot live on a device"):
        clkit.empty(3, object, device=device)



def test_to_device_refuses_strings_and_arrays_of_no_numbers(device):
    for bad, what in (("abc", "not str 'abc'"), (b"abc", "not bytes b'abc'")):
        with pytest.raises(ArgType, match=f"to_device takes a numpy array .*{what}"):
            clkit.to_device(bad, device=device)
    for bad in (np.array(["a", "b"]), np.array(["2026-12-05"], "datetime64[D]")):
        with pytest.raises(ArgType, match=re.escape(f"an array of dtype {bad.dtype} cannot go to a "
                                                    "device; convert it to a numeric or bool")):
            clkit.to_device(bad, device=device)
    # what it takes: lists of numbers, bools
    np.testing.assert_array_equal(clkit.to_device([3, 1, 2], device=device).get(), [3, 1, 2])
    np.testing.assert_array_equal(clkit.to_device(np.array([True, False]), device=device).get(),
                                  [True, False])


def test_devices_of_an_unknown_type_lists_the_types():
    with pytest.raises(ArgValue, match=r"devices: unknown device type 'xpu'; use one of 'gpu', "
                                       r"'cpu', 'accelerator', or None for every device"):
        clkit.devices(type="xpu")
    with pytest.raises(ArgType, match=r"type must be a string, one of 'gpu', 'cpu', "
                                      r"'accelerator', or None .*; got 3"):
        clkit.devices(type=3)


def test_a_result_beyond_the_host_address_space(device):
    # 10^14 int32 pixels: 364 TiB, more than any x86-64 or arm64 process can map
    with pytest.raises(MemoryError, match=r"a result of shape \(10000000, 10000000\) and dtype "
                                          r"int32 needs 363.80 TiB of host memory"):
        ck.mandelbrot(10**7, 10**7, device=device)


# -- unusual but valid: views, empties, sigma 0, device slices ----------------------------------

def views(array):
    """The same values as a reversed, a strided and a Fortran-ordered view, and unaligned."""
    axes = tuple(range(array.ndim))
    reversed_ = np.flip(np.flip(array, axes).copy(), axes)
    strided = np.zeros((2 * array.shape[0],) + array.shape[1:], array.dtype)
    strided[::2] = array
    raw = np.zeros(array.nbytes + 1, np.uint8)
    unaligned = raw[1:].view(np.uint8)[:array.nbytes].view(array.dtype).reshape(array.shape)
    unaligned[...] = array
    return {"reversed": reversed_, "strided": strided[::2], "fortran": np.asfortranarray(array),
            "unaligned": unaligned}


@pytest.mark.parametrize("layout", ["reversed", "strided", "fortran", "unaligned"])
def test_every_function_takes_views(device, layout, rng):
    rgb = rng.integers(0, 256, (7, 9, 3), dtype=np.uint8)
    image = rng.standard_normal((7, 9)).astype(np.float32)
    depth = rng.integers(0, 4000, (7, 9)).astype(np.uint16)
    want = {"vector_add": ck.vector_add(image, image, device=device),
            "grayscale": ck.grayscale(rgb, device=device),
            "convolve": ck.convolve(image, MASK, device=device),
            "gaussian_blur": ck.gaussian_blur(image, 1.0, device=device),
            "depth_to_points": ck.depth_to_points(depth, rgb=rgb, device=device, **cam())}
    v_rgb, v_image, v_depth = views(rgb)[layout], views(image)[layout], views(depth)[layout]
    assert not v_image.flags.c_contiguous or layout == "unaligned"
    np.testing.assert_array_equal(ck.vector_add(v_image, v_image, device=device),
                                  want["vector_add"])
    np.testing.assert_array_equal(ck.grayscale(v_rgb, device=device), want["grayscale"])
    np.testing.assert_array_equal(ck.convolve(v_image, views(MASK)[layout], device=device),
                                  want["convolve"])
    np.testing.assert_array_equal(ck.gaussian_blur(v_image, 1.0, device=device),
                                  want["gaussian_blur"])
    points, colors = ck.depth_to_points(v_depth, rgb=v_rgb, device=device, **cam())
    np.testing.assert_array_equal(points, want["depth_to_points"][0])
    np.testing.assert_array_equal(colors, want["depth_to_points"][1])


def test_results_into_strided_out_views(device, rng):
    image = rng.standard_normal((6, 7)).astype(np.float32)
    rgb = rng.integers(0, 256, (6, 7, 3), dtype=np.uint8)
    cases = [
        (lambda out: ck.vector_add(image, image, out=out, device=device), image + image,
         np.float32),
        (lambda out: ck.grayscale(rgb, out=out, device=device), ck.grayscale(rgb, device=device),
         np.uint8),
        (lambda out: ck.convolve(image, MASK, out=out, device=device),
         ck.convolve(image, MASK, device=device), np.float32),
        (lambda out: ck.gaussian_blur(image, 0.7, out=out, device=device),
         ck.gaussian_blur(image, 0.7, device=device), np.float32),
        (lambda out: ck.mandelbrot(7, 6, max_iter=30, out=out, device=device),
         ck.mandelbrot(7, 6, max_iter=30, device=device), np.int32),
    ]
    for run, expected, dtype in cases:
        base = np.full((12, 14), 99, dtype)
        out = base[::-2, 1::2]  # negative and step-2 strides
        assert run(out) is out
        np.testing.assert_array_equal(out, expected)
        untouched = base.copy()
        untouched[::-2, 1::2] = 99
        assert (untouched == 99).all() and (base[1::2][:, ::2] == 99).all()


def test_device_array_views_are_inputs_like_any_other(device, rng):
    host = rng.standard_normal((6, 20)).astype(np.float32)
    d = clkit.to_device(host, device=device)
    for view, same in [(d[1:], host[1:]), (d[:, 3:], host[:, 3:]), (d[::-2, ::3], host[::-2, ::3])]:
        got = ck.convolve(view, MASK)
        assert isinstance(got, clkit.Array)
        np.testing.assert_array_equal(got.get(), ck.convolve(same, MASK, device=device))
        np.testing.assert_array_equal(ck.vector_add(view, view).get(), same + same)
    flat = clkit.to_device(np.arange(300, dtype=np.int32), device=device)
    prg = clkit.Program.from_source("__kernel void inc(__global int* x) "
                                    "{ x[get_global_id(0)] += 1; }")
    aligned = (device.cl_device.mem_base_addr_align // 8) // 4  # elements to the alignment
    prg.inc(flat[aligned:], device=device)  # a sub-buffer, used in place
    np.testing.assert_array_equal(flat.get(), np.r_[np.arange(aligned),
                                                    np.arange(aligned, 300) + 1])


@pytest.mark.parametrize("shape", [(0, 5), (5, 0)])
def test_empty_images_give_empty_results(device, shape):
    assert ck.grayscale(np.zeros(shape + (3,), np.uint8), device=device).shape == shape
    for call in (lambda x: ck.convolve(x, MASK, device=device),
                 lambda x: ck.gaussian_blur(x, 1.0, device=device)):
        result = call(np.zeros(shape, np.uint8))
        assert result.shape == shape and result.dtype == np.float32
    points, colors = ck.depth_to_points(np.zeros(shape, np.uint16), rgb=np.zeros(
        shape + (3,), np.uint8), device=device, **cam())
    assert points.shape == colors.shape == (0, 3)
    assert (points.dtype, colors.dtype) == (np.float32, np.uint8)
    assert ck.vector_add(np.zeros(shape, np.int8), np.zeros(shape, np.int8),
                         device=device).shape == shape
    on_device = clkit.to_device(np.zeros(shape, np.float32), device=device)
    result = ck.convolve(on_device, MASK)
    assert isinstance(result, clkit.Array) and result.shape == shape
    assert ck.vector_add(on_device, on_device).shape == shape


@pytest.mark.parametrize("sigma", [0.0, (0.0, 0.0), (0.0, 1.2), (1.2, 0.0)])
def test_sigma_zero_leaves_that_axis_as_scipy_does(device, rng, sigma):
    image = rng.integers(0, 256, (6, 9), dtype=np.uint8)
    result = ck.gaussian_blur(image, sigma, mode="nearest", device=device)
    expected = scipy.ndimage.gaussian_filter(image.astype(np.float64), sigma, mode="nearest")
    assert result.dtype == np.float32
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-4)
    if sigma in (0.0, (0.0, 0.0)):
        np.testing.assert_array_equal(result, image.astype(np.float32))


def test_masks_larger_than_the_image_in_every_mode(device, rng):
    image = rng.standard_normal((2, 3)).astype(np.float32)
    for mode in ("reflect", "constant", "nearest", "mirror", "wrap"):
        got = ck.gaussian_blur(image, 2.0, mode=mode, cval=0.5, device=device)  # 17 x 17 taps
        expected = scipy.ndimage.gaussian_filter(image.astype(np.float64), 2.0, mode=mode,
                                                 cval=0.5)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, err_msg=mode)
