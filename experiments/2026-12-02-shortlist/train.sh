#!/bin/sh
# The shortlist probe: the shipped policy, then SFT with the 5 best fast-mode tools listed before the rationale
# (--shortlist 5), which picks one by copying its line, on the train splits of MetaTool (40 steps of 8), then
# Seal-Tools (40 steps of 8; the shortlist comes with the start policy); the head as shipped (head_lr 0).
set -eu
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
C=training/configs/phase1-default.yaml
$PY -m training.phase1 --config $C --init autotool/default_policy --out $RUNS/sl-metatool --sft.steps 40 --shortlist 5
$PY -m training.phase1 --config $C --benchmark seal_tools --init $RUNS/sl-metatool/policy-sft --out $RUNS/sl-seal --sft.steps 40
