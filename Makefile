# `make test` and `make demo` work on a fresh machine with only python3 and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Reinstall only when the project's metadata changes; otherwise this is a no-op.
STAMP := $(VENV)/.installed-$(shell cksum < pyproject.toml | cut -d' ' -f1)

.PHONY: test demo bench docs clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -q

demo: $(STAMP)
	$(BIN)/gemma4-lark demo

bench: $(STAMP)
	$(BIN)/python bench/parse_bench.py
	$(BIN)/python bench/stream_bench.py
	$(BIN)/python bench/render_bench.py
	$(BIN)/python bench/adversarial_bench.py

docs: $(STAMP)
	$(BIN)/gemma4-lark docs --out docs/spec

clean:
	rm -rf $(VENV) build *.egg-info
