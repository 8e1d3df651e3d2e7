#!/bin/sh
# Leave Seal-Tools out, judged per step (issue #23): the models of 2026-12-04-loo-seal-rerank-refit (nothing of
# Seal-Tools in any model: the `tools` embedder, fine-tuned on MetaTool only; l = 0.05 and c fitted on API-Bank and
# ToolAlpaca; a reranker on MetaTool and BFCL; g = 8.9212 from loo-seal-full's policy), rebuilt by that record's own
# steps (../2026-12-04-loo-metatool-rerank-refit/refit.sh, which judges per request), then judged per step
# (python -m eval's protocol: one step per gold call, step i reads the earlier gold calls) on the same 300
# Seal-Tools requests, and on a second sample of 1,000 requests (seed 0), both measures.
# Run from anywhere: sh experiments/2026-12-05-loo-seal-per-step/run.sh (about 45 min on 2 cores, alone).
set -eu
cd "$(dirname "$0")/../.."
X=experiments/2026-12-05-loo-seal-per-step
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
J=experiments/2026-12-01-three-catalogs/judge.py
stamp() { date -u +%FT%TZ; }

sh experiments/2026-12-04-loo-metatool-rerank-refit/refit.sh $X tools metatool:all,bfcl:all \
    $RUNS/loo-rerank-no-seal-full 8.9212 seal_tools:all:300 metatool-on-seal_tools
echo "$(stamp) judge per step, the same 300 requests"
$PY $J seal_tools:all:300 --policy $RUNS/refit-policy --embedder tools --modes fast:norerank,fast \
    --measures per-step --out $X/per-step-300
echo "$(stamp) judge both measures, 1,000 requests"
$PY $J seal_tools:all:1000 --policy $RUNS/refit-policy --embedder tools --modes fast:norerank,fast \
    --out $X/both-1000
echo "$(stamp) done"
