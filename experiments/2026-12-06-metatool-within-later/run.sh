#!/bin/sh
# MetaTool's unseen tools, within catalog (issue #23), re-run for the policy as shipped since the later-step fit:
# the recipe of experiments/2026-12-03-metatool-within-catalog (embedder and reranker on the training catalogs'
# train splits, BFCL whole) with `make train-reranker`'s three fits in its order: c, b, then (l_later, explain).
# The policy before the later-step fit (ba83569) gets the first two fits ("before"); a copy of it gets the third
# ("after"). Both are judged in one run on the same 300 MetaTool unseen-test requests as the 2026-12-03 record.
# Run from anywhere: sh experiments/2026-12-06-metatool-within-later/run.sh (76 min on 2 cores, alone).
# Needs runs/policy-before: git archive ba83569 autotool/default_policy | tar -x -C /tmp
#   && cp -r /tmp/autotool/default_policy runs/policy-before
set -eu
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs/within-later}
X=experiments/2026-12-06-metatool-within-later
OLD=experiments/2026-12-03-metatool-within-catalog
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
mkdir -p $RUNS
stamp() { date -u +%FT%TZ; }

echo "$(stamp) embedder"
$PY -m training.embedder --out $RUNS/embedder --per-catalog 2500      # train splits of MetaTool and Seal-Tools
cp $RUNS/embedder/manifest.json $X/embedder-manifest.json
echo "$(stamp) reranker"
$PY -m training.reranker --out $RUNS/reranker --catalogs metatool:train,bfcl:all,seal_tools:train
cp $RUNS/reranker/manifest.json $X/reranker-manifest.json

echo "$(stamp) policy before the later-step fit: c and b"
rm -rf $RUNS/policy-before && cp -r runs/policy-before $RUNS/policy-before
$PY -c "
import json, pathlib, sys
f = pathlib.Path(sys.argv[1], 'manifest.json'); m = json.loads(f.read_text())
m['also_reads'] = m.get('also_reads', []) + [str(pathlib.Path(sys.argv[2]).resolve())]
f.write_text(json.dumps(m, indent=2) + '\n')" $RUNS/policy-before $RUNS/embedder/adapter
$PY -m training.fit_rerank $RUNS/policy-before --bench apibank,toolalpaca --embedder $RUNS/embedder/adapter \
    --reranker $RUNS/reranker/reranker --out $X/fit-rerank --write
$PY -m training.fit_rationale $RUNS/policy-before --bench apibank,toolalpaca --embedder $RUNS/embedder/adapter \
    --out $X/fit-rationale --write
cp $RUNS/policy-before/manifest.json $X/policy-before-manifest.json
echo "$(stamp) policy after: (l_later, explain)"
rm -rf $RUNS/policy && cp -r $RUNS/policy-before $RUNS/policy
$PY -m training.fit_later $RUNS/policy --bench apibank,toolalpaca,seal_tools:val --embedder $RUNS/embedder/adapter \
    --out $X/fit-later --write
cp $RUNS/policy/manifest.json $X/policy-manifest.json

echo "$(stamp) eval"
EX="--exclude-run experiments/2026-11-29-metatool-default-unseen --exclude-run experiments/2026-11-30-metatool-default-unseen-disjoint
 --exclude-run experiments/2026-11-29-gpu-ablation-metatool-unseen-test --exclude-run experiments/2026-11-29-gpu-ablation-metatool-residual
 --exclude-run experiments/2026-11-29-ablation-metatool --exclude-run experiments/2026-11-30-phase1-stages
 --exclude-run experiments/2026-11-30-phase1-stages-disjoint"
$PY -m eval --bench metatool --methods bm25,dense,hybrid --split unseen-test --limit 300 $EX --out $X/stock
$PY -m eval --bench metatool --embedder $RUNS/embedder/adapter --methods dense --split unseen-test --limit 300 $EX \
    --policy fast_before=$RUNS/policy-before:fast --policy reason_before=$RUNS/policy-before:reason \
    --policy fast=$RUNS/policy:fast --policy reason=$RUNS/policy:reason \
    --policy fast_norerank=$RUNS/policy:fast:norerank --out $X/tuned
$PY $OLD/paired.py $X/stock $X/tuned > $X/paired.md
echo "$(stamp) done"
