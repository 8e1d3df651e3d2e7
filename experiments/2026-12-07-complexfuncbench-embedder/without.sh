#!/bin/sh
# The arm without ComplexFuncBench, trained again on this record's code and library versions (the committed records
# paired.py first used were trained by earlier sessions' sentence-transformers and transformers), judged the same way.
# `python paired.py --without dense-without` pairs with it.
# Run from anywhere: sh experiments/2026-12-07-complexfuncbench-embedder/without.sh (about 40 min on 2 cores, alone).
set -eu
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
X=experiments/2026-12-07-complexfuncbench-embedder
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
E=$RUNS/embedder-no-metatool-without-cfb
[ -f $E/manifest.json ] || $PY -m training.embedder --out $E --catalogs seal_tools:all,bfcl:all --per-catalog 1000
cp $E/manifest.json $X/embedder-without.json
$PY experiments/2026-12-01-three-catalogs/judge.py apibank toolalpaca metatool:all:1000 --embedder $E/adapter \
    --modes '' --measures per-query --out $X/dense-without
$PY $X/paired.py --without dense-without
