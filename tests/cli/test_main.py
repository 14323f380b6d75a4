"""``clkit``'s entry point: the command table, and bad input told apart from bugs."""

import subprocess
import sys

import numpy as np
import pytest

import clkit.cli
from _cli import CWD, REPO, child_env
from clkit.cli.hello import Hello


def test_every_command_in_the_table_has_its_class():
    for name in clkit.cli.COMMANDS:
        command = clkit.cli.create_command(name)
        assert isinstance(command, clkit.cli.Command), name


def test_a_command_imports_only_its_own_module():
    code = ("import sys, clkit.cli; clkit.cli.main(['devices', '--json']); "
            "print(sorted(m for m in sys.modules if m.startswith('clkit.cli.')))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=CWD, capture_output=True, text=True,
                          timeout=120, env=child_env())
    assert proc.returncode == 0, proc.stderr
    loaded = proc.stdout.strip().splitlines()[-1]
    assert "clkit.cli.devices" in loaded
    assert "clkit.cli.bench" not in loaded and "clkit.cli.convolve" not in loaded


def crash(self, args):
    raise ZeroDivisionError("a bug")


def test_a_bug_is_exit_status_1_not_a_usage_error(monkeypatch, capsys):
    monkeypatch.delenv("CLKIT_DEBUG", raising=False)
    monkeypatch.setattr(Hello, "run", crash)
    assert clkit.cli.main(["hello"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == ["clkit: internal error: ZeroDivisionError: a bug (a bug in clkit; "
                                "run again with --debug for the traceback)"]


@pytest.mark.parametrize("argv, env", [(["--debug", "hello"], None), (["hello", "--debug"], None),
                                       (["hello"], "1")])
def test_debug_shows_the_traceback_of_a_bug(monkeypatch, capsys, argv, env):
    if env is None:
        monkeypatch.delenv("CLKIT_DEBUG", raising=False)
    else:
        monkeypatch.setenv("CLKIT_DEBUG", env)
    monkeypatch.setattr(Hello, "run", crash)
    assert clkit.cli.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert "ZeroDivisionError: a bug" in err and "please report it" in err


def test_bad_input_is_still_status_2(tmp_path, capsys):
    np.save(tmp_path / "in.npy", np.zeros((4, 4, 5), np.uint8))
    assert clkit.cli.main(["gray", str(tmp_path / "in.npy"), str(tmp_path / "out.png")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("clkit: error: ") and "channels" in err[0]
    assert not (tmp_path / "out.png").exists()


def test_running_out_of_host_memory_is_status_2(monkeypatch, capsys):
    # e.g. clkit bench --size 100000x100000: a size too large for the host, not a bug
    def too_large(self, args):
        raise MemoryError("Unable to allocate 27.9 GiB")
    monkeypatch.setattr(Hello, "run", too_large)
    assert clkit.cli.main(["hello"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "clkit: error: not enough memory on the host (Unable to allocate 27.9 GiB); use smaller "
        "inputs or sizes"]


def test_console_script_entry_point_is_main():
    text = (REPO / "setup.cfg").read_text()
    assert "clkit = clkit.cli:main" in text
