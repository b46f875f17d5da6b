# The two commands a person types: `make demo` and `make test`.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev

.PHONY: demo test lint bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(DEVSTAMP): pyproject.toml $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

demo: $(STAMP)
	$(BIN)/signoff demo

test: $(DEVSTAMP)
	$(BIN)/python -m pytest -q

lint: $(DEVSTAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) .signoff
