"""Device listing and every form of device selection."""

import dataclasses
import json
import re
import subprocess
import sys
import threading

import pytest

import clkit
from clkit._platform import devices as _devices, icd as _icd, oclgrind as _oclgrind

from _where import CWD, child_env



def run_clkit(*args, env=None, **kw):
    return subprocess.run([sys.executable, "-m", "clkit", *args], capture_output=True, text=True,
                          cwd=CWD, env=child_env(**(env or {})), timeout=300, **kw)


def test_devices_are_listed_with_ids_in_a_stable_order():
    found = clkit.devices()
    assert found
    ids = [d.id for d in found]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"\d+:\d+", i) for i in ids)
    assert [d.id for d in clkit.devices()] == ids
    platforms = [d.platform for d in found]
    assert platforms == sorted(platforms)


def test_device_attributes(device):
    cl_device = device.cl_device
    assert device.name == cl_device.name.strip()
    assert device.compute_units == cl_device.max_compute_units >= 1
    assert device.global_mem == cl_device.global_mem_size > 0
    assert device.max_alloc == cl_device.max_mem_alloc_size <= device.global_mem
    assert device.local_mem == cl_device.local_mem_size
    assert device.max_work_group_size == cl_device.max_work_group_size
    assert device.fp64 == ("cl_khr_fp64" in cl_device.extensions)
    assert device.type in ("gpu", "cpu", "accelerator", "custom", "other")
    assert device.id in str(device)


def test_select_by_id_device_and_name(device):
    assert clkit.select(device.id) == device
    assert clkit.select(device) is device
    assert clkit.select(device.cl_device) == device
    named = clkit.select(device.name.upper())
    assert device.name in named.name
    assert clkit.select(device.platform.lower()).platform == device.platform


def test_select_by_type_and_index():
    for kind in ("gpu", "cpu", "accelerator"):
        of_kind = clkit.devices(kind)
        if not of_kind:
            with pytest.raises(clkit.DeviceNotFoundError):
                clkit.select(kind)
            continue
        assert clkit.select(kind).type == kind
        for i, d in enumerate(of_kind):
            assert clkit.select(f"{kind}:{i}") == d
        with pytest.raises(clkit.DeviceNotFoundError, match=f"{kind}:{len(of_kind)}"):
            clkit.select(f"{kind}:{len(of_kind)}")


def test_no_match_lists_the_devices_that_exist():
    with pytest.raises(clkit.DeviceNotFoundError) as err:
        clkit.select("no-such-vendor")
    for d in clkit.devices():
        assert d.id in str(err.value)
    with pytest.raises(clkit.DeviceNotFoundError, match="99:0"):
        clkit.select("99:0")


@pytest.mark.parametrize("spec", ["0", "3", "", " ", ".", "-"])
def test_a_spec_without_a_letter_names_no_device(spec, monkeypatch):
    # (each is part of every driver's version string: it named the first device, whatever it was)
    with pytest.raises(clkit.DeviceNotFoundError, match="A spec is 'P:D'"):
        clkit.select(spec)
    monkeypatch.setenv("CLKIT_VISIBLE_DEVICES", spec if spec.strip() else "0")
    with pytest.raises(clkit.DeviceNotFoundError, match="CLKIT_VISIBLE_DEVICES"):
        clkit.devices()


def test_bad_spec_type():
    with pytest.raises(TypeError, match="device spec"):
        clkit.select(3.5)


def test_clkit_device_environment(monkeypatch):
    last = clkit.devices()[-1]
    monkeypatch.setenv("CLKIT_DEVICE", last.id)
    assert clkit.select() == last
    monkeypatch.setenv("CLKIT_DEVICE", "nonexistent-device")
    with pytest.raises(clkit.DeviceNotFoundError, match="CLKIT_DEVICE"):
        clkit.select()


def test_visible_devices_hide_the_rest(monkeypatch):
    first = clkit.devices()[0]
    monkeypatch.setenv("CLKIT_VISIBLE_DEVICES", first.id)
    assert clkit.devices() == [first]
    for other in _devices.all_devices():
        if other != first:
            with pytest.raises(clkit.DeviceNotFoundError):
                clkit.select(other.id)
    monkeypatch.setenv("CLKIT_VISIBLE_DEVICES", "nonexistent-device")
    with pytest.raises(clkit.DeviceNotFoundError, match="CLKIT_VISIBLE_DEVICES"):
        clkit.devices()
    monkeypatch.setenv("CLKIT_VISIBLE_DEVICES", "")  # as CUDA_VISIBLE_DEVICES: no device at all
    assert clkit.devices() == []
    with pytest.raises(clkit.DeviceNotFoundError, match="CLKIT_VISIBLE_DEVICES='' hiding"):
        clkit.select()


def fake_devices(monkeypatch, *kinds):
    """Replace the platform listing with variants of a real device."""
    real = _devices.all_devices()[0]
    fakes = []
    for i, (kind, units, simulator) in enumerate(kinds):
        fakes.append(dataclasses.replace(real, id=f"{i}:0", type=kind, compute_units=units,
                                         clock_mhz=1000, simulator=simulator,
                                         name=f"fake {kind} {i}"))
    # Equality is by the pyopencl device, which the fakes share: compare by id instead.
    monkeypatch.setattr(_devices.Device, "__eq__", lambda a, b: a.id == getattr(b, "id", None))
    monkeypatch.setattr(_devices.Device, "__hash__", lambda a: hash(a.id))
    monkeypatch.setattr(_devices, "all_devices", lambda: list(fakes))
    monkeypatch.delenv("CLKIT_DEVICE", raising=False)
    monkeypatch.delenv("CLKIT_VISIBLE_DEVICES", raising=False)
    return fakes


def test_best_device_prefers_gpus_then_cpus_then_the_rest_then_capacity(monkeypatch):
    fakes = fake_devices(
        monkeypatch, ("accelerator", 1, True), ("accelerator", 500, False), ("cpu", 64, False),
        ("gpu", 8, False), ("custom", 900, False), ("cpu", 2, False), ("gpu", 132, False))
    sim, big_acc, big_cpu, small_gpu, custom, small_cpu, big_gpu = fakes
    assert clkit.select("gpu").id == big_gpu.id
    assert clkit.select("gpu:0").id == small_gpu.id  # index in listing order
    assert clkit.select("accelerator").id == big_acc.id  # the simulator is never chosen by type
    # The whole order, by taking the best away one at a time: every GPU, then every CPU, then
    # the rest (however many compute units they have), each by capacity; never the simulator.
    order = []
    while len(fakes) > 1:
        best = clkit.select()
        order.append(best.id)
        fakes[:] = [d for d in fakes if d.id != best.id]
    assert order == [d.id for d in (big_gpu, small_gpu, big_cpu, small_cpu, custom, big_acc)]
    assert fakes == [sim]


def test_simulator_is_chosen_only_by_name(monkeypatch):
    sim, cpu = fake_devices(monkeypatch, ("accelerator", 1, True), ("cpu", 2, False))
    assert clkit.select().id == cpu.id
    assert clkit.select(sim.name).id == sim.id
    fake_devices(monkeypatch, ("accelerator", 1, True))
    with pytest.raises(clkit.DeviceNotFoundError, match="simulator"):
        clkit.select()


def test_runtime_is_created_once_across_threads(device):
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(clkit.runtime(device)))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(rt) for rt in seen}) == 1
    rt = seen[0]
    assert rt.device == device
    assert rt.queue.properties & 2  # profiling enabled
    assert clkit.runtime(device.id) is rt


def test_no_platform_raises_no_opencl_error(tmp_path):
    env = {"OCL_ICD_VENDORS": str(tmp_path), "OCL_ICD_FILENAMES": ""}
    code = ("import clkit\ntry:\n clkit.devices()\nexcept clkit.NoOpenCLError as e:\n"
            " print('NoOpenCLError:', e)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=CWD,
                         env=child_env(**env), timeout=120)
    assert "NoOpenCLError:" in run.stdout, run.stderr
    assert "pocl-opencl-icd" in run.stdout
    assert str(tmp_path) in run.stdout


def test_no_platform_through_the_command(tmp_path):
    run = run_clkit("devices", env={"OCL_ICD_VENDORS": str(tmp_path), "OCL_ICD_FILENAMES": ""})
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("clkit: error: no OpenCL platform")
    assert "pocl-opencl-icd" in lines[0]
    assert run.stdout == ""


def test_no_platform_names_the_nvidia_file_to_write(monkeypatch, tmp_path):
    monkeypatch.setenv("OCL_ICD_VENDORS", str(tmp_path))
    monkeypatch.setattr(_icd, "nvidia_library", lambda: "/usr/lib/x86_64/libnvidia-opencl.so.1")
    message = _icd.no_platform_message()
    assert f"echo /usr/lib/x86_64/libnvidia-opencl.so.1 | sudo tee {tmp_path}/nvidia.icd" \
        in message


def test_devices_command_lists_every_device():
    run = run_clkit("devices")
    assert run.returncode == 0, run.stderr
    for d in clkit.devices():
        assert d.id in run.stdout and d.name in run.stdout
    run = run_clkit("devices", "--json")
    listed = json.loads(run.stdout)
    assert [r["id"] for r in listed] == [d.id for d in clkit.devices()]
    assert all(r["max_alloc"] > 0 for r in listed)
    run = run_clkit("devices", env={"CLKIT_DEVICE": "no-such-device"})
    assert run.returncode == 0 and "*" not in run.stdout, run.stdout
    assert run.stdout.splitlines()[-1] == ("no default device: no OpenCL device matches "
                                           "CLKIT_DEVICE 'no-such-device'")


def test_info_command(device):
    run = run_clkit("info", device.id, "--json")
    assert run.returncode == 0, run.stderr
    info = json.loads(run.stdout)
    assert info["id"] == device.id
    assert info["max_work_group_size"] == device.max_work_group_size
    assert info["local_mem"] == device.local_mem
    assert set(info["extensions"]) == set(device.extensions)
    text = run_clkit("info", device.id)
    assert "max_work_item_sizes" in text.stdout


def test_info_command_unknown_device():
    run = run_clkit("info", "no-such-device")
    assert run.returncode == 2
    assert len(run.stderr.strip().splitlines()) == 1
    assert run.stderr.startswith("clkit: error: no OpenCL device matches")


def test_doctor_reports_icd_files_and_devices():
    run = run_clkit("doctor")
    for icd in _icd.icd_files(probe=False):
        assert str(icd.path) in run.stdout
    for d in clkit.devices():
        assert f"device {d.id} builds and runs a kernel" in run.stdout
    assert run.returncode == 0, run.stdout


def test_doctor_reports_a_broken_icd_file(tmp_path):
    (tmp_path / "broken.icd").write_text("/nonexistent/libmissing.so\n")
    run = run_clkit("doctor", env={"OCL_ICD_VENDORS": str(tmp_path)})
    assert "[FAIL]" in run.stdout and "broken.icd" in run.stdout
    assert "cannot load" in run.stdout
    assert run.returncode == 1


def test_usage_mistake_is_one_line():
    run = run_clkit("devices", "--no-such-flag")
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("clkit: error:")
    assert run.stderr.rstrip().endswith("(see `clkit devices --help`)")  # the command's options


def test_doctor_gives_the_line_that_registers_an_installed_oclgrind(tmp_path):
    # as after `apt-get install oclgrind`: the simulator's driver is there, no .icd file names it
    library = _oclgrind.find_library()
    if library is None:
        pytest.skip("needs Oclgrind installed (Debian: apt-get install oclgrind)")
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    for icd in _icd.icd_files(probe=False):
        if "oclgrind" not in icd.library.lower():
            (vendors / icd.path.name).write_text(icd.library + "\n")
    env = child_env(OCL_ICD_VENDORS=str(vendors))
    env.pop("CLKIT_VISIBLE_DEVICES", None)

    def command(*args):
        return subprocess.run([sys.executable, "-m", "clkit", *args], capture_output=True,
                              text=True, cwd=CWD, env=env, timeout=300)

    def platforms():
        return {d["platform"] for d in json.loads(command("devices", "--json").stdout)}

    assert "Oclgrind" not in platforms()
    doctor = command("doctor").stdout
    assert f"[note] Oclgrind's driver {library} is installed but no .icd file" in doctor
    fix = next(line for line in doctor.splitlines() if "to list it as a device: " in line)
    line = fix.split("to list it as a device: ", 1)[1]
    assert line == f"echo {library} | tee {vendors / 'oclgrind.icd'}"
    subprocess.run(line, shell=True, check=True, capture_output=True)
    assert "Oclgrind" in platforms()
    assert "Oclgrind's driver" not in command("doctor").stdout  # registered now
