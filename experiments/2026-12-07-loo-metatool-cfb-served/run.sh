#!/bin/sh
# Leave MetaTool out, the served path on the embedder kept in 2026-12-07-complexfuncbench-embedder (issue #23):
# 2026-12-06-loo-metatool-1000's run.sh with one change, the embedder, now trained on Seal-Tools, BFCL and
# ComplexFuncBench (the no-MetaTool recipe after that record's rule). The reranker (Seal-Tools and BFCL; it reads no
# embedder), l = l_later = 0.05, g = 10.0103 and c fitted on API-Bank and ToolAlpaca are as in that record.
# Judged on the same 300 and 1,000 MetaTool requests, per request and per step, fast mode with and without the reranker.
# Run from anywhere: sh experiments/2026-12-07-loo-metatool-cfb-served/run.sh (about 2 h on 2 cores, alone).
set -eu
cd "$(dirname "$0")/../.."
X=experiments/2026-12-07-loo-metatool-cfb-served
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=2
J=experiments/2026-12-01-three-catalogs/judge.py
E=$RUNS/embedder-no-metatool-with-cfb
stamp() { date -u +%FT%TZ; }

echo "$(stamp) embedder (2026-12-07-complexfuncbench-embedder's command)"
[ -f $E/manifest.json ] || $PY -m training.embedder --out $E --catalogs seal_tools:all,bfcl:all,complexfuncbench:all \
    --per-catalog 1000
cp $E/manifest.json $X/embedder-manifest.json
echo "$(stamp) reranker, policy folder, c, and the 300 requests per request (refit.sh)"
sh experiments/2026-12-04-loo-metatool-rerank-refit/refit.sh $X $E/adapter seal_tools:all,bfcl:all \
    $RUNS/loo-rerank-no-metatool-full 10.0103 metatool:all:300 judge-300
echo "$(stamp) 1,000 requests, per request and per step"
$PY $J metatool:all:1000 --policy $RUNS/refit-policy --embedder $E/adapter --modes fast:norerank,fast \
    --measures per-query,per-step --out $X/judge-1000
echo "$(stamp) done"
