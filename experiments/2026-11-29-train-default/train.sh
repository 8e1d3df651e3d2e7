#!/bin/sh
# Train the default policy shipped in autotool/default_policy/ (see training/configs/phase1-default.yaml):
# SFT on MetaTool's train split, then on Seal-Tools'; fit the anchor head's rationale weight b and sharpness g
# on both val splits (tools held out from training) in that candidate's folder under runs/, and ship it; then
# GRPO on MetaTool's train split from it, fit b, g and the lexical prior's weights l and l_later (the shipped
# policy's GRPO steps ran without the prior, so the first fit keeps them at 0), ship that; then Phase II
# (Plackett-Luce) on MetaTool's train split, then on Seal-Tools', from the shipped policy, calibrated the same
# way, and shipped only if its val hit@1 is at least the shipped one's (`--unless-worse-on-val`).
# Each calibration writes into the candidate under $RUNS (`training.calibrate --write`); only the ship steps
# (`training.ship`, which copies the calibrated candidate) write autotool/default_policy/. The calibrations'
# grids and rationales go to the experiments/*-calibrate* folders beside this one (README.md here).
# 76 min on 2 CPU cores when rerun from a fresh clone (experiments/2026-12-05-train-policy-rerun; `make train-policy`
# prints the wall time; `make train-default` runs it after the embedder); each calibration writes the policy's
# rationales for every val step, about 5 min.
set -eu
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
X=experiments
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
DATA="metatool train (seed 0, 60x8 SFT steps), then seal_tools train (seed 0, 30x8 SFT steps)"
GRPO="then metatool train (seed 0), 36 GRPO steps x 4 queries x 4 rollouts (head fixed)"

$PY -m training.phase1 --config training/configs/phase1-default.yaml --out $RUNS/default-metatool
$PY -m training.phase1 --config training/configs/phase1-default.yaml --benchmark seal_tools \
    --init $RUNS/default-metatool/policy-sft --out $RUNS/default-seal_tools --sft.steps 30
$PY -m training.calibrate $RUNS/default-seal_tools/policy-sft --bench metatool,seal_tools --limit 400 --no-lexical \
    --out $X/2026-11-29-calibrate --write
$PY -m training.ship $RUNS/default-seal_tools/policy-sft autotool/default_policy \
    --command "make train-default" --data "$DATA; b and g fitted on val"
# GRPO and Phase II start from autotool/default_policy (the `init` of their configs): the policy just shipped.
$PY -m training.phase1 --config training/configs/phase1-grpo-default.yaml --out $RUNS/default-grpo
$PY -m training.calibrate $RUNS/default-grpo/policy-grpo --bench metatool,seal_tools --limit 400 \
    --out $X/2026-11-30-calibrate-lexical --write
$PY -m training.ship $RUNS/default-grpo/policy-grpo autotool/default_policy --command "make train-default" \
    --data "$DATA; b and g fitted on val; $GRPO; b, l, l_later and g fitted on val"
$PY -m training.phase2 --config training/configs/phase2-default.yaml --out $RUNS/default-rank-metatool
$PY -m training.phase2 --config training/configs/phase2-default.yaml --benchmark seal_tools --call_tokens 64 \
    --init $RUNS/default-rank-metatool/policy-rank --out $RUNS/default-rank-seal_tools
$PY -m training.calibrate $RUNS/default-rank-seal_tools/policy-rank --bench metatool,seal_tools --limit 400 \
    --out $X/2026-11-30-calibrate-rank --write
$PY -m training.ship $RUNS/default-rank-seal_tools/policy-rank autotool/default_policy --unless-worse-on-val \
    --command "make train-default" --data "$DATA; b and g fitted on val; $GRPO; then Phase II (head fixed): \
metatool train, 16 steps x 2 queries x 8 rollouts, then seal_tools train, 16 steps x 2 x 8; b, l, l_later and g \
fitted on val"
