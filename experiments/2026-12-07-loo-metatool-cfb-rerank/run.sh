#!/bin/sh
# Leave MetaTool out (issue #23): 2026-12-07-loo-metatool-cfb-served's served path with one change, the reranker,
# trained with ComplexFuncBench's requests beside Seal-Tools' and BFCL's (`--catalogs
# seal_tools:all,bfcl:all,complexfuncbench:all`, the reranker command's other defaults). The embedder, l = l_later =
# 0.05, g = 10.0103 and explain 0 are that record's; c is fitted again on API-Bank and ToolAlpaca (refit.sh). Then
# reason mode: 2026-12-07-loo-metatool-cfb-reason's language model set into this policy, b fitted again on API-Bank
# and ToolAlpaca. Judged per request on the seed-0 1,000 MetaTool requests and on 1,000 fresh ones (fresh.py), where
# the policy before this change (cfb-reason's) is judged beside it.
# Needs under $RUNS: embedder-no-metatool-with-cfb (cfb-served), loo-mt-lm and loo-mt-reason-policy (cfb-reason).
# Run alone on the 2-core CPU: sh experiments/2026-12-07-loo-metatool-cfb-rerank/run.sh (about 100 min)
set -eu
cd "$(dirname "$0")/../.."
X=experiments/2026-12-07-loo-metatool-cfb-rerank
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=2
J=experiments/2026-12-01-three-catalogs/judge.py
E=$RUNS/embedder-no-metatool-with-cfb/adapter
R=$RUNS/loo-rerank-no-metatool-cfb      # this record's reranker
FAST=$RUNS/refit-policy                 # refit.sh's fast-mode policy folder
LM=$RUNS/loo-mt-lm                      # cfb-reason's language model (SFT on BFCL, then Seal-Tools)
BEFORE=$RUNS/loo-mt-reason-policy       # cfb-reason's judged policy: the reranker without ComplexFuncBench, c = 1, b = 0.2
AFTER=$RUNS/loo-mt-cfb-rerank-policy    # this record's judged policy
stamp() { date -u +%FT%TZ; }
start=$(date +%s)
for need in $E $LM/manifest.json $BEFORE/manifest.json; do
    [ -e $need ] || { echo "missing $need: run 2026-12-07-loo-metatool-cfb-served and -cfb-reason first" >&2; exit 1; }
done

echo "$(stamp) reranker, fast-mode policy, c, then the 1,000 requests per request (refit.sh)"
sh experiments/2026-12-04-loo-metatool-rerank-refit/refit.sh $X $E seal_tools:all,bfcl:all,complexfuncbench:all \
    $R 10.0103 metatool:all:1000 judge-1000
echo "$(stamp) fast mode: $(( $(date +%s) - start )) s"

echo "$(stamp) reason policy: cfb-reason's language model, this fast-mode policy's head, embedder, reranker and c"
rm -rf $AFTER && cp -r $LM $AFTER
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
m['head'] = 'the 2026-12-07-loo-metatool-cfb-rerank fast-mode policy head (l = l_later = 0.05, g = 10.0103, explain 0, c fitted); b refitted'
(p / 'manifest.json').write_text(json.dumps(m, indent=2) + '\n')" $AFTER $FAST
$PY -m training.fit_rationale $AFTER --embedder $E --bench apibank,toolalpaca --out $X/fit-rationale --write
cp $AFTER/manifest.json $X/policy-manifest.json
$PY $J metatool:all:1000 --policy $AFTER --embedder $E --modes reason --measures per-query --out $X/judge-1000-reason
echo "$(stamp) reason mode: $(( $(date +%s) - start )) s"

echo "$(stamp) 1,000 fresh MetaTool requests, per request: the policy before and after"
$PY $X/fresh.py --policy $BEFORE --embedder $E --modes fast,reason --measures per-query --out $X/fresh-before
$PY $X/fresh.py --policy $AFTER --embedder $E --modes fast,reason --measures per-query --out $X/fresh-after
echo "$(stamp) done: $(( $(date +%s) - start )) s"
