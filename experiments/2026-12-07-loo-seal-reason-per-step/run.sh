#!/bin/sh
# Leave Seal-Tools out, reason mode per step (issue #23). The language model of 2026-12-07-loo-seal-reason (SFT on
# MetaTool and BFCL; $RUNS/loo-seal-lm) set into the fast-mode policy of 2026-12-06-dense-explain-away's product
# row, rebuilt by that record's commands (refit.sh with ALPHA=0.5 L_LATER=0.1: the `tools` embedder, fine-tuned on
# MetaTool only; the reranker on MetaTool and BFCL in $RUNS/loo-rerank-no-seal-full; l = 0.05, l_later = 0.1,
# explain 0.5, g = 8.9212; c fitted on API-Bank and ToolAlpaca; judged per request on 300 Seal-Tools requests as a
# reproduction check). b is fitted on API-Bank and ToolAlpaca by training.fit_rationale, then fast and reason mode
# are judged per step on that record's 904 new Seal-Tools requests.
# Run alone on the 2-core CPU: sh experiments/2026-12-07-loo-seal-reason-per-step/run.sh (about 50 min).
set -eu
cd "$(dirname "$0")/../.."
X=experiments/2026-12-07-loo-seal-reason-per-step
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=2
FAST=$RUNS/refit-policy                 # refit.sh's policy folder
P=$RUNS/loo-seal-reason-step-policy     # the judged policy
stamp() { date -u +%FT%TZ; }
start=$(date +%s)
[ -f $RUNS/loo-seal-lm/manifest.json ] || { echo "run experiments/2026-12-07-loo-seal-reason/run.sh first" >&2; exit 1; }
cp $RUNS/loo-seal-lm/manifest.json $X/lm-manifest.json

echo "$(stamp) the fast-mode policy, rebuilt by 2026-12-06-dense-explain-away's product commands"
ALPHA=0.5 L_LATER=0.1 sh experiments/2026-12-04-loo-metatool-rerank-refit/refit.sh $X tools metatool:all,bfcl:all \
    $RUNS/loo-rerank-no-seal-full 8.9212 seal_tools:all:300 judge-300
echo "$(stamp) the judged policy: the language model in that policy; b fitted"
$PY $X/assemble.py $RUNS/loo-seal-lm $FAST $P
$PY -m training.fit_rationale $P --embedder tools --bench apibank,toolalpaca --out $X/fit-rationale --write
cp $P/manifest.json $X/policy-manifest.json
echo "$(stamp) judge: the 904 new Seal-Tools requests, per step"
$PY $X/judge_new.py --policy $P --out $X/judge-904
echo "$(stamp) done: $(( $(date +%s) - start )) s"
