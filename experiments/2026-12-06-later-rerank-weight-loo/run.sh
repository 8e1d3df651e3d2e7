#!/bin/sh
# The reranker's weight at later steps, leave Seal-Tools out (issue #23). Needs 2026-12-06-later-weight-loo's
# policy folder ($RUNS/refit-policy: l_later = 0.1, the reranker on MetaTool and BFCL, c = 1); run that record's
# run.sh first if $RUNS holds none. About 13 min on 2 cores, alone.
set -eu
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=2
$PY experiments/2026-12-06-later-rerank-weight-loo/sweep.py $RUNS/refit-policy --out experiments/2026-12-06-later-rerank-weight-loo
