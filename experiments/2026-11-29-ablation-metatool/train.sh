#!/bin/sh
# Phase I (SFT + GRPO), Phase II (Plackett-Luce) and, for equal compute, Phase I + more GRPO steps on
# MetaTool's train split; then one evaluation of the three policies and the retrieval baselines on the
# same queries, with paired bootstrap intervals. About 2 h on 2 CPU cores. Results: this folder (the
# evaluation) and, beside it, experiments/2026-11-29-{phase1-metatool,phase2-metatool,phase1-more-grpo-metatool}
# (each run's metrics, curves and config; README.md here).
set -eu
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
STEPS=${STEPS:-10}   # Phase II steps, and the extra GRPO steps of the ablation (16 rollouts a step in both)
X=experiments/2026-11-29
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false

$PY -m training.phase1 --config training/configs/phase1.yaml --out $RUNS/phase1-metatool
$PY -m training.phase2 --config training/configs/phase2.yaml --out $RUNS/phase2-metatool \
    --init $RUNS/phase1-metatool/policy-grpo --rank.steps $STEPS --eval.limit 0
$PY -m training.phase1 --config training/configs/phase1.yaml --out $RUNS/phase1-more-grpo-metatool \
    --stages '[grpo]' --init $RUNS/phase1-metatool/policy-grpo --grpo.steps $STEPS --eval.limit 0
$PY -m eval --bench metatool --methods bm25,dense,hybrid --split seen-test,unseen-test --limit 40 \
    --policy phase1=$RUNS/phase1-metatool/policy-grpo \
    --policy phase1+2=$RUNS/phase2-metatool/policy-rank \
    --policy phase1+grpo=$RUNS/phase1-more-grpo-metatool/policy-grpo \
    --out $X-ablation-metatool
mkdir -p $X-phase1-metatool
cp $RUNS/phase1-metatool/metrics.csv $RUNS/phase1-metatool/curves.png $RUNS/phase1-metatool/config.yaml \
    $RUNS/phase1-metatool/summary.md $X-phase1-metatool/
cp -r $RUNS/phase1-metatool/eval $X-phase1-metatool/
mkdir -p $X-phase2-metatool
cp $RUNS/phase2-metatool/metrics.csv $RUNS/phase2-metatool/curves.png $RUNS/phase2-metatool/config.yaml \
    $X-phase2-metatool/
mkdir -p $X-phase1-more-grpo-metatool
cp $RUNS/phase1-more-grpo-metatool/metrics.csv $RUNS/phase1-more-grpo-metatool/curves.png \
    $RUNS/phase1-more-grpo-metatool/config.yaml $X-phase1-more-grpo-metatool/
