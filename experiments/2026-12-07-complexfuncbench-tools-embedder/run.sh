#!/bin/sh
# ComplexFuncBench in the shipped `tools` embedder's recipe (issue #23): `make train-embedder`'s command
# (metatool:all, at most 2,500 requests a catalog) with complexfuncbench:all added, judged by dense retrieval per
# request against the shipped embedder on the foreign validation catalogs (which choose) and on 1,000 Seal-Tools
# requests (foreign to both; they choose nothing).
# Run from anywhere: sh experiments/2026-12-07-complexfuncbench-tools-embedder/run.sh (about 25 min on 2 cores, alone).
set -eu
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
X=experiments/2026-12-07-complexfuncbench-tools-embedder
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
J=experiments/2026-12-01-three-catalogs/judge.py
E=$RUNS/embedder-tools-with-cfb
CATALOGS="apibank toolalpaca seal_tools:all:1000"
stamp() { date -u +%FT%TZ; }

echo "$(stamp) embedder"
[ -f $E/manifest.json ] || $PY -m training.embedder --out $E --catalogs metatool:all,complexfuncbench:all \
    --per-catalog 2500
cp $E/manifest.json $X/embedder-with-cfb.json
echo "$(stamp) judge"
$PY $J $CATALOGS --embedder tools --modes '' --measures per-query --out $X/dense-shipped
$PY $J $CATALOGS --embedder $E/adapter --modes '' --measures per-query --out $X/dense-with-cfb
$PY $X/paired.py
echo "$(stamp) done"
