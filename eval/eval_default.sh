#!/bin/sh
# The shipped default policy (method `policy`, reason mode; `policy-fast`, no rationale) against the
# retrieval baselines and name generation, on seen-test and unseen-test of both vendored benchmarks, the
# whole catalog in the bank, paired bootstrap intervals. LIMIT queries a split (seeded sample).
set -eu
PY=${PY:-.venv/bin/python}
LIMIT=${LIMIT:-100}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
for bench in metatool seal_tools; do
    $PY -m eval --bench $bench --methods bm25,dense,hybrid,namegen,policy,policy-fast \
        --split seen-test,unseen-test --limit $LIMIT --out eval/results/$bench-default
done
