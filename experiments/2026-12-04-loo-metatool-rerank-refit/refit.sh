#!/bin/sh
# One leave-one-out direction, the reranker on top of the BM25 weight fitted on API-Bank and ToolAlpaca; called by
# this record's run.sh (without MetaTool) and by ../2026-12-04-loo-seal-rerank-refit/run.sh (without Seal-Tools).
#   sh refit.sh OUT EMBEDDER RERANKER_CATALOGS RERANKER_FOLDER G JUDGED JUDGED_OUT
# OUT: the record folder; EMBEDDER: `tools` or an embedder folder; RERANKER_CATALOGS: training.reranker's
# --catalogs (it is trained only when RERANKER_FOLDER has no manifest); G: the leave-one-out policy's g;
# JUDGED: the catalog spec judged; JUDGED_OUT: the judge's folder under OUT.
# The policy folder ($RUNS/refit-policy) is the shipped one with l = $L (default 0.05, fitted on API-Bank and
# ToolAlpaca in 2026-12-04-lexical-weight-loo), l_later = $L_LATER (default 0.05, as
# this record ran), explain = $ALPHA (the share of the called tools' directions taken out of a later step's anchor;
# default 0, as every record before 2026-12-06-dense-explain-away ran), g = G, no reranker, reading EMBEDDER; fast
# mode loads no language model. c is fitted on API-Bank and ToolAlpaca, then JUDGED is judged per request with
# and without the reranker.
set -eu
cd "$(dirname "$0")/../.."
X=$1 E=$2 CATALOGS=$3 R=$4 G=$5 JUDGED=$6 JUDGED_OUT=$7
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
L=${L:-0.05}
L_LATER=${L_LATER:-0.05}
ALPHA=${ALPHA:-0}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
J=experiments/2026-12-01-three-catalogs/judge.py
P=$RUNS/refit-policy
stamp() { date -u +%FT%TZ; }

echo "$(stamp) reranker"
[ -f $R/manifest.json ] || $PY -m training.reranker --catalogs $CATALOGS --out $R
cp $R/manifest.json $X/reranker-manifest.json
echo "$(stamp) policy: the shipped folder, l = $L, l_later = $L_LATER, explain = $ALPHA, g = $G, reading $E, no rerank yet"
rm -rf $P && cp -r autotool/default_policy $P
$PY -c "
import json, pathlib, sys
from safetensors.torch import load_file, save_file
import torch
p, embedder, g, later = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
lexical = float(sys.argv[6])
head = load_file(p / 'anchor_head.safetensors')
head['lexical'], head['lexical_later'] = torch.tensor(lexical), torch.tensor(later)
head['explain'] = torch.tensor(float(sys.argv[5]))
head['log_g'] = torch.tensor(g).log()
save_file(head, p / 'anchor_head.safetensors')
m = json.loads((p / 'manifest.json').read_text())
m.pop('rerank', None)
m['format_version'] = 3  # the head holds explain
if embedder.is_dir():  # the shipped policy already reads the tools embedder
    m['also_reads'] = m.get('also_reads', []) + [str(embedder.resolve())]
(p / 'manifest.json').write_text(json.dumps(m, indent=2) + '\n')" $P $E $G $L_LATER $ALPHA $L
$PY -m training.fit_rerank $P --embedder $E --reranker $R/reranker --bench apibank,toolalpaca \
    --out $X/fit-rerank --write
cp $P/manifest.json $X/policy-manifest.json
echo "$(stamp) judge"
$PY $J $JUDGED --policy $P --embedder $E --modes fast:norerank,fast --measures per-query --out $X/$JUDGED_OUT
echo "$(stamp) done"
