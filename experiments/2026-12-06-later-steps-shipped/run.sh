#!/bin/sh
# The shipped head's later-step weights (l_later, explain) fitted by the rule declared in README.md, then the
# shipped policy judged per step before and after, on the same steps in one run (issue #23).
# Run from anywhere: sh experiments/2026-12-06-later-steps-shipped/run.sh (about 50 min on 2 cores, alone).
set -eu
cd "$(dirname "$0")/../.."
X=experiments/2026-12-06-later-steps-shipped
J=experiments/2026-12-01-three-catalogs/judge.py
E=experiments
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=2
stamp() { date -u +%FT%TZ; }

if grep -q '"later_fitted"' autotool/default_policy/manifest.json; then  # "before" must be the policy as it was
  echo "autotool/default_policy/ was fitted already; restore it first: git checkout c3f7fd0 -- autotool/default_policy" >&2
  exit 1
fi
echo "$(stamp) the shipped policy as it was, kept to judge against"
rm -rf $RUNS/policy-before && mkdir -p $RUNS && cp -r autotool/default_policy $RUNS/policy-before
echo "$(stamp) 1. the fit, written into the shipped policy"
$PY -m training.fit_later autotool/default_policy --bench apibank,toolalpaca,seal_tools:val --out $X/fit --write
echo "$(stamp) 2. before and after, per step, as served (no arguments)"
for who in before after; do
  P=autotool/default_policy
  [ $who = before ] && P=$RUNS/policy-before
  $PY $J seal_tools:unseen-test:300 --policy $P --modes fast,reason --measures per-step --out $X/$who/seal_tools-unseen
  $PY $J apibank toolalpaca --policy $P --modes fast --measures per-step --out $X/$who/foreign
  $PY $J examples/vet_clinic --policy $P --modes fast,reason --measures per-step --out $X/$who/vet_clinic
done
$PY $X/paired.py $X > $X/paired.md
$PY $X/later_only.py $X > $X/later-only.md
echo "$(stamp) 3. the within-catalog table's 40 Seal-Tools unseen-test requests (115 steps), with arguments"
$PY -m eval --bench seal_tools --embedder tools --methods bm25,dense,hybrid \
  --policy reason=autotool/default_policy:reason --policy fast=autotool/default_policy:fast \
  --split unseen-test --limit 40 \
  --exclude-run $E/2026-11-30-seal_tools-default-unseen --exclude-run $E/2026-11-30-seal_tools-default-unseen-disjoint \
  --exclude-run $E/2026-11-30-seal_tools-default-unseen-fast --exclude-run $E/2026-11-30-seal_tools-default-unseen-disjoint-fast \
  --exclude-run $E/2026-11-29-gpu-ablation-seal_tools-unseen-test --exclude-run $E/2026-11-29-namegen-seal_tools-unseen-test \
  --exclude-run $E/2026-11-29-seal_tools-default --exclude-run $E/2026-11-30-phase1-stages-seal_tools \
  --exclude-run $E/2026-11-30-phase1-stages-seal_tools-unseen \
  --out $X/seal_tools-unseen-steps
cp autotool/default_policy/manifest.json $X/policy-manifest.json
echo "$(stamp) done"
