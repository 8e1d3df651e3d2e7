#!/bin/sh
# A check added after run.sh (README.md, "A check after the run: BFCL"): the policy before and after the fit, per
# step, fast mode as served, on every BFCL request; then the record's two pairings again. About 12 min on 2 cores,
# alone. $RUNS/policy-before is the policy as it was: `git archive ba83569 autotool/default_policy` holds it.
set -eu
cd "$(dirname "$0")/../.."
X=experiments/2026-12-06-later-steps-shipped
J=experiments/2026-12-01-three-catalogs/judge.py
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=2
for who in before after; do
  P=autotool/default_policy
  [ $who = before ] && P=$RUNS/policy-before
  $PY $J bfcl --policy $P --modes fast --measures per-step --out $X/$who/bfcl
done
$PY $X/paired.py $X > $X/paired.md
$PY $X/later_only.py $X > $X/later-only.md
