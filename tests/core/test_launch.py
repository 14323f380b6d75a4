"""The uniform launch API, with user kernels in temporary .cl files, on every device."""

import threading
import warnings

import numpy as np
import pyopencl as cl
import pytest

import clkit
import clkit.kernels
from clkit._build import build as _build
from clkit._platform import runtime as _runtime
from clkit._platform.runtime import runtime_of_queue, using_queue

from _reference import BLOCK_SUMS, SAXPY



@pytest.fixture
def write_cl(tmp_path):
    def write(text, name="user.cl"):
        path = tmp_path / name
        path.write_text(text)
        return path
    return write


def test_user_kernel_from_a_file(device, write_cl, rng):
    prg = clkit.load(write_cl(SAXPY), device=device)
    x = rng.standard_normal(1009).astype(np.float32)
    y = rng.standard_normal(1009).astype(np.float32)
    expected = np.float32(2.5) * x + y
    launch = prg.saxpy(2.5, x, y)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
    assert isinstance(launch, clkit.Launch)
    assert launch.kernel_ms >= 0.0
    assert launch.device == device


def test_kernel_is_the_same_object(write_cl):
    prg = clkit.load(write_cl(SAXPY))
    assert prg.saxpy is prg.saxpy is prg["saxpy"]
    with pytest.raises(AttributeError, match="saxpy"):
        prg.nothing
    with pytest.raises(KeyError):
        prg["nothing"]


def test_float4_and_scalar_parameters(device, rng):
    src = """
    __kernel void scale4(__global const float4* a, __global float4* out, const float4 s,
                         const int offset, const uchar small, const ulong big)
    {
        size_t i = get_global_id(0);
        out[i] = a[i] * s + (float)offset + (float)small + (float)(big >> 40);
    }
    """
    prg = clkit.Program.from_source(src, device=device)
    a = rng.standard_normal((37, 4)).astype(np.float32)
    out = np.zeros_like(a)
    s = (1.0, -2.0, 0.5, 4.0)
    prg.scale4(a, out, s, -3, 200, 5 << 40)
    expected = a * np.float32(s) + np.float32(-3 + 200 + 5)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ctype,dtype,value", [
    ("char", np.int8, -128), ("uchar", np.uint8, 255), ("short", np.int16, -32768),
    ("ushort", np.uint16, 65535), ("int", np.int32, -2**31), ("uint", np.uint32, 2**32 - 1),
    ("long", np.int64, -2**63), ("ulong", np.uint64, 2**64 - 1), ("float", np.float32, 1.5e38),
    ("double", np.float64, 1e300)])
def test_scalar_types_reach_the_kernel(device, ctype, dtype, value):
    if ctype == "double" and not device.fp64:
        pytest.skip(f"{device} has no cl_khr_fp64")
    pragma = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if ctype == "double" else ""
    src = f"{pragma}__kernel void put(__global {ctype}* out, const {ctype} v) {{ out[0] = v; }}"
    out = np.zeros(1, dtype)
    clkit.Program.from_source(src).put(out, value, device=device)
    assert out[0] == dtype(value)


def test_device_arrays_are_used_in_place_without_copies(device, rng, monkeypatch):
    prg = clkit.Program.from_source(SAXPY, device=device)
    x_host = rng.standard_normal(4099).astype(np.float32)
    y_host = rng.standard_normal(4099).astype(np.float32)
    x = clkit.to_device(x_host, device=device)
    y = clkit.to_device(y_host, device=device)
    copies = []
    real_copy = cl.enqueue_copy
    monkeypatch.setattr(cl, "enqueue_copy", lambda *a, **k: copies.append(a) or real_copy(*a, **k))
    prg.saxpy(-1.5, x, y)
    prg.saxpy(-1.5, x, y)
    assert copies == []
    monkeypatch.undo()
    np.testing.assert_allclose(y.get(), y_host - 3.0 * x_host, rtol=1e-5, atol=1e-6)


def test_device_array_picks_the_device(device):
    prg = clkit.Program.from_source("__kernel void inc(__global int* x) "
                                    "{ x[get_global_id(0)] += 1; }")
    x = clkit.to_device(np.arange(10, dtype=np.int32), device=device)
    assert prg.inc(x).device == device
    assert (x.get() == np.arange(1, 11)).all()
    y = clkit.empty((3, 5), np.int32, device=device)
    assert y.shape == (3, 5) and y.dtype == np.int32


def test_local_memory_reduction(device, rng):
    group = 64
    x = rng.standard_normal(group * 13).astype(np.float32)
    sums = np.zeros(13, np.float32)
    clkit.Program.from_source(BLOCK_SUMS).block_sums(x, sums, clkit.LocalMemory(group * 4),
                                              global_size=x.size, local_size=group,
                                              device=device)
    np.testing.assert_allclose(sums, x.reshape(13, group).sum(axis=1), rtol=1e-4, atol=1e-5)


def test_two_dimensional_launch_and_wait_false(device, rng):
    src = """
    __kernel void transpose(__global const int* a, __global int* b, const int rows, const int cols)
    {
        int c = get_global_id(0), r = get_global_id(1);
        b[c * rows + r] = a[r * cols + c];
    }
    """
    a = rng.integers(-1000, 1000, (7, 11)).astype(np.int32)
    b = np.zeros((11, 7), np.int32)
    launch = clkit.Program.from_source(src).transpose(a, b, 7, 11, global_size=(11, 7),
                                                      device=device, wait=False)
    launch.wait()
    assert launch.done
    assert (b == a.T).all()


def test_non_contiguous_arrays_are_copied_in_and_out(device, rng):
    prg = clkit.Program.from_source(SAXPY, device=device)
    x_big = rng.standard_normal(200).astype(np.float32)
    y_big = rng.standard_normal(200).astype(np.float32)
    x, y = x_big[::2], y_big[1::2]
    expected = 2.0 * x + y
    untouched = y_big[::2].copy()
    prg.saxpy(2.0, x, y)
    np.testing.assert_allclose(y_big[1::2], expected, rtol=1e-5, atol=1e-6)
    assert (y_big[::2] == untouched).all()
    x_rev = x_big[::-1]
    y2 = np.zeros(200, np.float32)
    prg.saxpy(1.0, x_rev, y2)
    assert (y2 == x_big[::-1]).all()


SHIFT = """
__kernel void shift(__global const float* x, __global float* y, const int n)
{
    size_t i = get_global_id(0);
    y[i] = x[(i + 1) % n] - x[i];
}
"""


def test_numpy_arguments_on_shared_memory_devices_are_used_in_place(device, rng, monkeypatch):
    """On a device that shares the host's memory (CPU drivers) a waited-for call reads and writes
    the numpy arrays themselves, with no buffers copied; elsewhere, or with ``wait=False``, they
    are copied in and out."""
    from clkit._memory import transfer as _transfer
    prg = clkit.Program.from_source(SAXPY, device=device)
    made = []
    real_buffer = cl.Buffer
    monkeypatch.setattr(cl, "Buffer", lambda *a, **k: made.append(a[1]) or real_buffer(*a, **k))
    x, y = (_transfer.aligned_empty((4099,), np.float32) for _ in range(2))  # on 128 bytes
    x[...], y[...] = rng.standard_normal((2, 4099))
    expected = np.float32(2.5) * x + y
    prg.saxpy(2.5, x, y)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
    in_place = [bool(flags & cl.mem_flags.USE_HOST_PTR) for flags in made]
    assert in_place == [device.unified_memory] * 2
    made.clear()
    prg.saxpy(-2.5, x, y, wait=False).wait()
    np.testing.assert_allclose(y, expected - np.float32(2.5) * x, rtol=1e-5, atol=1e-5)
    assert not any(flags & cl.mem_flags.USE_HOST_PTR for flags in made)


def test_an_array_passed_twice_is_read_as_it_was_at_the_call(device, rng):
    """An array given both as the input and the output of a kernel: the kernel reads the values
    it had at the call, whichever argument comes first, also where arrays are used in place."""
    prg = clkit.Program.from_source(SHIFT, device=device)
    src = """
    __kernel void shift_back(__global float* y, __global const float* x, const int n)
    {
        size_t i = get_global_id(0);
        y[i] = x[(i + 1) % n] - x[i];
    }
    """
    back = clkit.Program.from_source(src, device=device)
    for call in (lambda a: prg.shift(a, a, a.size), lambda a: back.shift_back(a, a, a.size)):
        a = rng.standard_normal(1 << 16).astype(np.float32)
        expected = np.roll(a, -1) - a
        call(a)
        np.testing.assert_array_equal(a, expected)
    # overlapping views of one array
    a = rng.standard_normal(1 << 16).astype(np.float32)
    expected = np.roll(a[:-4], -1) - a[:-4]
    prg.shift(a[:-4], a[4:], a.size - 4)
    np.testing.assert_array_equal(a[4:], expected)


@pytest.mark.parametrize("offset", [4, 16, 32, 128])
def test_numpy_arrays_off_the_types_alignment_are_copied(device, rng, monkeypatch, offset):
    """A numpy array is used in place only where it starts as a buffer of its type would (on 16
    bytes, 32 for a float8, and what the driver needs to use host memory in place); others are
    copied. The results are the same."""
    from clkit._memory import transfer as _transfer
    src = """
    __kernel void scale8(__global const float8* a, __global float8* out)
    {
        size_t i = get_global_id(0);
        out[i] = a[i] * 3.0f;
    }
    """
    prg = clkit.Program.from_source(src, device=device)
    made = []
    real_buffer = cl.Buffer
    monkeypatch.setattr(cl, "Buffer", lambda *a, **k: made.append(a[1]) or real_buffer(*a, **k))
    raw = np.zeros(8 * 50 + 128, np.float32)
    start = (-raw.ctypes.data % 256 + offset) // 4
    a = raw[start:start + 8 * 50]
    a[...] = rng.standard_normal(a.size)
    out_raw = np.zeros(raw.size + 64, np.float32)
    out = out_raw[-out_raw.ctypes.data % 256 // 4 + offset // 4:][:a.size]
    prg.scale8(a, out)
    np.testing.assert_array_equal(out, a * np.float32(3))
    assert np.count_nonzero(out_raw) == np.count_nonzero(out)
    aligned = offset % max(32, _transfer.host_ptr_align(device)) == 0
    in_place = [bool(flags & cl.mem_flags.USE_HOST_PTR) for flags in made]
    assert in_place == [device.unified_memory and aligned] * 2


def test_empty_arrays_launch_nothing(device):
    prg = clkit.Program.from_source(SAXPY, device=device)
    x = np.zeros(0, np.float32)
    launch = prg.saxpy(1.0, x, np.zeros(0, np.float32))
    assert launch.kernel_ms == 0.0


def test_defines_and_options(device):
    src = "__kernel void fill(__global int* x) { x[get_global_id(0)] = VALUE * SCALE; }"
    prg = clkit.Program.from_source(src, defines={"VALUE": 6, "SCALE": "7"}, device=device,
                                    options=["-cl-mad-enable"])
    assert "-DVALUE=6" in prg.options and "-cl-mad-enable" in prg.options
    x = np.zeros(5, np.int32)
    prg.fill(x)
    assert (x == 42).all()


def test_include_from_a_user_file(device, write_cl):
    write_cl("#define TWICE(v) (2 * (v))\n", name="helpers.h")
    path = write_cl('#include "helpers.h"\n'
                    "__kernel void dbl(__global int* x) "
                    "{ x[get_global_id(0)] = TWICE(x[get_global_id(0)]); }\n")
    x = np.arange(9, dtype=np.int32)
    clkit.load(path).dbl(x, device=device)
    assert (x == 2 * np.arange(9)).all()


def test_build_error_names_file_line_device_and_options(device, write_cl):
    path = write_cl("// a comment\n\n__kernel void broken(__global float* x)\n{\n"
                    "    x[0] = undeclared_thing + 1;\n}\n")
    prg = clkit.load(path, defines={"MARKER": 1})
    with pytest.raises(clkit.BuildError) as err:
        prg.broken(np.zeros(1, np.float32), device=device)
    message = str(err.value)
    assert f"{path}:5:" in message
    assert "undeclared_thing + 1" in message
    assert ">    5 |" in message
    assert device.id in message and "-DMARKER=1" in message
    assert err.value.file == str(path) and err.value.device == device


def test_build_error_in_an_included_header(device, write_cl):
    write_cl("#define OK 1\nint oops(void) { return missing_name; }\n", name="bad.h")
    path = write_cl('#include "bad.h"\n__kernel void k(__global int* x) { x[0] = OK; }\n')
    with pytest.raises(clkit.BuildError) as err:
        clkit.load(path).build(device)
    assert f"{path.parent / 'bad.h'}:2:" in str(err.value)
    assert "missing_name" in str(err.value)


def test_none_is_a_null_pointer_for_optional_buffers(device):
    prg = clkit.Program.from_source(
        "__kernel void scale(__global float* a, __global const float* by)\n"
        "{ size_t i = get_global_id(0); a[i] = by ? a[i] * by[0] : -a[i]; }", device=device)
    a = np.arange(7, dtype=np.float32)
    prg.scale(a, None)
    np.testing.assert_array_equal(a, -np.arange(7, dtype=np.float32))
    prg.scale(a, np.array([3], np.float32))
    np.testing.assert_array_equal(a, -3 * np.arange(7, dtype=np.float32))


def test_compiler_messages_of_a_user_file_warn_with_its_lines(device, write_cl, tmp_path,
                                                             monkeypatch):
    monkeypatch.setenv("CLKIT_CACHE_DIR", str(tmp_path / "cache"))  # compile, not a cached binary
    path = write_cl("__kernel void k(__global int* x)\n{\n#warning check this line\n"
                    "    x[0] = 1;\n}\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        built = clkit.load(path).build(device)
    ours = [w for w in caught if issubclass(w.category, cl.CompilerWarning)]
    if not built.log:  # a driver that keeps quiet about #warning: nothing to pass on
        assert not ours
        return
    (warning,) = ours
    assert f"{path}:3:" in str(warning.message) and "check this line" in str(warning.message)
    assert warning.filename == __file__  # pointed at the caller, not at clkit


def test_library_builds_keep_their_compiler_messages_to_themselves(device, write_cl, tmp_path,
                                                                   monkeypatch):
    # Whatever a driver says about the library's own kernels (PoCL reports loops it declines to
    # unroll) is not the user's business; the same log for a user's file is.
    monkeypatch.setenv("CLKIT_CACHE_DIR", str(tmp_path / "cache"))  # compile, not a cached binary
    monkeypatch.setattr(_build, "_log", lambda prg, dev: "x.cl:1:1: warning: a remark")
    # defines no other test builds with, so that the program compiles here
    library = clkit.load("grayscale", defines={"T": "float", "CN": 4, "PPW": 12})
    user = clkit.load(write_cl("__kernel void k(__global int* x) { x[0] = 1; }\n"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        library.build(device)
    with pytest.warns(cl.CompilerWarning, match="a remark"):
        user.build(device)


def test_missing_source_file():
    with pytest.raises(FileNotFoundError, match="no_such_kernel"):
        clkit.load("no_such_kernel")
    with pytest.raises(FileNotFoundError, match="nowhere.cl"):
        clkit.load("/nowhere.cl")


# -- argument mistakes: each names the kernel, the parameter and its declared type ---------------

@pytest.fixture
def saxpy(device):
    return clkit.Program.from_source(SAXPY, device=device).saxpy


def test_wrong_argument_count(saxpy):
    x = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match=r"saxpy takes 3 arguments .*got 2"):
        saxpy(1.0, x)


def test_wrong_dtype(saxpy):
    with pytest.raises(TypeError) as err:
        saxpy(1.0, np.zeros(4, np.float64), np.zeros(4, np.float32))
    message = str(err.value)
    assert "saxpy" in message and "'x'" in message and "__global const float* x" in message
    assert "float64" in message and "float32" in message


def test_wrong_argument_type(saxpy):
    with pytest.raises(TypeError, match=r"saxpy, parameter 'y' \(__global float\* y\).*list"):
        saxpy(1.0, np.zeros(4, np.float32), [0.0] * 4)
    with pytest.raises(TypeError, match=r"parameter 'alpha' \(const? ?float alpha\)|'alpha'"):
        saxpy("two", np.zeros(4, np.float32), np.zeros(4, np.float32))


def test_scalar_out_of_range(device):
    prg = clkit.Program.from_source(
        "__kernel void k(__global int* x, const uchar u, const int i, const float f) {}",
        device=device)
    x = np.zeros(1, np.int32)
    with pytest.raises(ValueError, match=r"parameter 'u' \(uchar u\): 300 is out of range"):
        prg.k(x, 300, 0, 0.0)
    with pytest.raises(ValueError, match=r"'i'.*2147483648 is out of range for int"):
        prg.k(x, 0, 2**31, 0.0)
    with pytest.raises(TypeError, match=r"'i'.*integer"):
        prg.k(x, 0, 1.5, 0.0)
    with pytest.raises(ValueError, match=r"'f'.*out of range for float"):
        prg.k(x, 0, 0, 1e39)
    prg.k(x, 0, 0, float("inf"))  # infinities and NaN are values of float


def test_vector_size_mistakes(device):
    prg = clkit.Program.from_source(
        "__kernel void k(__global float4* x, const float4 s) { x[get_global_id(0)] *= s; }",
        device=device)
    with pytest.raises(ValueError, match=r"10 elements is not a whole number of float4"):
        prg.k(np.zeros(10, np.float32), (1, 1, 1, 1))
    with pytest.raises(TypeError, match=r"'s'.*pass 4 numbers"):
        prg.k(np.zeros(8, np.float32), (1, 2))


def test_read_only_output(saxpy):
    y = np.broadcast_to(np.float32(1), (4,))
    with pytest.raises(ValueError, match=r"'y'.*read-only"):
        saxpy(1.0, np.zeros(4, np.float32), y)


def test_local_memory_mistakes(device):
    prg = clkit.Program.from_source(
        "__kernel void k(__global float* x, __local float* t) {}", device=device)
    with pytest.raises(TypeError, match=r"'t'.*LocalMemory"):
        prg.k(np.zeros(4, np.float32), np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="positive"):
        clkit.LocalMemory(0)


def test_size_mistakes(saxpy, device):
    x, y = np.zeros(10, np.float32), np.zeros(10, np.float32)
    with pytest.raises(ValueError, match=r"global_size 10 is not a multiple of local_size 4"):
        saxpy(1.0, x, y, local_size=4)
    with pytest.raises(ValueError, match="global_size"):
        saxpy(1.0, x, y, global_size=(1, 2, 3, 4))
    big = device.max_work_group_size * 2
    with pytest.raises(ValueError, match="limit"):
        saxpy(1.0, np.zeros(big, np.float32), np.zeros(big, np.float32), local_size=big)
    prg = clkit.Program.from_source("__kernel void k(const int n) {}", device=device)
    with pytest.raises(TypeError, match="global_size="):
        prg.k(3)


def test_work_sizes_are_checked_when_they_change(saxpy):
    """A repeated call reuses the check of the same size objects; a list is read each time."""
    x = clkit.to_device(np.arange(16, dtype=np.float32), device=saxpy.program.device)
    y = clkit.to_device(np.zeros(16, np.float32), device=saxpy.program.device)
    sizes = [8]
    saxpy(1.0, x, y, global_size=sizes, local_size=4)
    sizes[0] = 16  # the same list, changed: all 16 elements this time
    saxpy(1.0, x, y, global_size=sizes, local_size=4)
    want = np.arange(16, dtype=np.float32)
    want[:8] *= 2
    np.testing.assert_array_equal(y.get(), want)
    saxpy(1.0, x, y, global_size=(16,), local_size=4)
    with pytest.raises(ValueError, match=r"global_size 16 is not a multiple of local_size 3"):
        saxpy(1.0, x, y, global_size=(16,), local_size=3)


def test_device_array_from_another_device(rng):
    devices = [d for d in clkit.devices()]
    if len(devices) < 2:
        pytest.skip("needs two OpenCL devices")
    a, b = devices[:2]
    prg = clkit.Program.from_source(SAXPY)
    x = clkit.to_device(np.zeros(4, np.float32), device=a)
    with pytest.raises(ValueError, match=f"lives on {a.id}.*this launch runs on {b.id}"):
        prg.saxpy(1.0, x, np.zeros(4, np.float32), device=b)


def test_too_large_for_one_allocation(device):
    with pytest.raises(clkit.OutOfDeviceMemoryError, match="max"):
        clkit.empty(device.max_alloc + 1, np.uint8, device=device)


def test_launch_on_another_queue_of_the_device(device, rng):
    rt = clkit.runtime(device)
    queue = rt.new_queue()
    prg = clkit.Program.from_source(SAXPY)
    x = rng.standard_normal(33).astype(np.float32)
    y = np.zeros(33, np.float32)
    launch = prg.saxpy(3.0, x, y, queue=queue)
    assert launch.device == device
    np.testing.assert_allclose(y, 3.0 * x, rtol=1e-6)
    others = [d for d in clkit.devices() if d != device]
    if others:
        with pytest.raises(ValueError, match="another context"):
            prg.saxpy(3.0, x, y, queue=queue, device=others[0])
    plain = cl.CommandQueue(rt.context)  # no profiling: a launch's kernel_ms could not be read
    with pytest.raises(ValueError, match=r"keeps no timings; make it with clkit.runtime"):
        prg.saxpy(3.0, x, y, queue=plain)


def test_repeated_calls_see_each_call_s_own_arrays_and_scalars(device):
    # A kernel keeps the arguments of its last call; each call must still reach the kernel
    # with its own: the same or other arrays, new arrays where old ones were freed, equal
    # and different scalars, -0.0 after 0.0 (the kernel adds half the sign of s), numpy
    # scalars after ints.
    prg = clkit.Program.from_source(
        "__kernel void put(__global float* out, __global const float* x, const int k, "
        "const float s) { size_t i = get_global_id(0); "
        "out[i] = x[i] * s + k + copysign(0.5f, s); }", device=device)
    n = 33
    xs = [clkit.to_device(np.arange(n, dtype=np.float32) + j, device=device) for j in range(3)]
    out = clkit.empty(n, np.float32, device=device)
    calls = [(0, 2, 1.5), (0, 2, 1.5), (1, 2, 1.5), (1, 3, 1.5), (2, np.int32(3), 0.0),
             (2, 3, -0.0), (0, -7, 2.0), (0, -7, 2.0)]
    for j, k, s in calls:
        prg.put(out, xs[j], k, s)
        expected = ((np.arange(n, dtype=np.float32) + j) * np.float32(s) + np.float32(k)
                    + np.copysign(np.float32(0.5), np.float32(s)))
        np.testing.assert_array_equal(out.get(), expected)
    for round in range(4):  # arrays freed and made again, perhaps in the same memory
        del out
        out = clkit.empty(n, np.float32, device=device)
        x = clkit.to_device(np.full(n, round, np.float32), device=device)
        prg.put(out, x, round, 1.0)
        np.testing.assert_array_equal(out.get(), np.full(n, 2 * round + 0.5, np.float32))
        other = np.zeros(n, np.float32)
        prg.put(other, x, 1, 1.0)  # a numpy output in the place of the device array
        np.testing.assert_array_equal(other, np.full(n, round + 1.5, np.float32))


def test_a_clean_user_kernel_builds_without_a_warning(device, write_cl, tmp_path, monkeypatch):
    # Drivers that log every build (Intel's CPU runtime: "Compilation started", "Kernel "k" was
    # successfully vectorized (16)", "Done.") have nothing to tell the user about this one.
    monkeypatch.setenv("CLKIT_CACHE_DIR", str(tmp_path / "cache"))  # compile, not a cached binary
    path = write_cl("__kernel void twice(__global float* x)\n"
                    "{\n    x[get_global_id(0)] *= 2.0f;\n}\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clkit.load(path).build(device)


def test_kernel_names_are_the_compiler_s(device):
    src = """
    // __kernel void old_version(__global float* x) { }
    #define SCALE(NAME, BY) __kernel void NAME(__global float* x) { x[get_global_id(0)] *= BY; }
    SCALE(times2, 2)
    SCALE(times3, 3)
    """
    prg = clkit.Program.from_source(src, device=device)
    assert sorted(prg.kernel_names) == ["times2", "times3"]
    x = np.ones(5, np.float32)
    prg.times3(x)
    np.testing.assert_array_equal(x, 3)
    with pytest.raises(AttributeError, match="no kernel 'timez2'; did you mean 'times2'"):
        prg.timez2


def test_typedef_and_struct_parameters(device):
    src = """
    typedef float real;
    typedef real metres;
    typedef struct { float a; int b; } pair;
    __kernel void scale(__global metres* x, metres by) { x[get_global_id(0)] *= by; }
    __kernel void product(__global float* x, pair p) { x[get_global_id(0)] = p.a * p.b; }
    """
    prg = clkit.Program.from_source(src, device=device)
    x = np.ones(4, np.float32)
    prg.scale(x, 3)  # a typedef of a typedef of float: a float, checked as one
    np.testing.assert_array_equal(x, 3)
    with pytest.raises(clkit.ArgumentTypeError, match=r"parameter 'x' \(__global metres\* x\)"
                                                      r".*float32"):
        prg.scale(np.ones(4), 2.0)
    record = np.zeros((), [("a", np.float32), ("b", np.int32)])
    record["a"], record["b"] = 2.5, 4
    prg.product(x, record[()])
    np.testing.assert_array_equal(x, 10)
    with pytest.raises(clkit.ArgumentTypeError, match=r"parameter 'p' \(pair p\).*cannot tell "
                                                      r"what 'pair' is.*structured dtype"):
        prg.product(x, (2.5, 4))


def test_a_required_work_group_size_is_the_local_size(device):
    prg = clkit.Program.from_source("""
    __kernel __attribute__((reqd_work_group_size(16, 1, 1)))
    void group_size(__global int* x) { x[get_global_id(0)] = get_local_size(0); }
    """, device=device)
    x = np.zeros(48, np.int32)
    prg.group_size(x)  # no local_size: the one the kernel requires
    np.testing.assert_array_equal(x, 16)
    prg.group_size(x, local_size=16)
    with pytest.raises(clkit.ArgumentValueError, match=r"reqd_work_group_size \(16, 1, 1\).*"
                                                       r"not \(8,\)"):
        prg.group_size(x, local_size=8)
    with pytest.raises(clkit.ArgumentValueError, match="not a multiple of local_size 16"):
        prg.group_size(np.zeros(40, np.int32))


@pytest.mark.parametrize("global_size", [(2 ** 32, 2 ** 32), 2 ** 64, (4, 2 ** 63)])
def test_more_work_items_than_size_t_counts_are_refused(device, global_size):
    # (PoCL aborted the process on the first; pyopencl raised std::bad_cast on the second)
    prg = clkit.Program.from_source("__kernel void f(__global int* x) { }", device=device)
    with pytest.raises(clkit.ArgumentValueError, match="work-items, more than .* counts"):
        prg.f(np.zeros(4, np.int32), global_size=global_size)


def test_records_of_the_element_type_are_told_to_take_a_view(device):
    import pyopencl.cltypes as cltypes
    prg = clkit.Program.from_source(
        "__kernel void twice(__global float4* x) { x[get_global_id(0)] *= 2; }", device=device)
    points = np.ones(3, cltypes.float4)
    with pytest.raises(clkit.ArgumentTypeError, match=r"x\.view\(np\.float32\)"):
        prg.twice(points)
    prg.twice(points.view(np.float32))  # as the message says
    np.testing.assert_array_equal(points.view(np.float32), 2)


def test_done_means_the_numpy_outputs_are_written(device):
    # a strided output goes through a copy that only the host can make
    prg = clkit.Program.from_source(
        "__kernel void inc(__global float* y) { y[get_global_id(0)] += 1.0f; }", device=device)
    whole = np.zeros((64, 2), np.float32)
    launch = prg.inc(whole[:, 0], wait=False)
    while not launch.done:
        pass
    np.testing.assert_array_equal(whole[:, 0], 1)
    assert "running" not in repr(launch)


def test_library_calls_run_after_the_work_on_their_arrays_queues(device):
    # a device array of pyopencl's own, on another queue of clkit's context, still being written
    import pyopencl.array as cl_array
    rt = clkit.runtime(device)
    n, reps = (64, 10) if device.simulator else (1 << 16, 3000)
    prg = clkit.Program.from_source("""
    __kernel void slow_fill(__global float* y, const int reps)
    { float v = 0; for (int k = 0; k < reps; k++) v += 1.0f; y[get_global_id(0)] = v; }
    """, device=device)
    other = rt.new_queue()
    d = cl_array.zeros(other, n, np.float32)
    other.finish()
    prg.slow_fill(d, reps, queue=other, wait=False)
    out = cl_array.empty(other, n, np.float32)
    clkit.kernels.vector_add(d, d, out=out)
    np.testing.assert_array_equal(out.get(), 2 * reps)  # (read on out's own queue)


def test_a_queue_is_not_taken_for_one_that_has_gone(device):
    # Queues clkit made are known by their id; one that had gone could leave its id to a queue
    # of another context, which a launch then took for the gone queue's device.
    rt = clkit.runtime(device)
    theirs = cl.Context([device.cl_device])
    for _ in range(10):
        with using_queue(rt, rt.new_queue()):
            pass
        queue = cl.CommandQueue(theirs, properties=cl.command_queue_properties.PROFILING_ENABLE)
        assert runtime_of_queue(queue) is None
        with pytest.raises(ValueError, match="another context"):
            clkit.Program.from_source(SAXPY).saxpy(1.0, np.zeros(4, np.float32),
                                                     np.zeros(4, np.float32), queue=queue)


def test_a_thread_s_queue_goes_with_the_thread(device):
    prg = clkit.Program.from_source(SAXPY)
    before = len(_runtime._by_queue)
    y = np.zeros(4, np.float32)
    worker = threading.Thread(target=prg.saxpy, args=(2.0, np.ones(4, np.float32), y),
                              kwargs={"device": device})
    worker.start()
    worker.join()
    np.testing.assert_array_equal(y, 2.0)
    assert len(_runtime._by_queue) == before
