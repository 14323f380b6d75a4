# Two commands on a fresh Debian machine: `make demo` and `make test`.
# Both create .venv, install clkit into it, and install a CPU OpenCL driver
# (Debian's pocl-opencl-icd) when no OpenCL device is visible.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test mutate bench setup opencl clean docs doctest

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

setup: $(STAMP) opencl

# A usable device is one clkit would pick by default (the Oclgrind simulator is not).
opencl: $(STAMP)
	@if $(BIN)/python -c "import clkit; clkit.select()" >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "No OpenCL device: installing the CPU driver pocl-opencl-icd"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pocl-opencl-icd; \
	else \
	  echo "No OpenCL device. Install a CPU driver, then run make again:" >&2; \
	  echo "    sudo apt-get install pocl-opencl-icd" >&2; exit 1; \
	fi

demo: setup
	$(BIN)/clkit devices
	$(BIN)/python examples/01_hello_world.py
	$(BIN)/python examples/demo.py

test: setup
	$(BIN)/python -m pytest

# Plants known bugs one at a time in a copy of the tree; fails if the tests miss one.
mutate: setup
	$(BIN)/python tools/mutate.py

# CLKIT_BENCH_SIZE=small|default|gpu|WxH and CLKIT_BENCH_DEVICE=<spec> choose the cases' size
# and the device; report.py prints the speed-ups and the acceptance targets from the JSON.
bench: setup
	mkdir -p .benchmarks
	$(BIN)/python -m pytest benchmarks --benchmark-only --benchmark-columns=min,median,max,rounds \
	  --benchmark-json=.benchmarks/latest.json
	$(BIN)/python benchmarks/report.py .benchmarks/latest.json

# The documentation site, into docs/_build/html: warnings are errors, cross-references checked.
DOCS_STAMP := $(VENV)/.docs-installed
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e '.[docs]'
	touch $@

docs: $(DOCS_STAMP)
	rm -rf docs/api/generated   # the API's stub pages, made again from today's names
	$(BIN)/python -m sphinx -W --keep-going -n -b html docs docs/_build/html

# The >>> examples of the docstrings and of the API pages, run as tests.
doctest: setup
	$(BIN)/python -m pytest -q --doctest-modules clkit --doctest-glob='*.rst' docs/api

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .benchmarks docs/_build docs/api/generated
