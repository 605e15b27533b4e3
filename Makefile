# codeask: `make ask` asks a question, `make test` runs every test. Both set up .venv themselves.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
REPO ?= .
Q ?= Where are the paths cited in an answer checked against the snapshot?
ASK_ARGS ?=

SAM_VENV := .venv-sam
SAM := SAM_CLI_TELEMETRY=0 $(SAM_VENV)/bin/sam
SAM_STAMP := $(SAM_VENV)/.installed

.PHONY: ask test e2e lint bench bench-tuning venv sam-build deploy clean dashboard mutate

$(STAMP): pyproject.toml layers/codeask/requirements.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "codeask needs Python 3.11+; set PYTHON=python3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $@

venv: $(STAMP)

ask: $(STAMP)
	$(BIN)/codeask ask --repo '$(REPO)' $(ASK_ARGS) "$(Q)"

test: lint sam-build
	$(BIN)/python -m pytest -q

$(SAM_STAMP):
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --quiet aws-sam-cli==1.170.0
	@touch $@

# The template must lint clean and every layer must build; tests then inspect .aws-sam/build.
# sam build for python3.13 needs a working python3.13 on PATH; on pyenv machines, take pyenv's.
sam-build: $(SAM_STAMP)
	$(SAM) validate --lint
	@py313=$$(command -v python3.13 2>/dev/null || true); \
	if [ -z "$$py313" ] || ! "$$py313" -V >/dev/null 2>&1; then \
	  prefix=$$(pyenv prefix 3.13.0 2>/dev/null) && export PATH="$$prefix/bin:$$PATH"; \
	fi; \
	set -x; $(SAM) build

# sam build + sam deploy (CONFIG_ENV=prod for samconfig.toml's prod stack; PARAMS="Key=Value ..." or
# PARAMS=file://params.yaml as --parameter-overrides), then print the SlackRequestUrl, write
# slack/manifest.deployed.yaml and print the command that puts the bot's secrets in.
deploy: $(SAM_STAMP) $(STAMP)
	$(BIN)/python scripts/deploy.py

# The whole chain on loopback: moto server (SQS, DynamoDB, Secrets Manager), a fake Slack Web API,
# a scripted fake Messages API; signed events in, verified answers out, then a 100-question burst
# with injected faults whose figures land in bench/out/reliability.json.
# The EMF documents the handlers print land in bench/out/emf.jsonl, for `make dashboard`.
e2e: $(STAMP)
	@mkdir -p bench/out
	@: > bench/out/emf.jsonl
	CODEASK_RELIABILITY_REPORT=bench/out/reliability.json CODEASK_EMF_LOG=bench/out/emf.jsonl \
		$(BIN)/python -m pytest -q tests/integration/test_e2e.py tests/integration/test_feedback.py \
		tests/integration/test_cross_repo.py tests/integration/test_reliability.py
	@cat bench/out/reliability.json

# The CloudWatch dashboard of template.yaml, drawn from the metrics of the last `make e2e`.
dashboard: $(STAMP)
	@test -s bench/out/emf.jsonl || $(MAKE) e2e
	$(BIN)/python bench/dashboard.py --emf bench/out/emf.jsonl --out bench/out/dashboard.png

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy layers/codeask/codeask tests

# Mutation testing (mutmut) of the modules that keep codeask's promises, with the kill rate per
# module and every surviving mutant; slow, so not part of `make test`. GROUPS="verify split" picks
# groups (scripts/mutate.py lists them); MUTATE_ARGS=--report prints the last run's figures again.
GROUPS ?=
MUTATE_ARGS ?=
mutate: $(STAMP)
	$(BIN)/python scripts/mutate.py $(GROUPS) $(MUTATE_ARGS)

bench: $(STAMP)
	$(BIN)/python bench/run.py

# Search-only quality on every set (bench/eval; the tuning and independent sets in /work/corpora,
# see bench/tuning/README.md) beside a naive grep baseline; a set whose corpora are missing is
# skipped with a note.
bench-tuning: $(STAMP)
	$(BIN)/python bench/run.py --tuning

clean:
	rm -rf $(VENV) $(SAM_VENV) .aws-sam .pytest_cache .mypy_cache .ruff_cache .mutate .hypothesis
