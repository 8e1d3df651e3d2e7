#!/bin/sh
# Leave one catalog out with a reranker (issue #23): in each direction a reranker trained without the judged
# catalog (the shipped recipe's rows, about 2,700 of them, half the shipped reranker's: 1,250 requests a catalog
# without Seal-Tools, 700 with it, whose requests call more tools each), a fresh
# policy trained on the other training catalog (the recipe of 2026-12-02-leave-one-catalog-out), its head fitted
# on its own catalog's val split, the reranker's weight c fitted on the foreign validation catalogs (what
# `make train-reranker` does), then the served path on 300 requests of the left-out catalog, with the reranker
# and without it in the same run.
set -eu
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
X=experiments/2026-12-02-loo-rerank
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
C=training/configs/phase1-default.yaml
J=experiments/2026-12-01-three-catalogs/judge.py
MODES=fast:norerank,fast,reason:norerank,reason
# Seal-Tools left out: MetaTool (and BFCL for the reranker) trained on; the `tools` embedder read MetaTool only
$PY -m training.reranker --catalogs metatool:all,bfcl:all --per-catalog 1250 --out $RUNS/loo-rerank-no-seal
cp $RUNS/loo-rerank-no-seal/manifest.json $X/reranker-no-seal.json
$PY -m training.phase1 --config $C --out $RUNS/loo-metatool
$PY -m training.calibrate $RUNS/loo-metatool/policy-sft --bench metatool --limit 400 --out $X/calibrate-metatool --write
$PY -m training.fit_rerank $RUNS/loo-metatool/policy-sft --reranker $RUNS/loo-rerank-no-seal/reranker \
    --bench apibank,toolalpaca --out $X/fit-no-seal --write
$PY $J seal_tools:all:300 --policy $RUNS/loo-metatool/policy-sft --embedder tools --modes $MODES \
    --measures per-query --out $X/metatool-on-seal_tools
# MetaTool left out: Seal-Tools (and BFCL for the reranker) trained on; the stock embedder (`tools` read MetaTool)
$PY -m training.reranker --catalogs seal_tools:all,bfcl:all --per-catalog 700 --out $RUNS/loo-rerank-no-metatool
cp $RUNS/loo-rerank-no-metatool/manifest.json $X/reranker-no-metatool.json
$PY -m training.phase1 --config $C --benchmark seal_tools --out $RUNS/loo-seal --sft.steps 60
$PY -m training.calibrate $RUNS/loo-seal/policy-sft --bench seal_tools --limit 400 --out $X/calibrate-seal_tools --write
$PY -m training.fit_rerank $RUNS/loo-seal/policy-sft --reranker $RUNS/loo-rerank-no-metatool/reranker \
    --embedder stock --bench apibank,toolalpaca --out $X/fit-no-metatool --write
$PY $J metatool:all:300 --policy $RUNS/loo-seal/policy-sft --embedder stock --modes $MODES \
    --measures per-query --out $X/seal_tools-on-metatool
