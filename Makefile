# The two commands a new user needs: `make figures` and `make test` (both build the env first).
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PROFILE ?= quick
CHAPTERS ?= all
DRY_RUN ?=
REHEARSE ?=
EXECUTOR ?=
COMPILE ?=
# The environment is rebuilt only when the pins change (the stamp carries their hash).
PIN_HASH := $(shell cat pyproject.toml | sha256sum | cut -c1-12)
STAMP := $(VENV)/.env-$(PIN_HASH)

.PHONY: env data figures snapshot compare book test lab bench prune clean

env: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.14.1 torchvision==0.29.1
	$(PY) -m pip install -q -e '.[dev,nlp,distributed,bench]'
	@rm -f $(VENV)/.env-* && touch $(STAMP)

data: env
	$(PY) -m lalr_core.driver --profile $(PROFILE) --chapters $(CHAPTERS) --data-only

figures: env
	$(if $(COMPILE),LALR_COMPILE=$(COMPILE)) $(PY) -m lalr_core.driver --profile $(PROFILE) --chapters $(CHAPTERS) \
		$(if $(EXECUTOR),--executor $(EXECUTOR)) $(if $(filter-out 0,$(DRY_RUN)),--dry-run) \
		$(if $(filter-out 0,$(REHEARSE)),--rehearse) $(if $(CPU_BUDGET),--cpu-budget $(CPU_BUDGET))

snapshot: env
	$(PY) -m lalr_core.snapshot

# Does this run reproduce the committed snapshot? Lists every check or table that differs.
compare: env
	$(PY) scripts/compare_checks.py compare results/$(PROFILE) figures/$(PROFILE)

book: env
	$(PY) -m lalr_core.book --profile $(PROFILE)

test: env
	$(PY) -m pytest -q tests notebooks --nbval-lax

lab: env
	$(VENV)/bin/jupyter lab notebooks

bench: env
	$(PY) benchmarks/run_all.py

prune: env
	$(PY) -m lalr_core.core.runs prune

clean:
	rm -rf figures/smoke figures/quick figures/rehearsal data/runs data/runs-rehearsal .pytest_cache
	find . -name __pycache__ -prune -exec rm -rf {} +
