#!/bin/sh
# ComplexFuncBench's paraphrased requests in the embedder trained without MetaTool (issue #23): the embedder of
# 2026-12-04-name-word-dropout's kept arm (Seal-Tools and BFCL whole, 1,000 requests each) with complexfuncbench:all
# added, judged by dense retrieval per request on the foreign validation catalogs (which choose) and on 1,000
# MetaTool requests (left out: they choose nothing). paired.py sets it beside the committed records of the same
# recipe without ComplexFuncBench (see the README).
# Run from anywhere: sh experiments/2026-12-07-complexfuncbench-embedder/run.sh (about 50 min on 2 cores, alone: the embedder 2,751 s).
set -eu
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
X=experiments/2026-12-07-complexfuncbench-embedder
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
J=experiments/2026-12-01-three-catalogs/judge.py
E=$RUNS/embedder-no-metatool-with-cfb
stamp() { date -u +%FT%TZ; }

echo "$(stamp) embedder"
[ -f $E/manifest.json ] || $PY -m training.embedder --out $E --catalogs seal_tools:all,bfcl:all,complexfuncbench:all \
    --per-catalog 1000
cp $E/manifest.json $X/embedder-with-cfb.json
echo "$(stamp) judge"
$PY $J apibank toolalpaca metatool:all:1000 --embedder $E/adapter --modes '' --measures per-query --out $X/dense-with-cfb
$PY $X/paired.py
echo "$(stamp) done"
