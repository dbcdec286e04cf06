# Two commands set everything up: `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.nnperf-installed
TORCH := torch==2.13.0

.PHONY: demo test install clean

install: $(STAMP)

# torch first, pinned: an unpinned torch would pull several GB of CUDA packages.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/nnperf inspect resnet18

test: $(STAMP)
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache
