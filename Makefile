# Everything bootstraps a local .venv with only python3 (venv + pip); targets are idempotent.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench

.PHONY: install run test fuzz compat lint fmt bench bench-quick clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev,dask,compat]"
	touch $(STAMP)

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[dev,dask,compat,bench]"
	touch $(BENCH_STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/einstride demo

test: $(STAMP)
	$(BIN)/python -m pytest

# The hardening tests with 25x the examples and a one-minute thread stress (tests/hardening).
fuzz: $(STAMP)
	EINSTRIDE_FUZZ=1 $(BIN)/python -m pytest -q tests/hardening

# NumPy's and opt_einsum's own einsum suites in full (tests/compat; make test runs a stable
# sixteenth of opt_einsum's 7,482 contract cases).
compat: $(STAMP)
	EINSTRIDE_COMPAT=full $(BIN)/python -m pytest -q tests/compat

lint: $(STAMP)
	$(BIN)/ruff check $(wildcard src tests benchmarks examples)
	$(BIN)/mypy --strict src

fmt: $(STAMP)
	$(BIN)/ruff format $(wildcard src tests benchmarks examples)

# BENCH_ARGS passes options through, e.g. make bench-quick BENCH_ARGS="-k attention"
bench: $(BENCH_STAMP)
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)

bench-quick: $(BENCH_STAMP)
	$(BIN)/python benchmarks/run.py --quick $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
