#!/usr/bin/env sh
# Phase I SFT on a tiny catalog with the tiny test model: two CPU processes (accelerate, gloo) at 4 examples
# each against one process at 8, the same global batch; then compare.py. About 30 s. Run from the repository root.
set -eu
OUT=${OUT:-/tmp/two-processes}
python experiments/2026-12-01-two-processes/compare.py --make-catalog "$OUT/tiny"
ARGS="--benchmark $OUT/tiny --backbone tests/assets/tiny-llama --embedder hash:64 --rationale_tokens 4 --call_tokens 6 --eval.limit 0 --sft.steps 3 --grpo.steps 0 --threads 1"
export AUTOTOOL_HOME="$OUT/home"
rm -rf "$OUT/two" "$OUT/one"
accelerate launch --multi_gpu --num_processes 2 --num_machines 1 --mixed_precision no --dynamo_backend no \
  -m training.phase1 $ARGS --sft.batch_size 4 --out "$OUT/two"
python -m training.phase1 $ARGS --sft.batch_size 8 --out "$OUT/one"
python experiments/2026-12-01-two-processes/compare.py "$OUT/two" "$OUT/one"
