#!/bin/sh
# Judge the shortlist policy (train.sh) in reason mode through the served path (judge.py: select_steps(...,
# arguments=False)) on the foreign validation catalogs; look.py prints its rationales for 24 API-Bank requests.
set -eu
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
J=experiments/2026-12-01-three-catalogs/judge.py
$PY $J apibank --policy $RUNS/sl-seal/policy-sft --modes reason --out $RUNS/judge-sl-seal-apibank
$PY $J toolalpaca --policy $RUNS/sl-seal/policy-sft --modes reason --out $RUNS/judge-sl-seal-toolalpaca
$PY experiments/2026-12-02-shortlist/look.py apibank $RUNS/sl-seal/policy-sft 24
