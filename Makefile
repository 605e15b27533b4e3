# codeask: `make ask` asks a question, `make test` runs every test. Both set up .venv themselves.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
REPO ?= .
Q ?= Where are the paths cited in an answer checked against the snapshot?
ASK_ARGS ?=

.PHONY: ask test lint bench venv clean

$(STAMP): pyproject.toml layers/codeask/requirements.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "codeask needs Python 3.11+; set PYTHON=python3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $@

venv: $(STAMP)

ask: $(STAMP)
	$(BIN)/codeask ask --repo '$(REPO)' $(ASK_ARGS) "$(Q)"

test: lint
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy layers/codeask/codeask

bench: $(STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
