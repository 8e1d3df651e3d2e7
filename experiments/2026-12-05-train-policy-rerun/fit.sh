#!/bin/sh
# After run.sh: the fits `make train-reranker` runs after training (the reranker's weight c, then reason mode's
# rationale weight b, on API-Bank and ToolAlpaca), on the rerun's policy in the clone, with the shipped reranker;
# then copies what compare.py reads, and the rerun's calibrations, into rerun/ here.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CLONE=/tmp/repro-policy
OUT="$HERE/rerun"
mkdir -p "$OUT"
export AUTOTOOL_HOME=${AUTOTOOL_HOME:-$(mktemp -d)} HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
cd "$CLONE"
./timed-python -m training.fit_rerank autotool/default_policy --bench apibank,toolalpaca --out /tmp/repro-policy-fit/rerank --write
./timed-python -m training.fit_rationale autotool/default_policy --bench apibank,toolalpaca --out /tmp/repro-policy-fit/rationale --write
cp /tmp/repro-policy-fit/rerank/scores.json "$OUT/rerank-scores.json"
cp /tmp/repro-policy-fit/rerank/results.md "$OUT/rerank-fit.md"
cp /tmp/repro-policy-fit/rationale/rationales.json "$OUT/rationales.json"
cp /tmp/repro-policy-fit/rationale/results.md "$OUT/rationale-fit.md"
cp autotool/default_policy/manifest.json "$OUT/policy-manifest.json"
for stage in 2026-11-29-calibrate 2026-11-30-calibrate-lexical 2026-11-30-calibrate-rank; do
    cp "experiments/$stage/results.md" "$OUT/$stage.md"
done
cd "$REPO"
.venv/bin/python experiments/2026-12-04-train-default-rerun/compare.py --rerun "$OUT" > "$HERE/results.md"
cat "$HERE/results.md"
