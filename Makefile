# movelab: the commands a user runs. `make reproduce` sets everything up and runs the papers'
# reproductions; `make test` runs every test; `make bench` runs the speed benchmarks.
SHELL := /bin/bash
VENV   := .venv
PY     := $(VENV)/bin/python
CLI    := $(VENV)/bin/movelab
DEPS_STAMP := $(VENV)/.movelab-deps
INSTALL_STAMP := $(VENV)/.movelab-installed
RUST_SOURCES := $(shell find crates -name '*.rs' -o -name 'Cargo.toml' -o -name '*.h' 2>/dev/null) \
                Cargo.toml $(wildcard Cargo.lock) pyproject.toml $(shell find presets -type f 2>/dev/null)
PY_DEPS := maturin>=1.5,<2 typer>=0.12 rich>=13 numpy>=1.26 pandas>=2.0 matplotlib>=3.8 \
           dask[distributed]>=2024.1 pyarrow>=15 pytest>=8 hypothesis>=6 ruff>=0.5
REPORTS ?= reports

.PHONY: install wheel reproduce browser test test-rust test-python lint bench bench-record-deps clean

install: $(INSTALL_STAMP)

$(PY):
	python3 -m venv $(VENV)

$(DEPS_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(foreach d,$(PY_DEPS),'$(d)')
	touch $@

# Rebuilds the Rust extension only when Rust sources or presets changed; Python sources are
# installed editable, so editing them needs no reinstall.
# The package's bytecode is compiled once here, as pip does when it installs a wheel: an
# environment that writes none (PYTHONDONTWRITEBYTECODE) would otherwise compile every module at
# every command's start (about 30 ms). A source edited later is compiled afresh by Python itself.
$(INSTALL_STAMP): $(DEPS_STAMP) $(RUST_SOURCES)
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH $(VENV)/bin/maturin develop --release -q
	$(PY) -m compileall -q python/movelab
	touch $@

# One abi3 wheel (CPython 3.11 and later) in dist/: presets, paper data and example specs are
# built into it. Built with the same profile and interpreter as `make install`, so cargo reuses
# that build (only the packaging runs). Install it anywhere with: pip install dist/movelab-*.whl
wheel: install
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH $(VENV)/bin/maturin build --release -q \
	  -i $(abspath $(PY)) -o dist
	@ls dist/movelab-*-abi3-*.whl

# Every reproduction's points run on a local pool of processes (every core); the report is static HTML.
reproduce: install
	$(CLI) reproduce all --out $(REPORTS) --force
	$(CLI) platform compose --out $(REPORTS)/composition --force
	# The record/replay demonstrations' saved results (what-if tables of real programs, recorded and
	# replayed by `make bench`, which replaces them), so the report shows them without re-recording.
	@[ -f $(REPORTS)/record-replay/record-replay.json ] || { mkdir -p $(REPORTS)/record-replay && \
	  cp docs/record-replay-results/* $(REPORTS)/record-replay/; }
	$(CLI) report $(REPORTS)

# Headless Chromium from the OS packages, for the report's browser test (which says it was skipped,
# and why, when Chromium is not there).
browser:
	@command -v chromium >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
	  apt-get update -q >/dev/null && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >/dev/null; } || \
	  echo "chromium not installed (needs root and apt-get): the report's browser test will be skipped"

test: install test-rust lint test-python

test-rust:
	cargo test --workspace --exclude movelab-py
	cargo clippy --workspace --all-targets -- -D warnings

lint: install
	$(VENV)/bin/ruff check python

test-python: install browser
	$(VENV)/bin/pytest -q python/tests

# The real programs `movelab bench record` records (Debian packages; installed only when missing).
RECORD_DEBS := gcc sqlite3 redis-server redis-tools gzip valgrind zstd
bench-record-deps:
	@missing=""; for p in $(RECORD_DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	      --no-install-recommends $$missing >/dev/null; \
	  else echo "not installed (needs root and apt-get):$$missing; movelab bench record skips what needs them"; fi; \
	fi

bench: install bench-record-deps
	$(CLI) bench dram --out $(REPORTS)/bench --force
	$(CLI) bench platform --out $(REPORTS)/bench --force
	$(CLI) bench host all --out $(REPORTS)/bench-host --force
	$(CLI) bench host onload --out $(REPORTS)/bench-host --force
	$(CLI) bench sweep --out $(REPORTS)/bench --force
	$(CLI) bench record --out $(REPORTS)/record-replay --force

clean:
	rm -rf target dist $(VENV) $(REPORTS)
