#!/bin/sh
# The anchor at later steps with the called tools' directions taken out (issue #23).
# 1. sweep.py: alpha fitted on API-Bank's and ToolAlpaca's later steps, for the shipped policy and for the
#    leave-out-Seal-Tools first stage (about 8 min).
# 2. joint.py: without Seal-Tools, l_later and alpha fitted on API-Bank's, ToolAlpaca's and BFCL's later steps,
#    judged on the 904 Seal-Tools requests no earlier record judged (about 10 min).
# 3. The leave-out-Seal-Tools models (../2026-12-04-loo-metatool-rerank-refit/refit.sh with L_LATER=0.1: the
#    reranker on MetaTool and BFCL, about 37 min unless $RUNS/loo-rerank-no-seal-full holds it; c fitted on API-Bank
#    and ToolAlpaca; judged per request on 300 Seal-Tools requests), then served.py with joint.py's alpha
#    (about 10 min), per_request.py (about 3 min) and check.py (about 12 min).
# 4. shipped_grid.py: the shipped policy with (l_later, alpha) over a grid, nothing fitted (about 4 min).
# 5. The product: refit.sh with ALPHA (the head's explain) and product_check.py, unwrapped (about 9 min).
# Run from anywhere: sh experiments/2026-12-06-dense-explain-away/run.sh (about 65 min on 2 cores, alone, with the
# reranker already built).
set -eu
cd "$(dirname "$0")/../.."
X=experiments/2026-12-06-dense-explain-away
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=2
stamp() { date -u +%FT%TZ; }

echo "$(stamp) sweep"
$PY $X/sweep.py --out $X
echo "$(stamp) joint"
$PY $X/joint.py --out $X/joint
ALPHA=$($PY -c "import json, sys; print(json.load(open(sys.argv[1]))['fitted']['API-Bank, ToolAlpaca and BFCL'][1])" \
    $X/joint/results.json)
L_LATER=0.1 sh experiments/2026-12-04-loo-metatool-rerank-refit/refit.sh $X tools metatool:all,bfcl:all \
    $RUNS/loo-rerank-no-seal-full 8.9212 seal_tools:all:300 metatool-on-seal_tools
echo "$(stamp) served, alpha = $ALPHA"
$PY $X/served.py --policy $RUNS/refit-policy --alpha $ALPHA --out $X/served
echo "$(stamp) per request"
$PY $X/per_request.py --policy $RUNS/refit-policy --out $X/per-request
echo "$(stamp) checks"
$PY $X/check.py --policy $RUNS/refit-policy --out $X/check
echo "$(stamp) the shipped head's later-step map"
$PY $X/shipped_grid.py --out $X/shipped-grid
echo "$(stamp) the product: a head with explain = $ALPHA"
mkdir -p $X/product
ALPHA=$ALPHA L_LATER=0.1 sh experiments/2026-12-04-loo-metatool-rerank-refit/refit.sh $X/product tools \
    metatool:all,bfcl:all $RUNS/loo-rerank-no-seal-full 8.9212 seal_tools:all:300 metatool-on-seal_tools
$PY $X/product_check.py --policy $RUNS/refit-policy --out $X/product
echo "$(stamp) done"
