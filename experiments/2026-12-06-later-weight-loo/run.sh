#!/bin/sh
# Leave Seal-Tools out with l_later fitted on the foreign validation catalogs' later steps (issue #23).
# 1. sweep.py: fast mode without the reranker, l = 0.05, l_later over a grid; fitted on API-Bank's and
#    ToolAlpaca's later steps (0.1); Seal-Tools' curves beside it (about 18 min).
# 2. The served recipe on top: ../2026-12-04-loo-metatool-rerank-refit/refit.sh with
#    2026-12-05-loo-seal-per-step's arguments and L_LATER=0.1 (the reranker on MetaTool and BFCL, about 37 min,
#    unless $RUNS/loo-rerank-no-seal-full holds it; c fitted on API-Bank and ToolAlpaca; judged per request on
#    300 Seal-Tools requests), then judged per step on the same 300 and on 1,000 requests (seed 0).
# Run from anywhere: sh experiments/2026-12-06-later-weight-loo/run.sh (about 65 min on 2 cores, alone).
set -eu
cd "$(dirname "$0")/../.."
X=experiments/2026-12-06-later-weight-loo
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=2
J=experiments/2026-12-01-three-catalogs/judge.py
stamp() { date -u +%FT%TZ; }

echo "$(stamp) sweep"
[ -f $X/results.json ] || $PY $X/sweep.py --out $X
L_LATER=0.1 sh experiments/2026-12-04-loo-metatool-rerank-refit/refit.sh $X tools metatool:all,bfcl:all \
    $RUNS/loo-rerank-no-seal-full 8.9212 seal_tools:all:300 metatool-on-seal_tools
echo "$(stamp) judge per step, 300 requests"
$PY $J seal_tools:all:300 --policy $RUNS/refit-policy --embedder tools --modes fast:norerank,fast \
    --measures per-step --out $X/per-step-300
echo "$(stamp) judge per step, 1,000 requests"
$PY $J seal_tools:all:1000 --policy $RUNS/refit-policy --embedder tools --modes fast:norerank,fast \
    --measures per-step --out $X/per-step-1000
echo "$(stamp) done"
