# Everything bootstraps a local .venv with only python3 (venv + pip); targets are idempotent.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BENCH_STAMP := $(VENV)/.installed-bench

.PHONY: install run test fuzz compat lint fmt wheel-check bench bench-quick clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev,dask,compat,torch]"
	touch $(STAMP)

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[dev,dask,compat,torch,bench,networks]"
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

LINT_PATHS := $(wildcard src tests benchmarks examples)

lint: $(STAMP)
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/mypy --strict src benchmarks/einstride_bench

fmt: $(STAMP)
	$(BIN)/ruff format $(LINT_PATHS)

# Build the wheel (isolated, as pip does for a user), install it into a fresh venv made with
# only python3 (its dependencies from PyPI) and run `einstride demo` there, outside the checkout.
wheel-check: $(STAMP)
	set -eu; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; unset PYTHONPATH; \
	$(BIN)/python -m pip wheel -q --no-deps -w "$$tmp/dist" . ; \
	$(PYTHON) -m venv "$$tmp/venv"; \
	"$$tmp/venv/bin/python" -m pip install -q "$$tmp"/dist/einstride-*.whl; \
	cd "$$tmp"; \
	"$$tmp/venv/bin/einstride" demo > demo.txt || { cat demo.txt; exit 1; }; \
	"$$tmp/venv/bin/python" -c 'import einstride as e, sys; assert e.__file__.startswith(sys.prefix)'; \
	tail -n 3 demo.txt; \
	echo "wheel-check: $$(ls dist) installed in a fresh venv; einstride demo ran"

# BENCH_ARGS passes options through, e.g. make bench-quick BENCH_ARGS="-k attention"
bench: $(BENCH_STAMP)
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)
	$(BIN)/python benchmarks/torch_table.py
	$(BIN)/python benchmarks/run.py --memory $(BENCH_ARGS)

bench-quick: $(BENCH_STAMP)
	$(BIN)/python benchmarks/run.py --quick $(BENCH_ARGS)
	$(BIN)/python benchmarks/run.py --quick --memory $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
