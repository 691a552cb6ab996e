# Two entry points for people: `make up` (set up and start kernelrank) and `make test` (set up and test).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: up test lint bench
up: $(VENV)/.installed
	$(BIN)/kernelrank up

test: $(VENV)/.installed
	$(BIN)/python -m pytest -q

lint: $(VENV)/.installed
	$(BIN)/ruff check .

# torch==2.13.0 first: on our machines it is a local CPU build; elsewhere any recent torch will do.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "torch==2.13.0" || $(BIN)/python -m pip install -q "torch>=2.4"
	$(BIN)/python -m pip install -q -e ".[harness,dev]"
	touch $@
