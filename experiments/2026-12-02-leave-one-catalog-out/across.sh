#!/bin/sh
# The same two leave-one-out policies (run.sh), their heads refitted on the val splits of their own training
# catalog and of both foreign validation catalogs (mean over the three), then judged again on the held-out
# catalog. Copies the policies first: run.sh's stay as they were.
set -eu
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
X=experiments/2026-12-02-leave-one-catalog-out
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
J=experiments/2026-12-01-three-catalogs/judge.py
for pair in metatool:seal_tools:tools seal_tools:metatool:stock; do
    own=${pair%%:*}; rest=${pair#*:}; other=${rest%%:*}; embedder=${rest#*:}
    rm -rf $RUNS/loo-$own-across && cp -r $RUNS/loo-${own%_tools}/policy-sft $RUNS/loo-$own-across
    $PY -m training.calibrate $RUNS/loo-$own-across --bench $own,apibank,toolalpaca --limit 400 \
        --out $X/calibrate-$own-across --write
    $PY $J $other:all:300 --policy $RUNS/loo-$own-across --embedder $embedder --modes fast,reason \
        --measures per-query --out $X/$own-on-$other-across
done
