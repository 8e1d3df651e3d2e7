#!/bin/sh
# Leave MetaTool out, judged on more requests (issue #23): the models of 2026-12-04-loo-metatool-rerank-refit rebuilt
# by their own commands (the embedder on Seal-Tools and BFCL, the reranker on Seal-Tools and BFCL, l = 0.05 and
# g = 10.0103, c fitted on API-Bank and ToolAlpaca), judged on the same 300 MetaTool requests (does it reproduce?)
# and on 1,000 (seed-0 sample), per request and per step, fast mode with and without the reranker.
# Run from anywhere: sh experiments/2026-12-06-loo-metatool-1000/run.sh (about 75 min on 2 cores, alone).
set -eu
cd "$(dirname "$0")/../.."
X=experiments/2026-12-06-loo-metatool-1000
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=2
J=experiments/2026-12-01-three-catalogs/judge.py
E=$RUNS/embedder-no-metatool-dropout-0
stamp() { date -u +%FT%TZ; }

echo "$(stamp) embedder (2026-12-04-name-word-dropout's command, no dropout)"
# (that record's run.sh spells the catalogs as the flags were then: --catalog seal_tools --catalog bfcl --every-query)
[ -f $E/manifest.json ] || $PY -m training.embedder --out $E --catalogs seal_tools:all,bfcl:all --per-catalog 1000 \
    --name-word-dropout 0
cp $E/manifest.json $X/embedder-manifest.json
echo "$(stamp) reranker, policy folder, c, and the 300 requests per request (refit.sh)"
sh experiments/2026-12-04-loo-metatool-rerank-refit/refit.sh $X $E/adapter seal_tools:all,bfcl:all \
    $RUNS/loo-rerank-no-metatool-full 10.0103 metatool:all:300 judge-300
echo "$(stamp) 1,000 requests, per request and per step"
$PY $J metatool:all:1000 --policy $RUNS/refit-policy --embedder $E/adapter --modes fast:norerank,fast \
    --measures per-query,per-step --out $X/judge-1000
echo "$(stamp) done"
