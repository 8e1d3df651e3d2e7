#!/bin/sh
# Leave MetaTool out, reason mode (issue #23): a language model trained without MetaTool by the SFT stage of the
# shipped policy's recipe (experiments/2026-11-29-train-default/train.sh), with BFCL, the third training catalog, in
# MetaTool's place (GRPO and Phase II left out for time: README.md). It is set into the 2026-12-06-loo-metatool-1000
# policy (its embedder, reranker, c and head, so fast mode is that record's); b is fitted on API-Bank and ToolAlpaca
# by training.fit_rationale, as `make train-reranker` fits it; then fast and reason mode are judged on that record's
# 1,000 MetaTool requests, per request.
# Needs that record's models under $RUNS (embedder-no-metatool-dropout-0, loo-rerank-no-metatool-full,
# refit-policy as its run.sh left it). Run alone on the 2-core CPU: sh experiments/2026-12-07-loo-metatool-reason/run.sh
set -eu
cd "$(dirname "$0")/../.."
X=experiments/2026-12-07-loo-metatool-reason
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=2
E=$RUNS/embedder-no-metatool-dropout-0/adapter
FAST=$RUNS/refit-policy                 # the 2026-12-06-loo-metatool-1000 policy (fast mode reads no language model)
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
m['head'] = 'the 2026-12-06-loo-metatool-1000 policy head (l = l_later = 0.05, g = 10.0103, explain 0, c = 0.5); b refitted'
(p / 'manifest.json').write_text(json.dumps(m, indent=2) + '\n')" $P $FAST
$PY -m training.fit_rationale $P --embedder $E --bench apibank,toolalpaca --out $X/fit-rationale --write
cp $P/manifest.json $X/policy-manifest.json
echo "$(stamp) judge: 1,000 MetaTool requests, per request"
$PY experiments/2026-12-01-three-catalogs/judge.py metatool:all:1000 --policy $P --embedder $E --modes fast,reason \
    --measures per-query --out $X/judge-1000
echo "$(stamp) done: $(( $(date +%s) - start )) s"
