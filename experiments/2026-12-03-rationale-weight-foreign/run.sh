#!/bin/sh
# Reason mode's rationale weight b fitted on the foreign validation catalogs (issue #23), then the served path
# judged with it. Run from anywhere: sh experiments/2026-12-03-rationale-weight-foreign/run.sh (about 30 min on
# 2 cores, alone). The replays (replay.py, replay_steps.py) were run before, to choose what to build.
set -eu
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
X=experiments/2026-12-03-rationale-weight-foreign
J=experiments/2026-12-01-three-catalogs/judge.py
E=experiments
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# 1. fit b over reason mode's first choices with the reranker, write it into the shipped head
$PY -m training.fit_rationale autotool/default_policy --bench apibank,toolalpaca --out $X/fit --write
# 2. the served path, per request, on the catalogs it was fitted on and on Seal-Tools' unseen tools (not fitted)
$PY $J apibank toolalpaca --modes reason --measures per-query --out $X/reason
$PY $J seal_tools:unseen-test:300 --modes reason --measures per-query --out $X/seal_tools-unseen
$PY $J examples/vet_clinic --modes reason --out $X/vet_clinic
# 3. the within-catalog table's 40 Seal-Tools unseen-test requests (115 steps), per step, with arguments
$PY -m eval --bench seal_tools --embedder tools --methods bm25,dense,hybrid \
  --policy reason=autotool/default_policy:reason --split unseen-test --limit 40 \
  --exclude-run $E/2026-11-30-seal_tools-default-unseen --exclude-run $E/2026-11-30-seal_tools-default-unseen-disjoint \
  --exclude-run $E/2026-11-30-seal_tools-default-unseen-fast --exclude-run $E/2026-11-30-seal_tools-default-unseen-disjoint-fast \
  --exclude-run $E/2026-11-29-gpu-ablation-seal_tools-unseen-test --exclude-run $E/2026-11-29-namegen-seal_tools-unseen-test \
  --exclude-run $E/2026-11-29-seal_tools-default --exclude-run $E/2026-11-30-phase1-stages-seal_tools \
  --exclude-run $E/2026-11-30-phase1-stages-seal_tools-unseen \
  --out $X/seal_tools-unseen-steps
