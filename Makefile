# Every target bootstraps what it needs: on a fresh clone `make run` and `make test` are enough.
.DEFAULT_GOAL := help
SHELL := /bin/bash
VENV := .venv
PYTHON := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SUBMISSIONS ?=
OUT ?= build/grading
JOBS ?= $(shell nproc)
SHARD ?=
SHARDS ?=
REGRADE ?=
# more options of python -m autograde (--help lists them): GRADE_OPTIONS="--cell-timeout 300"
GRADE_OPTIONS ?=
# apt waits this long for another apt or dpkg that holds its lock (several jobs starting on one node)
APT_LOCK_TIMEOUT ?= 300
# The course's language: en, nl or id (helpers/language.py lists them). Not LANG: make imports the
# environment, and every shell's LANG (en_US.UTF-8, C.UTF-8) would pick it.
COURSE_LANG ?= en
CHECK_COURSE_LANG = @$(PYTHON) -c "import sys; from helpers.language import LANGUAGES; sys.exit(None if sys.argv[1] in LANGUAGES else f'COURSE_LANG must be one of {\", \".join(LANGUAGES)}, not {sys.argv[1]!r}')" "$(COURSE_LANG)"
# English notebooks in notebooks/, Dutch and Indonesian in notebooks/nl/ and notebooks/id/
LESSON_DIR = notebooks/$(filter-out en,$(COURSE_LANG))
# JupyterLab's own menus in the language only where its (optional) language pack is installed:
# pip install jupyterlab-language-pack-nl-NL (or -id-ID); the setting is in jupyter/lab-nl, lab-id
LAB_PACK = jupyterlab_language_pack_$(COURSE_LANG)_$(shell echo $(COURSE_LANG) | tr a-z A-Z)
LAB_CONFIG = $(CURDIR)/jupyter$(if $(filter-out en,$(COURSE_LANG)),$(shell $(PYTHON) -c "import $(LAB_PACK)" 2>/dev/null && echo :$(CURDIR)/jupyter/lab-$(COURSE_LANG)))

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@test -x $(PYTHON) || python3 -m venv $(VENV)
	@echo "Installing the course environment into $(VENV) (log: $(VENV)/install.log) ..."
	@$(PYTHON) -m pip install --no-compile -e '.[test,hub]' > $(VENV)/install.log 2>&1 || { tail -30 $(VENV)/install.log; exit 1; }
	@# pip byte-compiles on one core, about half of the install's CPU time; compileall on every core.
	@# Compiled here, not at first import: the grader's sandbox reads .venv read-only. A file for a
	@# newer Python fails to compile (torch has one), as it does in pip: not an error of the install
	@$(PYTHON) -m compileall -q -j 0 $(VENV)/lib >> $(VENV)/install.log 2>&1 || true
	@# jsonschema imports rfc3987-syntax if it is there (jupyter-events asks for it, optionally), which
	@# builds 39 parsers on import: 3.7 s in every process that imports nbformat. Nothing here checks IRIs.
	@$(PYTHON) -m pip uninstall -y rfc3987-syntax >> $(VENV)/install.log 2>&1
	@touch $(STAMP)

setup: $(STAMP) ## create .venv and install the course (quick when nothing changed)

run: setup ## execute every lesson (solutions/) into build/run/, then compare the training paths [COURSE_LANG=nl|id]
	$(CHECK_COURSE_LANG)
	$(PYTHON) -m course.run --compare --language $(COURSE_LANG)

# apt-get install of $(1), quiet unless it fails: then apt's own message (a held lock, no network).
# It waits for dpkg's lock; the package lists are updated only when the install fails on the
# current ones, since apt-get update does not wait for theirs (DPkg::Lock::Timeout is dpkg's)
APT_GET = DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=$(APT_LOCK_TIMEOUT)
apt_install = { log=$$({ $(APT_GET) install -y -qq $(1) || { $(APT_GET) update -qq && $(APT_GET) install -y -qq $(1); }; } 2>&1) || { echo "$$log" | tail -5; false; }; }

# Debian's chromium for tests/test_browser.py: installed when root with apt, else the test is skipped and says how
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then echo "Installing chromium (apt) for the browser test ..."; $(call apt_install,chromium) || echo "Could not install chromium: the browser test will be skipped"; else echo "The browser test needs chromium: sudo apt-get install chromium"; fi

# bubblewrap isolates each student's kernel (make autograde, the grading tests): installed when root with apt
bwrap:
	@command -v bwrap >/dev/null || { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then echo "Installing bubblewrap (apt) for grading ..."; $(call apt_install,bubblewrap) || echo "Could not install bubblewrap: grading will say what it needs"; else echo "Grading needs bubblewrap: sudo apt-get install bubblewrap"; fi; }

test: setup $(CHROMIUM) bwrap ## run the test suite
	$(PYTHON) -m pytest

quick: setup ## the fast tests only (pytest -m "not slow"): about 2 minutes on a quiet machine, for day-to-day work
	$(PYTHON) -m pytest -m "not slow"

# one torch thread per kernel: jupyter/jupyter_server_config.py (two threads crawl on a busy machine)
lab: setup ## open the student notebooks in JupyterLab, with nbgrader's panels [COURSE_LANG=nl|id]
	$(CHECK_COURSE_LANG)
	JUPYTER_CONFIG_PATH=$(LAB_CONFIG) $(VENV)/bin/jupyter lab $(LESSON_DIR)

NAME ?=
lesson: setup ## a new lesson's skeleton and its row in course/lessons.py: make lesson NAME=11_learning_rate_warmup
	$(PYTHON) -m course.scaffold "$(NAME)"

release: setup ## update the catalogs (locale/), regenerate notebooks/ in en, nl and id from solutions/
	$(PYTHON) -m course.release

autograde: setup bwrap ## grade a class (resumes; REGRADE=1 grades all): make autograde SUBMISSIONS=<folder or LMS zip> [OUT=...] [JOBS=...] [SHARD=K/N] [GRADE_OPTIONS=...]
	$(PYTHON) -m course.grade --submissions "$(SUBMISSIONS)" --out "$(OUT)" --jobs $(JOBS) $(if $(SHARD),--shard $(SHARD)) $(if $(REGRADE),--regrade) $(GRADE_OPTIONS)

merge: setup ## combine sharded grading: make merge SHARDS="<OUT of shard 1> <OUT of shard 2> ..." OUT=<new folder>
	@# strip: one name per line, as $$(ls -d build/shards/*) gives them, would be one recipe line each
	$(PYTHON) -m autograde.shards --out "$(OUT)" $(strip $(SHARDS))

bench: setup ## measure speed, memory, learning and each technique into build/bench/report.md
	$(PYTHON) -m course.bench

HUB_PORT ?= 8000
hub: setup ## a class on a local JupyterHub: an instructor, students in en/nl/id, offline; Ctrl-C stops it [HUB_PORT=8000]
	$(PYTHON) -m course.hub serve --port $(HUB_PORT)

gpu-check: setup ## on a CUDA GPU: run every lesson there, check what they print (10 min); elsewhere says so
	@$(PYTHON) -m course.gpu_check

clean: ## remove build outputs and caches (keeps .venv)
	rm -rf build .pytest_cache

.PHONY: help setup bwrap run test quick lab lesson release autograde merge bench gpu-check hub clean
