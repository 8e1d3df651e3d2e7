#!/bin/sh
# Without Seal-Tools, fast mode's BM25 weight l fitted per request on API-Bank, ToolAlpaca and BFCL (issue #23).
# 1. sweep.py: l over 2026-12-04-lexical-weight-loo's grid, fast mode without the reranker, `tools` embedder
#    (MetaTool only), every request of the three; ties to the smaller l (about 15 min).
# 2. The recipe of 2026-12-06-dense-explain-away's product row at that l (refit.sh with L, ALPHA=0.5, L_LATER=0.1:
#    the reranker on MetaTool and BFCL in $RUNS/loo-rerank-no-seal-full, g = 8.9212, c fitted on API-Bank and
#    ToolAlpaca; judged per request on 300 Seal-Tools requests), about 3 min.
# 3. Fast mode judged on the 1,000 Seal-Tools requests (seed 0) and the 904 new ones, per request and per step
#    (about 15 min), then paired.py against the committed l = 0.05 figures.
# If the fit gives l = 0.05, the policy is the one already judged, and the script stops after step 1.
# Run alone on the 2-core CPU: sh experiments/2026-12-07-loo-seal-lexical-bfcl/run.sh (about 35 min).
set -eu
cd "$(dirname "$0")/../.."
X=experiments/2026-12-07-loo-seal-lexical-bfcl
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=2
stamp() { date -u +%FT%TZ; }
start=$(date +%s)

echo "$(stamp) sweep"
$PY $X/sweep.py --out $X/sweep
L=$($PY -c "import json, sys; print(json.load(open(sys.argv[1]))['fitted_l'])" $X/sweep/results.json)
if [ "$L" = "0.05" ]; then echo "$(stamp) l = 0.05: nothing new to judge"; exit 0; fi
echo "$(stamp) the recipe at l = $L"
L=$L ALPHA=0.5 L_LATER=0.1 sh experiments/2026-12-04-loo-metatool-rerank-refit/refit.sh $X tools \
    metatool:all,bfcl:all $RUNS/loo-rerank-no-seal-full 8.9212 seal_tools:all:300 judge-300
echo "$(stamp) judge: 1,000 Seal-Tools requests"
$PY experiments/2026-12-01-three-catalogs/judge.py seal_tools:all:1000 --policy $RUNS/refit-policy --embedder tools \
    --modes fast --batch-size 32 --out $X/judge-1000
echo "$(stamp) judge: the 904 new requests"
$PY experiments/2026-12-07-loo-seal-reason-per-step/judge_new.py --policy $RUNS/refit-policy --modes fast \
    --measures per-query,per-step --out $X/judge-904
$PY $X/paired.py
echo "$(stamp) done: $(( $(date +%s) - start )) s"
