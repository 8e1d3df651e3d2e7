#!/bin/sh
# Leave MetaTool out, reason mode on the embedder with ComplexFuncBench (issue #23): 2026-12-07-loo-metatool-reason's
# run.sh with one change, the fast-mode policy it builds on: 2026-12-07-loo-metatool-cfb-served's (its embedder
# trained on Seal-Tools, BFCL and ComplexFuncBench, its reranker, c = 1 and head). The language model is trained again
# by that record's command (SFT on BFCL's, then Seal-Tools' train split; nothing of MetaTool); b is fitted on API-Bank
# and ToolAlpaca; fast and reason mode are judged on the same 1,000 MetaTool requests, per request.
# Needs 2026-12-07-loo-metatool-cfb-served's models under $RUNS (embedder-no-metatool-with-cfb, refit-policy as its
# run.sh left it). Run alone on the 2-core CPU: sh experiments/2026-12-07-loo-metatool-cfb-reason/run.sh (about 50 min)
set -eu
cd "$(dirname "$0")/../.."
X=experiments/2026-12-07-loo-metatool-cfb-reason
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=2
E=$RUNS/embedder-no-metatool-with-cfb/adapter
FAST=$RUNS/refit-policy                 # the 2026-12-07-loo-metatool-cfb-served policy (fast mode reads no language model)
T=$RUNS/loo-mt-lm                       # the language model's "shipped" folder (train.sh's autotool/default_policy)
P=$RUNS/loo-mt-reason-policy            # the judged policy
DATA="bfcl train (seed 0, 60x8 SFT steps), then seal_tools train (seed 0, 30x8 SFT steps); b and g fitted on val"
CMD="sh $X/run.sh"
stamp() { date -u +%FT%TZ; }
start=$(date +%s)

echo "$(stamp) SFT"
$PY -m training.phase1 --config training/configs/phase1-default.yaml --benchmark bfcl --out $RUNS/loo-mt-sft-bfcl
$PY -m training.phase1 --config training/configs/phase1-default.yaml --benchmark seal_tools \
    --init $RUNS/loo-mt-sft-bfcl/policy-sft --out $RUNS/loo-mt-sft-seal_tools --sft.steps 30
$PY -m training.calibrate $RUNS/loo-mt-sft-seal_tools/policy-sft --bench bfcl,seal_tools --limit 400 --no-lexical \
    --out $X/calibrate-sft --write
rm -rf $T
$PY -m training.ship $RUNS/loo-mt-sft-seal_tools/policy-sft $T --command "$CMD" --data "$DATA"
echo "$(stamp) language model: $(( $(date +%s) - start )) s"
cp $T/manifest.json $X/lm-manifest.json

echo "$(stamp) the judged policy: this language model, the fast-mode policy's head, embedder, reranker and c"
rm -rf $P && cp -r $T $P
$PY -c "
import json, pathlib, shutil, sys
from safetensors.torch import load_file
p, fast = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
head, trained = load_file(fast / 'anchor_head.safetensors'), load_file(p / 'anchor_head.safetensors')
assert float(head['W.weight'].abs().sum()) == 0 and float(trained['W.weight'].abs().sum()) == 0, 'W is not zero'
shutil.copy(fast / 'anchor_head.safetensors', p / 'anchor_head.safetensors')  # b is refitted below
m, f = json.loads((p / 'manifest.json').read_text()), json.loads((fast / 'manifest.json').read_text())
for key in ('format_version', 'embedder', 'also_reads', 'rerank'):
    m[key] = f[key]
m['head'] = 'the 2026-12-07-loo-metatool-cfb-served policy head (l = l_later = 0.05, g = 10.0103, explain 0, c = 1); b refitted'
(p / 'manifest.json').write_text(json.dumps(m, indent=2) + '\n')" $P $FAST
$PY -m training.fit_rationale $P --embedder $E --bench apibank,toolalpaca --out $X/fit-rationale --write
cp $P/manifest.json $X/policy-manifest.json
echo "$(stamp) judge: 1,000 MetaTool requests, per request"
$PY experiments/2026-12-01-three-catalogs/judge.py metatool:all:1000 --policy $P --embedder $E --modes fast,reason \
    --measures per-query --out $X/judge-1000
echo "$(stamp) done: $(( $(date +%s) - start )) s"
