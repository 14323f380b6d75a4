"""Every library kernel under Oclgrind with its checks on; any diagnostic fails the test.

The cases live in ``_oclgrind_cases.py``: each library kernel on small odd sizes, every border
mode, the separable path, masks larger than the image, tiles streamed through a device, bands
split between PoCL and Oclgrind, and the GPU variants of the kernels.  Oclgrind reads its
settings once, when its driver loads, so each group of cases runs in one child process started
with them (``OCLGRIND_CHECK_API``, ``OCLGRIND_DATA_RACES``, ``OCLGRIND_UNINITIALIZED``); a test
per case then reads that case's record.  A failure shows the diagnostics Oclgrind printed, or
the traceback of a wrong result.

The same module tests ``clkit check`` and ``CLKIT_DEBUG=oclgrind``, which offer these checks
to users, and the reading of Oclgrind's reports.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import _oclgrind_cases as cases
import clkit
from clkit._platform import oclgrind as _oclgrind

from _where import CWD, REPO, pythonpath

HELPERS = REPO / "tests" / "helpers"


@pytest.fixture(scope="module")
def simulator(request):
    sims = [d for d in request.config.clkit_devices if d.simulator]
    if not sims:
        pytest.skip("no Oclgrind device among the test devices (install oclgrind and register "
                    "its ICD, as .ci/run does)")
    return sims[0]


def child_env(checks, **more):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OCLGRIND_", "CLKIT_DEBUG"))}
    env.update(checks)
    env["OCLGRIND_MAX_ERRORS"] = "100000"
    env["PYTHONPATH"] = pythonpath(inherited=env.get("PYTHONPATH", ""))
    env.pop("CLKIT_DEVICE", None)
    env.update(more)
    return env


@pytest.fixture(scope="module")
def group_records(simulator, tmp_path_factory):
    """``records(group)``: the case records of one group, run once in its own process."""
    done = {}

    def records(group):
        if group not in done:
            log = tmp_path_factory.mktemp("oclgrind") / "stderr.log"
            # CLKIT_DEBUG: Oclgrind compiles from source, to quote source lines in its reports
            env = child_env(cases.GROUPS[group], CLKIT_OCLGRIND_STDERR=str(log),
                            CLKIT_DEBUG="oclgrind")
            proc = subprocess.run([sys.executable, str(HELPERS / "_oclgrind_cases.py"), group],
                                  capture_output=True, text=True, env=env, cwd=CWD, timeout=600)
            found = {}
            for line in proc.stdout.splitlines():
                if line.startswith("{"):
                    record = json.loads(line)
                    found[record.get("name")] = record
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            done[group] = RUNS[group] = (found, proc.returncode, (proc.stderr + tail)[-4000:])
        return done[group]

    return records


@pytest.fixture(scope="module", autouse=True)
def report_runs(request):
    """How many cases and kernel launches ran under Oclgrind (``pytest -s`` shows it)."""
    yield
    seen = [r for found, _, _ in RUNS.values() for r in found.values() if r.get("name")]
    if seen:
        print(f"\nOclgrind: {len(RUNS)} processes, {len(seen)} cases, "
              f"{sum(r.get('launches', 0) for r in seen)} kernel launches checked, "
              f"{sum(len(r['diagnostics']) for r in seen)} diagnostics")


RUNS: dict = {}


@pytest.mark.parametrize("name", list(cases.CASES))
def test_kernel_under_oclgrind(name, group_records):
    group = cases.CASES[name][0]
    found, returncode, stderr = group_records(group)
    if None in found:
        pytest.fail(f"the {group} group did not run: {found[None]}")
    assert name in found, (f"case {name} has no result: the child running the {group} group "
                           f"ended with status {returncode}\n{stderr}")
    record = found[name]
    if record["skip"]:
        pytest.skip(record["skip"])
    if name in cases.EXPECT_DIAGNOSTICS:
        expected = cases.EXPECT_DIAGNOSTICS[name]
        assert any(all(part in d for part in expected) for d in record["diagnostics"]), \
            f"the canary's out-of-bounds read was not reported as expected: {record}"
        return
    assert record["error"] is None, f"{name} failed under Oclgrind:\n{record['error']}"
    assert record["launches"] > 0, f"{name} ran no kernel on the simulator"
    assert not record["diagnostics"], f"{name}: {record['summary']}"
    assert not record["stderr"], f"{name}: unexpected output on stderr:\n{record['stderr']}"


# -- reading Oclgrind's reports ----------------------------------------------------------------

API_NOISE = """
Oclgrind - OpenCL runtime error detected
\tFunction: clGetDeviceInfo
\tError:    CL_INVALID_VALUE
\tFor argument 'param_name'

"""

OUT_OF_BOUNDS = """
Invalid read of size 4 at global memory address 0x1000000000020
\tKernel: shift
\tEntity: Global(7,0,0) Local(0,0,0) Group(7,0,0)
\t  %0 = load float, float addrspace(1)* %arrayidx, align 4
\tAt line 4 (column 10) of input.cl:
\t  y[i] = x[i+1];
\t
"""

RACE = """
Write-write data race at local memory address 0x1000000000002
\tKernel: race
\t
\tFirst entity:  Global(1,0,0) Local(1,0,0) Group(0,0,0)
\tAt line 4 (column 8) of input.cl:
\t
\tSecond entity: Global(0,0,0) Local(0,0,0) Group(0,0,0)
\t
"""


def test_reports_are_found_and_benign_probes_dropped():
    text = ("script output\n" + API_NOISE + OUT_OF_BOUNDS + API_NOISE + "more output\n" + RACE
            + "\nOclgrind: 100000 errors generated - suppressing further errors\n")
    diagnostics, rest = _oclgrind.parse(text)
    assert [d.headline.split(" at ")[0] for d in diagnostics] == [
        "Invalid read of size 4", "Write-write data race",
        "Oclgrind: 100000 errors generated - suppressing further errors"]
    assert [d.kernel for d in diagnostics] == ["shift", "race", None]
    assert "\tFirst entity:  Global(1,0,0)" in diagnostics[1].text  # blank tab lines kept inside
    assert rest == "script output\nmore output"
    summary = _oclgrind.summary(diagnostics)
    assert summary.startswith("3 Oclgrind diagnostic(s): 1 x Invalid read, 1 x Write-write data "
                              "race") and "y[i] = x[i+1];" in summary


def test_only_the_exact_probe_report_is_benign():
    other_call = API_NOISE.replace("clGetDeviceInfo", "clEnqueueNDRangeKernel")
    other_error = API_NOISE.replace("CL_INVALID_VALUE", "CL_INVALID_MEM_OBJECT")
    for text in (other_call, other_error):
        diagnostics, rest = _oclgrind.parse(text)
        assert len(diagnostics) == 1 and rest == ""
    assert _oclgrind.parse(API_NOISE * 3) == ([], "")


def test_user_lines_that_look_like_headlines_pass_through():
    text = "Invalid read of size 4 in my own log\n\tindented user line\nOclgrind-free text\n"
    diagnostics, rest = _oclgrind.parse(text)
    assert diagnostics == []
    assert rest == text.strip()


def test_environment_registers_oclgrind_when_no_icd_file_does(tmp_path):
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "other.icd").write_text("libother.so\n")
    library = _oclgrind.find_library()
    if library is None:
        pytest.skip("Oclgrind is not installed")
    env = _oclgrind.environment({"OCL_ICD_VENDORS": str(vendors), "OCLGRIND_DATA_RACES": "0"})
    try:
        folder = Path(env["OCL_ICD_VENDORS"])
        assert folder != vendors
        assert sorted(p.name for p in folder.iterdir()) == ["clkit-oclgrind.icd", "other.icd"]
        assert (folder / "clkit-oclgrind.icd").read_text().strip() == str(library)
        assert env["CLKIT_DEVICE"] == "oclgrind" and env["CLKIT_DEBUG"] == "oclgrind"
        assert env["OCLGRIND_UNINITIALIZED"] == "1" and env["OCLGRIND_CHECK_API"] == "1"
        assert env["OCLGRIND_DATA_RACES"] == "0"  # a setting the user made is kept
    finally:
        _oclgrind.cleanup()
    assert not folder.exists()


# -- clkit check and CLKIT_DEBUG=oclgrind --------------------------------------------------------

BUGGY = textwrap.dedent("""
    import sys
    import numpy as np
    import clkit
    print("args", sys.argv[1:])
    print("the script's own stderr line", file=sys.stderr)
    prg = clkit.Program.from_source(
        "__kernel void shift(__global const float* x, __global float* y)\\n"
        "{ size_t i = get_global_id(0); y[i] = x[i + 1]; }\\n")
    launch = prg.shift(np.arange(8, dtype=np.float32), np.zeros(8, np.float32))
    print("ran on", launch.device.name)
""")

CLEAN = textwrap.dedent("""
    import numpy as np
    from clkit.kernels import convolve, depth_to_points, grayscale
    image = np.arange(35, dtype=np.float32).reshape(5, 7)
    print(convolve(image, np.ones((3, 2)), mode="mirror").sum())
    print(grayscale(np.zeros((3, 4, 3), np.uint8)).shape)
    print(depth_to_points(np.ones((3, 5), np.uint16), 1.0, 1.0, 0.0, 0.0).shape)
""")


def clkit_command(*args, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "clkit", *map(str, args)], capture_output=True,
                          text=True, env=env or child_env({}), cwd=cwd or CWD, timeout=300)


def test_clkit_check_reports_an_out_of_bounds_read(simulator, tmp_path):
    script = tmp_path / "buggy.py"
    script.write_text(BUGGY)
    proc = clkit_command("check", script, "--flag", "value", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "args ['--flag', 'value']" in proc.stdout and "ran on Oclgrind" in proc.stdout
    assert "the script's own stderr line" in proc.stderr
    assert "Invalid read of size 4" in proc.stderr and "Kernel: shift" in proc.stderr
    assert "y[i] = x[i + 1];" in proc.stderr
    assert "clGetDeviceInfo" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("clkit check: 2 Oclgrind diagnostic(s): 1 x Invalid read") and \
        "in kernel shift" in last, last


def test_clkit_check_passes_a_clean_script(simulator, tmp_path):
    script = tmp_path / "clean.py"
    script.write_text(CLEAN)
    proc = clkit_command("check", script, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1:] == ["(3, 4)", "(15, 3)"], proc.stdout
    assert proc.stderr.strip() == f"clkit check: no Oclgrind diagnostics in {script} (script " \
                                  "exit status 0)", proc.stderr


def test_clkit_check_says_which_kernels_it_did_not_check(simulator, tmp_path):
    # A kernel the script sends to another device with device= runs there, unchecked: an
    # out-of-bounds write on a CPU driver must not pass for a clean run.
    others = [d for d in clkit.devices() if not d.simulator]
    if not others:
        pytest.skip("needs a device beside the simulator")
    script = tmp_path / "elsewhere.py"
    script.write_text(
        "import numpy as np, clkit\n"
        "prg = clkit.Program.from_source('__kernel void twice(__global float* x) "
        "{ x[get_global_id(0)] *= 2; }', device='cpu')\n"
        "x = np.ones(4, np.float32)\nprg.twice(x)\nprg.twice(x)\nprint(x.sum())\n")
    proc = clkit_command("check", script, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "16.0", proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2, proc.stderr  # one line for the kernel (called twice), the summary
    assert lines[0].startswith("clkit: not checked by Oclgrind: kernel twice runs on ")
    assert lines[1].endswith("(script exit status 0); 1 kernel ran on another device, not "
                             "checked (see above)"), lines[1]


def test_clkit_check_keeps_the_scripts_exit_status(simulator, tmp_path):
    script = tmp_path / "fails.py"
    script.write_text("import sys\nsys.exit(7)\n")
    proc = clkit_command("check", script)
    assert proc.returncode == 7
    assert "script exit status 7" in proc.stderr


def test_clkit_check_finds_an_unregistered_oclgrind(simulator, tmp_path):
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    for icd in Path("/etc/OpenCL/vendors").glob("*.icd"):
        if "oclgrind" not in icd.read_text():
            (vendors / icd.name).write_text(icd.read_text())
    script = tmp_path / "buggy.py"
    script.write_text(BUGGY)
    proc = clkit_command("check", script, env=child_env({}, OCL_ICD_VENDORS=str(vendors)))
    assert proc.returncode == 1, proc.stderr
    assert "Invalid read of size 4" in proc.stderr


def test_clkit_check_bad_input(tmp_path):
    proc = clkit_command("check", tmp_path / "missing.py")
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"clkit: error: {tmp_path / 'missing.py'}: no such script"
    proc = clkit_command("check", tmp_path)
    assert proc.returncode == 2 and "is not a file" in proc.stderr
    (tmp_path / "s.py").write_text("print('never runs')\n")
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    proc = clkit_command("check", tmp_path / "s.py", env=child_env(
        {}, OCL_ICD_VENDORS=str(vendors), OCLGRIND_ICD=str(tmp_path / "nothing.so")))
    assert proc.returncode == 2
    assert proc.stderr.startswith("clkit: error: Oclgrind is not installed") and \
        "apt-get install oclgrind" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_clkit_debug_oclgrind_in_the_environment(simulator, tmp_path):
    script = tmp_path / "buggy.py"
    script.write_text(BUGGY)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=child_env({}, CLKIT_DEBUG="oclgrind"), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "ran on Oclgrind" in proc.stdout  # the default device, without naming it
    diagnostics, _ = _oclgrind.parse(proc.stderr)
    assert [d.kernel for d in diagnostics] == ["shift", "shift"]
    proc = subprocess.run([sys.executable, "-c", "import clkit; clkit.devices()"],
                          capture_output=True, text=True,
                          env=child_env({}, CLKIT_DEBUG="valgrind"), timeout=60)
    assert proc.returncode == 1 and "CLKIT_DEBUG='valgrind' is not a debug mode" in proc.stderr


def test_clkit_debug_oclgrind_reports_no_false_driver_error(simulator, tmp_path):
    # pyopencl asks each device for NVIDIA's compute capability as it makes a kernel object;
    # Oclgrind's API checks report the error of that query unless clkit keeps it from asking
    script = tmp_path / "clean.py"
    script.write_text(CLEAN + textwrap.dedent("""
        import clkit
        prg = clkit.Program.from_source(
            "__kernel void twice(__global float* a) { a[get_global_id(0)] *= 2.0f; }")
        a = np.arange(5, dtype=np.float32)
        prg.twice(a)
        print(a.tolist())
    """))
    env = child_env({}, CLKIT_DEBUG="oclgrind")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "[0.0, 2.0, 4.0, 6.0, 8.0]"
    for command in (["devices"], ["info", "oclgrind"]):
        listed = clkit_command(*command, env=env)
        assert listed.returncode == 0, listed.stderr
        proc.stderr += listed.stderr
    assert "runtime error" not in proc.stderr and "CL_INVALID_VALUE" not in proc.stderr, \
        proc.stderr
