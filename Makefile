# Two entry points for people: `make up` (set up and start kernelrank) and `make test` (set up and test).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: up test test-fast lint typecheck bench lock
up: $(VENV)/.installed
	$(BIN)/kernelrank up

# One pytest worker per core (pytest-xdist); tests that finish before others are taken over by idle workers.
PYTEST := $(BIN)/python -m pytest -q -n auto --dist worksteal
# axe-core, the accessibility checker the browser tests inject into each page (pinned in tests/web/package.json)
AXE := tests/web/node_modules/axe-core/axe.min.js
test: $(VENV)/.installed $(VENV)/.system-packages $(AXE)
	$(PYTEST)

# The edit loop: everything but the tests marked slow (real compiles, time limits run out, whole-system runs).
test-fast: $(VENV)/.installed $(VENV)/.system-packages $(AXE)
	$(PYTEST) -m "not slow"

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy over the installed packages ([tool.mypy] in pyproject.toml); `make test` runs it too (tests/test_lint.py).
typecheck: $(VENV)/.installed
	$(BIN)/python -m mypy

# torch==2.13.0 first: on our machines it is a local CPU build; elsewhere any recent torch will do. Then the
# server, the chat adapters and the test tools (the dev extra brings them), at the versions of requirements.lock.
$(VENV)/.installed: pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "torch==2.13.0" || $(BIN)/python -m pip install -q "torch>=2.4"
	$(BIN)/python -m pip install -q -c requirements.lock -e ".[harness,dev]"
	touch $@

# requirements.lock again from what .venv holds (after a change of the ranges in pyproject.toml and a passing make test)
lock: $(VENV)/.installed
	{ sed -n '/^#/p' requirements.lock; $(BIN)/python -m pip freeze --exclude-editable | grep -v -i -E '^(torch|kernelrank)'; } > requirements.lock.new
	mv requirements.lock.new requirements.lock

# System packages the test suite uses: g++ and Python's headers (Inductor's CPU backend in the honest
# torch.compile case), unshare (a harness server started as another user), Debian's chromium and its driver
# (the web pages' browser tests, tests/web) and npm (their accessibility checker, axe-core). Installed with
# apt-get where there is one and we may (root, or sudo without a password); otherwise the tests that need them skip.
SYSTEM_PACKAGES := g++ python3-dev util-linux chromium chromium-driver npm
$(VENV)/.system-packages: $(VENV)/.installed
	@if command -v g++ >/dev/null && command -v unshare >/dev/null && command -v chromedriver >/dev/null && command -v npm >/dev/null && \
	    $(BIN)/python -c "import os, sysconfig; raise SystemExit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))"; then \
	  echo "system packages: present"; \
	elif command -v apt-get >/dev/null && { [ "$$(id -u)" = 0 ] || sudo -n true 2>/dev/null; }; then \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $(SYSTEM_PACKAGES); \
	else \
	  echo "system packages: cannot install $(SYSTEM_PACKAGES) here; the tests that need them will skip"; \
	fi
	touch $@

$(AXE): tests/web/package.json $(VENV)/.system-packages
	@if ! command -v npm >/dev/null; then echo "npm is missing: the browser tests' accessibility checks will skip"; \
	elif ! npm install --prefix tests/web --no-audit --no-fund --silent; then \
	  echo "npm could not install axe-core: the browser tests' accessibility checks will skip"; \
	else touch $@; fi
