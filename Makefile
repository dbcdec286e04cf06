# Two commands set everything up: `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.nnperf-installed
TORCH := torch==2.13.0

.PHONY: demo test test-slow coverage install browser fonts clean

install: $(STAMP)

# torch first, pinned: an unpinned torch would pull several GB of CUDA packages.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH)
	$(PY) -m pip install --quiet -e '.[dev,runtimes]'
	touch $(STAMP)

# The main job on the embedded default (this CPU, torch backend, ./nnperf.db): calibrate once
# (about 3-4 minutes on 2 cores; skipped when done), then predict ResNet-18 and verify against a measurement.
demo: $(STAMP)
	$(VENV)/bin/nnperf calibrate --backend torch --if-needed
	$(VENV)/bin/nnperf predict resnet18 --backend torch --verify

# The tests on every core (pytest-xdist, a test file per worker), less those marked slow (about 10 s or
# more each on 2 cores), then those marked serial alone: under 8 minutes on a 2-core machine.
# `make test-slow` runs the slow ones one at a time (several time real measurements); CI runs both.
PYTEST := $(PY) -m pytest -q

test: $(STAMP)
	$(PYTEST) -n auto --dist loadfile -m "not slow and not serial"
	$(PYTEST) -m "serial and not slow"

test-slow: $(STAMP)
	$(PYTEST) -m slow

# Headless Chromium for the report's layout checks (tests/report/test_report_in_chromium.py, bench/report_render.py):
# Debian's package, installed when no Chromium is on the PATH (needs root and Debian's package mirror).
browser:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null \
	  || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)
	@command -v chromium || command -v chromium-browser || command -v google-chrome

# TrueType fonts for the rendered-glyph image set (nnperf.optimize.synthesize._glyphs): Debian's DejaVu,
# Liberation, GNU FreeFont and URW's 35 PostScript fonts (needs root and Debian's package mirror).
fonts:
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-dejavu-core fonts-liberation \
	  fonts-freefont-ttf fonts-urw-base35 >/dev/null
	@fc-list | wc -l

# Line coverage of the whole suite (slow tests included, one at a time as in make test-slow), as RESULTS.md
# reports it.
coverage: $(STAMP)
	$(PYTEST) -n auto --dist loadfile -m "not slow and not serial" --cov=nnperf --cov-report=
	$(PYTEST) -m "serial or slow" --cov=nnperf --cov-append --cov-report=term:skip-covered --cov-report=json:coverage.json

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache
# nnperf.db holds measurements: remove it yourself if you mean to
