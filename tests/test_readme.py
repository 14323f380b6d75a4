"""The README, which is also the package's page on a package index.

Its Python blocks run as written, each on its own in an empty folder; its links work from a
package index's page (no link relative to the repository, which that page does not have); the
commands it shows exist.
"""

import configparser
import re
import subprocess
import sys

import pytest

import clkit.cli
from _where import REPO, child_env

TEXT = (REPO / "README.md").read_text()
PYTHON_BLOCKS = re.findall(r"^```python\n(.*?)^```", TEXT, re.S | re.M)
SHELL_LINES = [line for block in re.findall(r"^```sh\n(.*?)^```", TEXT, re.S | re.M)
               for line in block.splitlines() if line.strip()]


def test_the_readme_has_its_tour_and_set_up():
    assert PYTHON_BLOCKS, "no ```python block"
    assert any(line.startswith("make demo") for line in SHELL_LINES)
    assert any(line.startswith("make test") for line in SHELL_LINES)


@pytest.mark.parametrize("block", PYTHON_BLOCKS,
                         ids=[f"block{i}" for i in range(1, len(PYTHON_BLOCKS) + 1)])
def test_python_block_runs_on_its_own(block, tmp_path):
    run = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, env=child_env(),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"{block}\n{run.stdout}\n{run.stderr}"


def test_links_work_from_a_package_index_page():
    links = re.findall(r"\]\(([^)\s]+)", TEXT) + re.findall(r"<([^>\s]+://[^>\s]+)>", TEXT)
    links += re.findall(r'(?:href|src)="([^"]+)"', TEXT)
    relative = [link for link in links if not link.startswith("https://")]
    assert relative == [], "links that a package index's page cannot follow"


def test_the_commands_shown_exist():
    targets = set(re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text(), re.M))
    for line in SHELL_LINES:
        words = line.split()
        if words[0] == "clkit":
            assert words[1] in clkit.cli.COMMANDS, line
        elif words[0] == "make":
            assert words[1] in targets, line


def test_every_extra_is_named():
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    for extra in config["options.extras_require"]:
        assert f"`clkit[{extra}]`" in TEXT, extra


def test_the_files_it_names_exist():
    named = re.findall(r"`((?:docs|examples|tests|benchmarks)/[\w./-]*|LICENSE|Makefile)`", TEXT)
    assert "LICENSE" in named
    for path in named:
        assert "_build" in path or (REPO / path).exists(), path  # (what make docs writes)
