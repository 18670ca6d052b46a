# Every target bootstraps what it needs: on a fresh clone `make run` and `make test` are enough.
.DEFAULT_GOAL := help
SHELL := /bin/bash
VENV := .venv
PYTHON := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SUBMISSIONS ?=
OUT ?= autograde/out
JOBS ?= $(shell nproc)

help: ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@test -x $(PYTHON) || python3 -m venv $(VENV)
	@echo "Installing the course environment into $(VENV) (log: $(VENV)/install.log) ..."
	@$(PYTHON) -m pip install -e '.[test]' > $(VENV)/install.log 2>&1 || { tail -30 $(VENV)/install.log; exit 1; }
	@touch $(STAMP)

setup: $(STAMP) ## create .venv and install the course (quick when nothing changed)

run: setup ## execute the course
	$(PYTHON) -m helpers.run_course

test: setup ## run the test suite
	$(PYTHON) -m pytest

lab: setup ## open the student notebooks in JupyterLab
	$(VENV)/bin/jupyter lab notebooks/

clean: ## remove build outputs and caches (keeps .venv)
	rm -rf build .pytest_cache autograde/out

.PHONY: help setup run test lab clean
