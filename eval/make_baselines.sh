#!/usr/bin/env bash
# Reproduce the committed baseline tables in eval/results/ (about 30 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
export HF_HUB_OFFLINE=1
# The reference figures of autotool/data/README.md: single-tool queries, whole catalog.
$PY -m eval --bench metatool --split all --single-tool --limit 3000 --out eval/results/metatool-reference
$PY -m eval --bench seal_tools --split all --single-tool --out eval/results/seal_tools-reference
# Every split of the seed-0 tool split (34% seen tools, of which 20% validation).
$PY -m eval --bench metatool --split train,val,seen-test,unseen-test --limit 2000 --out eval/results/metatool-baselines
$PY -m eval --bench seal_tools --split train,val,seen-test,unseen-test --out eval/results/seal_tools-baselines
