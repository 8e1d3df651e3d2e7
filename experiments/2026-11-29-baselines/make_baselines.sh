#!/usr/bin/env bash
# Reproduce the committed baseline tables in experiments/2026-11-29-{metatool,seal_tools}-{reference,baselines}/
# (about 30 minutes on 2 cores; README.md here).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
export HF_HUB_OFFLINE=1
# The reference figures of autotool/data/README.md: single-tool queries, whole catalog.
$PY -m eval --bench metatool --split all --single-tool --limit 3000 --out experiments/2026-11-29-metatool-reference
$PY -m eval --bench seal_tools --split all --single-tool --out experiments/2026-11-29-seal_tools-reference
# Every split of the seed-0 tool split (34% seen tools, of which 20% validation).
$PY -m eval --bench metatool --split train,val,seen-test,unseen-test --limit 2000 \
    --out experiments/2026-11-29-metatool-baselines
$PY -m eval --bench seal_tools --split train,val,seen-test,unseen-test --out experiments/2026-11-29-seal_tools-baselines
