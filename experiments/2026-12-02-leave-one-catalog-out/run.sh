#!/bin/sh
# Leave one catalog out (issue #23): a fresh policy trained on one training catalog only (the shipped recipe's
# first stage: 60 SFT steps of 8 on its train split, seed 0), its head fitted on that catalog's own val split,
# then judged through the served path (one call per request, as issue #23's table counts) on 300 requests of the other catalog, which it never read.
set -eu
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
X=experiments/2026-12-02-leave-one-catalog-out
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
C=training/configs/phase1-default.yaml
J=experiments/2026-12-01-three-catalogs/judge.py
$PY -m training.phase1 --config $C --out $RUNS/loo-metatool
$PY -m training.calibrate $RUNS/loo-metatool/policy-sft --bench metatool --limit 400 --out $X/calibrate-metatool --write
$PY $J seal_tools:all:300 --policy $RUNS/loo-metatool/policy-sft --embedder tools --modes fast,reason \
    --measures per-query --out $X/metatool-on-seal_tools
$PY -m training.phase1 --config $C --benchmark seal_tools --out $RUNS/loo-seal --sft.steps 60
$PY -m training.calibrate $RUNS/loo-seal/policy-sft --bench seal_tools --limit 400 --out $X/calibrate-seal_tools --write
$PY $J metatool:all:300 --policy $RUNS/loo-seal/policy-sft --embedder stock --modes fast,reason \
    --measures per-query --out $X/seal_tools-on-metatool
