# The two quick-start commands: `make demo` and `make test`.
# Both create .venv when it is missing and install assay into it.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed

.PHONY: demo test install bench image clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[all,test]'
	bash scripts/install-model-test.sh $(PY)
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

test: $(STAMP)
	$(PY) -m pytest -q -ra

bench: $(STAMP)
	$(PY) bench/run_all.py

image: $(STAMP)
	$(VENV)/bin/assay sandbox build-image

clean:
	rm -rf $(VENV) build *.egg-info
