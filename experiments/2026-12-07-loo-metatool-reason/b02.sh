#!/bin/sh
# The sensitivity row declared after the fit and before the judgment (README.md): the judged policy with b = 0.2,
# the value tied with the fitted b = 0 on API-Bank and ToolAlpaca (ties go to the smaller b), reason mode on the
# same 1,000 MetaTool requests, per request. Run after run.sh, alone on the 2-core CPU.
set -eu
cd "$(dirname "$0")/../.."
X=experiments/2026-12-07-loo-metatool-reason
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=2
P=$RUNS/loo-mt-reason-policy-b02
rm -rf $P && cp -r $RUNS/loo-mt-reason-policy $P
$PY -c "
import sys
import torch
from safetensors.torch import load_file, save_file
head = load_file(sys.argv[1])
head['b'] = torch.tensor(0.2)
save_file(head, sys.argv[1])" $P/anchor_head.safetensors
$PY experiments/2026-12-01-three-catalogs/judge.py metatool:all:1000 --policy $P \
    --embedder $RUNS/embedder-no-metatool-dropout-0/adapter --modes reason --measures per-query --out $X/judge-1000-b02
