#!/bin/sh
# Reason mode with four sampled rationales beside the greedy one (probe.py), on the foreign validation catalogs for
# the shipped policy and the policy trained without MetaTool, then on MetaTool for the latter. Alone on the CPU.
set -eu
PY=.venv/bin/python
HERE=experiments/2026-12-07-sampled-rationales
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
stamp() { date -u +%FT%TZ; }
echo "start $(stamp)"
$PY $HERE/probe.py --policy runs/loo-mt-reason-policy --embedder runs/embedder-no-metatool-with-cfb/adapter \
    --out $HERE/no-metatool-validation apibank toolalpaca
echo "no-metatool validation done $(stamp)"
$PY $HERE/probe.py --policy autotool/default_policy --embedder tools --out $HERE/shipped-validation apibank toolalpaca
echo "shipped validation done $(stamp)"
$PY $HERE/probe.py --policy runs/loo-mt-reason-policy --embedder runs/embedder-no-metatool-with-cfb/adapter \
    --out $HERE/no-metatool-metatool metatool-fresh metatool:all:1000
echo "end $(stamp)"
