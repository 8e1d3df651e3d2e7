#!/bin/sh
# Leave Seal-Tools out, reason mode (issue #23), the other direction of 2026-12-07-loo-metatool-reason. A language
# model trained without Seal-Tools by the SFT stage of the shipped recipe with BFCL in Seal-Tools' place (60 x 8 steps
# on MetaTool, 30 x 8 on BFCL; b and g calibrated on their val splits), set into the fast-mode policy of
# 2026-12-05-loo-seal-per-step's per-request row, rebuilt by that record's commands (the `tools` embedder,
# fine-tuned on MetaTool only; a reranker on MetaTool and BFCL; l = l_later = 0.05, g = 8.9212, explain 0; c fitted
# on API-Bank and ToolAlpaca; judged per request on the same 300 Seal-Tools requests as a reproduction check).
# b is fitted on API-Bank and ToolAlpaca by training.fit_rationale, then fast and reason mode are judged per request
# on that record's 1,000 Seal-Tools requests, and reason mode again at b = 0.2 (the shipped policy's b).
# Run alone on the 2-core CPU: sh experiments/2026-12-07-loo-seal-reason/run.sh (about 75 min).
set -eu
cd "$(dirname "$0")/../.."
X=experiments/2026-12-07-loo-seal-reason
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=2
J=experiments/2026-12-01-three-catalogs/judge.py
FAST=$RUNS/refit-policy                 # refit.sh's policy folder
T=$RUNS/loo-seal-lm                     # the language model's "shipped" folder
P=$RUNS/loo-seal-reason-policy          # the judged policy
DATA="metatool train (seed 0, 60x8 SFT steps), then bfcl train (seed 0, 30x8 SFT steps); b and g fitted on val"
CMD="sh $X/run.sh"
stamp() { date -u +%FT%TZ; }
start=$(date +%s)

echo "$(stamp) SFT"
$PY -m training.phase1 --config training/configs/phase1-default.yaml --out $RUNS/loo-seal-sft-metatool
$PY -m training.phase1 --config training/configs/phase1-default.yaml --benchmark bfcl \
    --init $RUNS/loo-seal-sft-metatool/policy-sft --out $RUNS/loo-seal-sft-bfcl --sft.steps 30
$PY -m training.calibrate $RUNS/loo-seal-sft-bfcl/policy-sft --bench metatool,bfcl --limit 400 --no-lexical \
    --out $X/calibrate-sft --write
rm -rf $T
$PY -m training.ship $RUNS/loo-seal-sft-bfcl/policy-sft $T --command "$CMD" --data "$DATA"
echo "$(stamp) language model: $(( $(date +%s) - start )) s"
cp $T/manifest.json $X/lm-manifest.json

echo "$(stamp) the fast-mode policy, rebuilt by 2026-12-05-loo-seal-per-step's commands"
sh experiments/2026-12-04-loo-metatool-rerank-refit/refit.sh $X tools metatool:all,bfcl:all \
    $RUNS/loo-rerank-no-seal-full 8.9212 seal_tools:all:300 judge-300

echo "$(stamp) the judged policy: this language model, the fast-mode policy's head, reranker and c"
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
m['head'] = 'the 2026-12-05-loo-seal-per-step policy head (l = l_later = 0.05, g = 8.9212, explain 0, c fitted); b refitted'
(p / 'manifest.json').write_text(json.dumps(m, indent=2) + '\n')" $P $FAST
$PY -m training.fit_rationale $P --embedder tools --bench apibank,toolalpaca --out $X/fit-rationale --write
cp $P/manifest.json $X/policy-manifest.json
echo "$(stamp) judge: 1,000 Seal-Tools requests, per request"
$PY $J seal_tools:all:1000 --policy $P --embedder tools --modes fast,reason --measures per-query --out $X/judge-1000
echo "$(stamp) reason mode at b = 0.2"
rm -rf $P-b02 && cp -r $P $P-b02
$PY -c "
import sys
import torch
from safetensors.torch import load_file, save_file
head = load_file(sys.argv[1])
head['b'] = torch.tensor(0.2)
save_file(head, sys.argv[1])" $P-b02/anchor_head.safetensors
$PY $J seal_tools:all:1000 --policy $P-b02 --embedder tools --modes reason --measures per-query --out $X/judge-1000-b02
echo "$(stamp) done: $(( $(date +%s) - start )) s"
