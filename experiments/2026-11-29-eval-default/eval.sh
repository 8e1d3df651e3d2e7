#!/bin/sh
# The shipped default policy (method `policy`, reason mode; `policy-fast`, no rationale) against the
# retrieval baselines and name generation, on seen-test and unseen-test of both vendored benchmarks, the
# whole catalog in the bank, paired bootstrap intervals. Seeded samples of queries per split, sized so the
# whole script takes about 4 h 10 min on 2 CPU cores, the sum of its parts timed here (Seal-Tools steps are long).
# The commands before the last four ran with the Phase I policy (SFT + GRPO), shipped until Phase II was added
# to `make train-default`; the last four evaluate the shipped one on fresh samples, the first two of them
# beside the Phase I policy (PHASE1: its folder, taken from commit 0c89222 when missing).
set -eu
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
PHASE1=${PHASE1:-runs/stages/grpo}
E=experiments   # each run writes its own folder there, beside this one (README.md here)
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
$PY -m eval --bench metatool --methods bm25,dense,hybrid,namegen,policy,policy-fast \
    --split seen-test --limit ${METATOOL_SEEN_LIMIT:-100} --out $E/2026-11-29-metatool-default-seen
# 300 unseen queries (the sample of the GPU ablation, whose namegen row covers them): a tighter interval.
$PY -m eval --bench metatool --methods bm25,dense,hybrid,policy,policy-fast \
    --split unseen-test --limit ${METATOOL_UNSEEN_LIMIT:-300} --out $E/2026-11-29-metatool-default-unseen
# Seal-Tools' seen-test split whole (30 queries, 39 steps; about 10 s a step for the policy here).
$PY -m eval --bench seal_tools --methods bm25,dense,hybrid,namegen,policy,policy-fast \
    --split seen-test --out $E/2026-11-30-seal_tools-default-seen
# 100 unseen Seal-Tools queries (276 steps; the sample of the GPU ablation, whose namegen row covers them,
# experiments/2026-11-29-namegen-seal_tools-unseen-test), with fast mode (E(query) + the lexical prior: the
# val-fitted weighted hybrid the rationale has to beat): about 70 min here.
$PY -m eval --bench seal_tools --methods bm25,dense,hybrid,policy,policy-fast \
    --split unseen-test --limit ${SEAL_UNSEEN_LIMIT:-100} --out $E/2026-11-30-seal_tools-default-unseen
# Confirmation on unseen-test queries outside the samples above (and outside every earlier run that
# evaluated a policy on them), after the head's l_later was designed from the Seal-Tools sample's breakdown.
$PY -m eval --bench seal_tools --methods bm25,dense,hybrid,policy,policy-fast --split unseen-test \
    --limit ${SEAL_UNSEEN_LIMIT:-100} --exclude-run $E/2026-11-30-seal_tools-default-unseen \
    --exclude-run $E/2026-11-29-seal_tools-default --out $E/2026-11-30-seal_tools-default-unseen-disjoint
$PY -m eval --bench metatool --methods bm25,dense,hybrid,policy,policy-fast --split unseen-test \
    --limit ${METATOOL_UNSEEN_LIMIT:-300} --exclude-run $E/2026-11-29-metatool-default-unseen \
    --out $E/2026-11-30-metatool-default-unseen-disjoint
# After Phase II: the shipped policy beside the Phase I one, on unseen-test queries outside every earlier run
# that evaluated a policy on that split (MetaTool 9 min, Seal-Tools 18 min), then its fast mode (no rationale)
# on the same queries: the same exclusions, limit and seed draw the same sample (3 and 6 min).
if [ ! -d "$PHASE1" ]; then
    mkdir -p "$PHASE1" && git archive 0c89222 autotool/default_policy | tar -x --strip-components=2 -C "$PHASE1"
fi
METATOOL_FRESH="--split unseen-test --limit ${METATOOL_UNSEEN_LIMIT:-300}
    --exclude-run $E/2026-11-29-metatool-default-unseen --exclude-run $E/2026-11-30-metatool-default-unseen-disjoint
    --exclude-run $E/2026-11-29-gpu-ablation-metatool-unseen-test
    --exclude-run $E/2026-11-29-gpu-ablation-metatool-residual
    --exclude-run $E/2026-11-29-ablation-metatool --exclude-run $E/2026-11-30-phase1-stages
    --exclude-run $E/2026-11-30-phase1-stages-disjoint"
SEAL_FRESH="--split unseen-test --limit 40
    --exclude-run $E/2026-11-30-seal_tools-default-unseen --exclude-run $E/2026-11-30-seal_tools-default-unseen-disjoint
    --exclude-run $E/2026-11-30-seal_tools-default-unseen-fast
    --exclude-run $E/2026-11-30-seal_tools-default-unseen-disjoint-fast
    --exclude-run $E/2026-11-29-gpu-ablation-seal_tools-unseen-test
    --exclude-run $E/2026-11-29-namegen-seal_tools-unseen-test
    --exclude-run $E/2026-11-29-seal_tools-default --exclude-run $E/2026-11-30-phase1-stages-seal_tools
    --exclude-run $E/2026-11-30-phase1-stages-seal_tools-unseen"
$PY -m eval --bench metatool --methods bm25,dense,hybrid --policy shipped=autotool/default_policy \
    --policy phase1=$PHASE1 $METATOOL_FRESH --out $E/2026-11-30-metatool-phase2-unseen
$PY -m eval --bench seal_tools --methods bm25,dense,hybrid --policy shipped=autotool/default_policy \
    --policy phase1=$PHASE1 $SEAL_FRESH --out $E/2026-11-30-seal_tools-phase2-unseen
$PY -m eval --bench metatool --methods bm25,dense --policy shipped-fast=autotool/default_policy:fast \
    $METATOOL_FRESH --out $E/2026-11-30-metatool-phase2-unseen-fast
$PY -m eval --bench seal_tools --methods bm25 --policy shipped-fast=autotool/default_policy:fast \
    $SEAL_FRESH --out $E/2026-11-30-seal_tools-phase2-unseen-fast
