#!/bin/sh
# The reranker in the served path (issue #23): train the cross-encoder adapter, fit its weight into the shipped
# policy on the foreign validation catalogs, then judge the shipped policy through select_steps with and
# without it, in the same run, on the foreign validation catalogs, Seal-Tools' unseen tools and the vet clinic.
set -eu
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
X=experiments/2026-12-02-rerank-served
J=experiments/2026-12-01-three-catalogs/judge.py
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# 1. train (about 50 min) and ship the adapter, then fit c on API-Bank and ToolAlpaca (make train-reranker)
$PY -m training.reranker --out $RUNS/reranker-lora
mkdir -p autotool/rerankers/all-MiniLM-L6-v2-rerank
cp $RUNS/reranker-lora/reranker/adapter_config.json $RUNS/reranker-lora/reranker/adapter_model.safetensors \
    $RUNS/reranker-lora/reranker/reranker.json $RUNS/reranker-lora/reranker/manifest.json autotool/rerankers/all-MiniLM-L6-v2-rerank/
$PY -m training.fit_rerank autotool/default_policy --bench apibank,toolalpaca --out $X/fit --write
# 2. the served path, with the reranker and without (:norerank), one run each
$PY $J apibank toolalpaca --modes fast:norerank,fast --out $X/fast
$PY $J apibank toolalpaca --modes reason:norerank,reason --measures per-query --out $X/reason
$PY $J seal_tools:unseen-test:300 --modes fast:norerank,fast,reason:norerank,reason --measures per-query --out $X/seal_tools-unseen
$PY $J examples/vet_clinic --modes fast:norerank,fast,reason:norerank,reason --out $X/vet_clinic
