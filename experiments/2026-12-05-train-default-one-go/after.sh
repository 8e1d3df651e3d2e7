#!/bin/sh
# After run.sh (log in /tmp/train-default.log): copy what the run wrote into one-go/ here, compare its policy
# with the 2026-12-05 policy rerun's tensor for tensor (same_policy.py), train the embedder a second time with
# the same command to see whether it repeats, and compare the run's models with the shipped ones on the foreign
# validation catalogs (the 2026-12-04 rerun's compare.py). Writes results.md.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CLONE=/tmp/repro-default
OUT="$HERE/one-go"
mkdir -p "$OUT"
grep -a '^\[timing\]\|wall time\|^shipped\|^kept\|^commit\|^finished' /tmp/train-default.log > "$OUT/timings.txt"
cp "$CLONE/experiments/2026-12-02-rerank-served/fit/scores.json" "$OUT/rerank-scores.json"
cp "$CLONE/experiments/2026-12-02-rerank-served/fit/results.md" "$OUT/rerank-fit.md"
cp "$CLONE/experiments/2026-12-03-rationale-weight-foreign/fit/rationales.json" "$OUT/rationales.json"
cp "$CLONE/experiments/2026-12-03-rationale-weight-foreign/fit/results.md" "$OUT/rationale-fit.md"
cp "$CLONE/autotool/default_policy/manifest.json" "$OUT/policy-manifest.json"
cp "$CLONE/toolbank/embedders/all-MiniLM-L6-v2-tools/manifest.json" "$OUT/embedder-manifest.json"
cp "$CLONE/autotool/rerankers/all-MiniLM-L6-v2-rerank/manifest.json" "$OUT/reranker-manifest.json"
for stage in 2026-11-29-calibrate 2026-11-30-calibrate-lexical 2026-11-30-calibrate-rank; do
    cp "$CLONE/experiments/$stage/results.md" "$OUT/$stage.md"
done
git -C "$CLONE" status --porcelain --untracked-files=no > "$OUT/tracked-files-changed.txt"
export AUTOTOOL_HOME=${AUTOTOOL_HOME:-$(mktemp -d)} HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
cd "$CLONE"
./timed-python -m training.embedder --out /tmp/repro-default-embedder-again --catalogs metatool:all --per-catalog 2500 \
    2>&1 | grep -a '^\[timing\]' >> "$OUT/timings.txt"
cd "$REPO"
{
    echo "## The policy against the 2026-12-05 policy rerun's (/tmp/repro-policy, commit 814369b)"
    echo
    .venv/bin/python "$HERE/same_policy.py" "$CLONE" /tmp/repro-policy
    echo
    echo "## The embedder trained twice by the same command"
    echo
    .venv/bin/python -c "
import sys
sys.path.insert(0, '$HERE')
from pathlib import Path
from same_policy import compare
print(compare(Path('$CLONE/runs/embedder-metatool-all/adapter/adapter_model.safetensors'),
              Path('/tmp/repro-default-embedder-again/adapter/adapter_model.safetensors')))"
    echo
    echo "## The run's models against the shipped ones (experiments/2026-12-04-train-default-rerun/compare.py)"
    echo
    .venv/bin/python experiments/2026-12-04-train-default-rerun/compare.py --rerun "$OUT" --rerun-root "$CLONE"
} > "$HERE/results.md"
cat "$HERE/results.md"
