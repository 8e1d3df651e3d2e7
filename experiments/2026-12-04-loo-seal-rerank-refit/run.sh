#!/bin/sh
# Leave Seal-Tools out, the reranker on top of the refitted BM25 weight (issue #23), the other direction of
# 2026-12-04-loo-metatool-rerank-refit: fast mode as the shipped recipe serves it, with nothing of Seal-Tools in
# any model: the `tools` embedder (fine-tuned on MetaTool only), l = 0.05 (fitted on API-Bank and ToolAlpaca for
# that embedder: 2026-12-04-lexical-weight-loo), a reranker on MetaTool and BFCL (the command of
# 2026-12-03-loo-seal-full) with c fitted on API-Bank and ToolAlpaca. Fast mode loads no language model, so the
# policy folder is the shipped one with its head's l and g replaced (g = 8.9212, which loo-seal-full's policy
# fitted on MetaTool's val; a = 1 and W = 0 as there; reason mode is not judged: in loo-seal-full b was fitted
# to 0 and reason chose as fast did). Judged per request on the same 300 Seal-Tools requests as before.
# Run from anywhere: sh experiments/2026-12-04-loo-seal-rerank-refit/run.sh (about 1 h on 2 cores, alone).
set -eu
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
X=experiments/2026-12-04-loo-seal-rerank-refit
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
J=experiments/2026-12-01-three-catalogs/judge.py
R=$RUNS/loo-rerank-no-seal-full
P=$RUNS/loo-seal-refit-policy
stamp() { date -u +%FT%TZ; }

echo "$(stamp) reranker"
[ -f $R/manifest.json ] || $PY -m training.reranker --catalogs metatool:all,bfcl:all --out $R
cp $R/manifest.json $X/reranker-manifest.json
echo "$(stamp) policy: the shipped folder, l = l_later = 0.05, g = 8.9212, no rerank yet"
rm -rf $P && cp -r autotool/default_policy $P
$PY -c "
import json, pathlib, sys
from safetensors.torch import load_file, save_file
import torch
p = pathlib.Path(sys.argv[1])
head = load_file(p / 'anchor_head.safetensors')
head['lexical'], head['lexical_later'] = torch.tensor(0.05), torch.tensor(0.05)
head['log_g'] = torch.tensor(8.9212).log()  # the g loo-seal-full's policy fitted on MetaTool's val
save_file(head, p / 'anchor_head.safetensors')
m = json.loads((p / 'manifest.json').read_text())
m.pop('rerank', None)
(p / 'manifest.json').write_text(json.dumps(m, indent=2) + '\n')" $P
$PY -m training.fit_rerank $P --embedder tools --reranker $R/reranker --bench apibank,toolalpaca \
    --out $X/fit-rerank --write
cp $P/manifest.json $X/policy-manifest.json
echo "$(stamp) judge"
$PY $J seal_tools:all:300 --policy $P --embedder tools --modes fast:norerank,fast --measures per-query \
    --out $X/metatool-on-seal_tools
echo "$(stamp) done"
