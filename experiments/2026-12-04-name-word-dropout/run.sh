#!/bin/sh
# Name-word dropout for the embedder trained without MetaTool (issue #23): the embedder of
# 2026-12-03-loo-metatool-full (Seal-Tools and BFCL, 1,000 requests each) with and without --name-word-dropout 0.5,
# judged by dense retrieval per request on the foreign validation catalogs (which choose) and on the 300 MetaTool
# requests of the leave-one-out records (which choose nothing).
# Run from anywhere: sh experiments/2026-12-04-name-word-dropout/run.sh (about 45 min on 2 cores, alone).
set -eu
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
X=experiments/2026-12-04-name-word-dropout
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
J=experiments/2026-12-01-three-catalogs/judge.py
stamp() { date -u +%FT%TZ; }

for p in 0 0.5; do
    E=$RUNS/embedder-no-metatool-dropout-$p
    echo "$(stamp) embedder, --name-word-dropout $p"
    $PY -m training.embedder --out $E --catalog seal_tools --catalog bfcl --every-query --per-catalog 1000 \
        --name-word-dropout $p
    cp $E/manifest.json $X/embedder-dropout-$p.json
    echo "$(stamp) judge"
    $PY $J apibank toolalpaca metatool:all:300 --embedder $E/adapter --modes '' --measures per-query \
        --out $X/dense-dropout-$p
done
echo "$(stamp) done"
