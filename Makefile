# The two quick-start commands: `make demo` and `make test`.
# Both create .venv when it is missing and install assay into it: `make demo`
# only what the demo needs (binary wheels, no compiler); `make test` every
# extra, the test tools and the model server the tests run (built once).
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
DEMO_STAMP = $(VENV)/.installed-demo
STAMP   = $(VENV)/.installed
# the suite runs on two processes (pytest-xdist; the groups that must share one: tests/conftest.py)
TEST_WORKERS ?= 2

.PHONY: demo test install bench image clean

$(DEMO_STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[demo]'
	@touch $(DEMO_STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[all,test]'
	bash scripts/install-model-test.sh $(PY)
	@touch $(STAMP)

install: $(STAMP)

demo: $(DEMO_STAMP)
	$(PY) examples/demo.py

test: $(STAMP)
	$(PY) -m pytest -q -ra -n $(TEST_WORKERS) --dist loadgroup

bench: $(STAMP)
	$(PY) bench/run_all.py

image: $(STAMP)
	$(VENV)/bin/assay sandbox build-image

clean:
	rm -rf $(VENV) build *.egg-info
