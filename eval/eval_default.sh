#!/bin/sh
# The shipped default policy (method `policy`, reason mode; `policy-fast`, no rationale) against the
# retrieval baselines and name generation, on seen-test and unseen-test of both vendored benchmarks, the
# whole catalog in the bank, paired bootstrap intervals. Seeded samples of queries per split, sized so the
# whole script takes about 3 h 30 min on 2 CPU cores, the sum of its parts timed here (Seal-Tools steps are long).
set -eu
PY=${PY:-.venv/bin/python}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
$PY -m eval --bench metatool --methods bm25,dense,hybrid,namegen,policy,policy-fast \
    --split seen-test --limit ${METATOOL_SEEN_LIMIT:-100} --out eval/results/metatool-default-seen
# 300 unseen queries (the sample of the GPU ablation, whose namegen row covers them): a tighter interval.
$PY -m eval --bench metatool --methods bm25,dense,hybrid,policy,policy-fast \
    --split unseen-test --limit ${METATOOL_UNSEEN_LIMIT:-300} --out eval/results/metatool-default-unseen
# Seal-Tools' seen-test split whole (30 queries, 39 steps; about 10 s a step for the policy here).
$PY -m eval --bench seal_tools --methods bm25,dense,hybrid,namegen,policy,policy-fast \
    --split seen-test --out eval/results/seal_tools-default-seen
# 100 unseen Seal-Tools queries (276 steps; the sample of the GPU ablation, whose namegen row covers them,
# eval/results/namegen-seal_tools-unseen-test), with fast mode (E(query) + the lexical prior: the val-fitted
# weighted hybrid the rationale has to beat): about 70 min here.
$PY -m eval --bench seal_tools --methods bm25,dense,hybrid,policy,policy-fast \
    --split unseen-test --limit ${SEAL_UNSEEN_LIMIT:-100} --out eval/results/seal_tools-default-unseen
# Confirmation on unseen-test queries outside the samples above (and outside every earlier run that
# evaluated a policy on them), after the head's l_later was designed from the Seal-Tools sample's breakdown.
$PY -m eval --bench seal_tools --methods bm25,dense,hybrid,policy,policy-fast --split unseen-test \
    --limit ${SEAL_UNSEEN_LIMIT:-100} --exclude-run eval/results/seal_tools-default-unseen \
    --exclude-run eval/results/seal_tools-default --out eval/results/seal_tools-default-unseen-disjoint
$PY -m eval --bench metatool --methods bm25,dense,hybrid,policy,policy-fast --split unseen-test \
    --limit ${METATOOL_UNSEEN_LIMIT:-300} --exclude-run eval/results/metatool-default-unseen \
    --out eval/results/metatool-default-unseen-disjoint
