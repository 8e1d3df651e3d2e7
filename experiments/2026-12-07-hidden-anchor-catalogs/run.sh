#!/bin/sh
# W h trained on the training catalogs (probe.py), judged in fast mode on the foreign validation catalogs for the
# shipped policy, and for the policy trained without MetaTool on them and on MetaTool. Alone on the CPU.
set -eu
PY=.venv/bin/python
HERE=experiments/2026-12-07-hidden-anchor-catalogs
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
stamp() { date -u +%FT%TZ; }
NO_MT_TRAIN=seal_tools:all:500,bfcl:all:500,complexfuncbench:all:500
echo "start $(stamp)"
$PY $HERE/probe.py --policy autotool/default_policy --embedder tools --out $HERE/shipped \
    --train metatool:all:500,$NO_MT_TRAIN --judge apibank,toolalpaca
echo "shipped done $(stamp)"
$PY $HERE/probe.py --policy runs/loo-mt-reason-policy --embedder runs/embedder-no-metatool-with-cfb/adapter \
    --out $HERE/no-metatool --train $NO_MT_TRAIN --judge apibank,toolalpaca,metatool-fresh,metatool:all:1000
echo "end $(stamp)"
