#!/bin/sh
# Leave MetaTool out, the reranker on top of the refitted BM25 weight (issue #23): fast mode as the shipped recipe
# serves it, with nothing of MetaTool in any model: the embedder trained on Seal-Tools and BFCL
# (2026-12-04-name-word-dropout without dropout, as 2026-12-03-loo-metatool-full's), l = 0.05 (fitted on API-Bank
# and ToolAlpaca for that embedder: 2026-12-04-two-embedders, row m = 0), a reranker on Seal-Tools and BFCL
# (the command of 2026-12-03-loo-metatool-full) with c fitted on API-Bank and ToolAlpaca. Fast mode loads no
# language model, so the policy folder is the shipped one with its head's l and g replaced (g = 10.0103, which
# loo-metatool-full's policy fitted on Seal-Tools' val; a = 1 and W = 0 as there; reason mode, which would read
# the shipped language model, trained on MetaTool, is not judged). Judged per request on the same 300 MetaTool
# requests as before.
# Run from anywhere: sh experiments/2026-12-04-loo-metatool-rerank-refit/run.sh (about 1 h on 2 cores, alone;
# the embedder must be in $RUNS/embedder-no-metatool-dropout-0: sh experiments/2026-12-04-name-word-dropout/run.sh).
set -eu
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
X=experiments/2026-12-04-loo-metatool-rerank-refit
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
J=experiments/2026-12-01-three-catalogs/judge.py
E=$RUNS/embedder-no-metatool-dropout-0
R=$RUNS/loo-rerank-no-metatool-full
P=$RUNS/loo-metatool-refit-policy
stamp() { date -u +%FT%TZ; }

echo "$(stamp) reranker"
[ -f $R/manifest.json ] || $PY -m training.reranker --catalogs seal_tools:all,bfcl:all --out $R
cp $R/manifest.json $X/reranker-manifest.json
echo "$(stamp) policy: the shipped folder, l = l_later = 0.05, g = 10.0103, reading $E/adapter, no rerank yet"
rm -rf $P && cp -r autotool/default_policy $P
$PY -c "
import json, pathlib, sys
from safetensors.torch import load_file, save_file
import torch
p = pathlib.Path(sys.argv[1])
head = load_file(p / 'anchor_head.safetensors')
head['lexical'], head['lexical_later'] = torch.tensor(0.05), torch.tensor(0.05)
head['log_g'] = torch.tensor(10.0103).log()  # the g loo-metatool-full's policy fitted on Seal-Tools' val
save_file(head, p / 'anchor_head.safetensors')
m = json.loads((p / 'manifest.json').read_text())
m.pop('rerank', None)
m['also_reads'] = m.get('also_reads', []) + [str(pathlib.Path(sys.argv[2]).resolve())]
(p / 'manifest.json').write_text(json.dumps(m, indent=2) + '\n')" $P $E/adapter
$PY -m training.fit_rerank $P --embedder $E/adapter --reranker $R/reranker --bench apibank,toolalpaca \
    --out $X/fit-rerank --write
cp $P/manifest.json $X/policy-manifest.json
echo "$(stamp) judge"
$PY $J metatool:all:300 --policy $P --embedder $E/adapter --modes fast:norerank,fast --measures per-query \
    --out $X/seal_tools-on-metatool
echo "$(stamp) done"
