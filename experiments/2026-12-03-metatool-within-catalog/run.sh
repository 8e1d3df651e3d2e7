#!/bin/sh
# MetaTool's unseen tools, within catalog (issue #23), for a policy that never saw them: the shipped policy (its
# language model and head trained on the train splits only) with an embedder and a reranker trained as the
# shipped ones are, but on the training catalogs' train splits only (BFCL whole: it is neither judged here nor
# foreign). c and b fitted on the foreign validation catalogs as `make train-reranker` does. Then the served path
# on the same 300 MetaTool unseen-test requests as experiments/2026-11-30-metatool-phase2-unseen.
# Run from anywhere: sh experiments/2026-12-03-metatool-within-catalog/run.sh (about 1.5 h on 2 cores, alone).
set -eu
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs/within}
X=experiments/2026-12-03-metatool-within-catalog
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
mkdir -p $RUNS
stamp() { date -u +%FT%TZ; }

echo "$(stamp) embedder"
$PY -m training.embedder --out $RUNS/embedder --per-catalog 2500      # train splits of MetaTool and Seal-Tools
cp $RUNS/embedder/manifest.json $X/embedder-manifest.json
echo "$(stamp) reranker"
$PY -m training.reranker --out $RUNS/reranker --catalogs metatool:train,bfcl:all,seal_tools:train
cp $RUNS/reranker/manifest.json $X/reranker-manifest.json

echo "$(stamp) policy"
rm -rf $RUNS/policy && cp -r autotool/default_policy $RUNS/policy
# the copy reads the new embedder's space (the same model family; the shipped policy reads the tools adapter too)
$PY -c "
import json, pathlib, sys
f = pathlib.Path(sys.argv[1], 'manifest.json'); m = json.loads(f.read_text())
m['also_reads'] = m.get('also_reads', []) + [str(pathlib.Path(sys.argv[2]).resolve())]
f.write_text(json.dumps(m, indent=2) + '\n')" $RUNS/policy $RUNS/embedder/adapter
$PY -m training.fit_rerank $RUNS/policy --embedder $RUNS/embedder/adapter --reranker $RUNS/reranker/reranker \
    --out $X/fit-rerank --write
$PY -m training.fit_rationale $RUNS/policy --embedder $RUNS/embedder/adapter --out $X/fit-rationale --write
cp $RUNS/policy/manifest.json $X/policy-manifest.json

echo "$(stamp) eval"
EX="--exclude-run experiments/2026-11-29-metatool-default-unseen --exclude-run experiments/2026-11-30-metatool-default-unseen-disjoint
 --exclude-run experiments/2026-11-29-gpu-ablation-metatool-unseen-test --exclude-run experiments/2026-11-29-gpu-ablation-metatool-residual
 --exclude-run experiments/2026-11-29-ablation-metatool --exclude-run experiments/2026-11-30-phase1-stages
 --exclude-run experiments/2026-11-30-phase1-stages-disjoint"
# the stock baselines, then the tuned embedder's dense and the policy, on the same 300 requests (the same sample)
$PY -m eval --bench metatool --methods bm25,dense,hybrid --split unseen-test --limit 300 $EX --out $X/stock
$PY -m eval --bench metatool --embedder $RUNS/embedder/adapter --methods dense --split unseen-test --limit 300 $EX \
    --policy reason=$RUNS/policy:reason --policy fast=$RUNS/policy:fast \
    --policy reason_norerank=$RUNS/policy:reason:norerank --policy fast_norerank=$RUNS/policy:fast:norerank \
    --out $X/tuned
$PY $X/paired.py $X/stock $X/tuned > $X/paired.md
echo "$(stamp) done"
