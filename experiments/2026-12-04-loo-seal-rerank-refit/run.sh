#!/bin/sh
# Leave Seal-Tools out, the reranker on top of the refitted BM25 weight (issue #23), the other direction of
# 2026-12-04-loo-metatool-rerank-refit: fast mode as the shipped recipe serves it, with nothing of Seal-Tools in
# any model: the `tools` embedder (fine-tuned on MetaTool only), l = 0.05 (fitted on API-Bank and ToolAlpaca for
# that embedder: 2026-12-04-lexical-weight-loo), a reranker on MetaTool and BFCL (the command of
# 2026-12-03-loo-seal-full) with c fitted on API-Bank and ToolAlpaca. Fast mode loads no language model, so the
# policy folder is the shipped one with its head's l and g replaced (g = 8.9212, which loo-seal-full's policy
# fitted on MetaTool's val; a = 1 and W = 0 as there; reason mode is not judged: in loo-seal-full b was fitted
# to 0 and reason chose as fast did). Judged per request on the same 300 Seal-Tools requests as before.
# Run from anywhere: sh experiments/2026-12-04-loo-seal-rerank-refit/run.sh (about 1 h on 2 cores, alone, most of it
# the reranker; the steps are in ../2026-12-04-loo-metatool-rerank-refit/refit.sh).
set -eu
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-runs}
exec sh experiments/2026-12-04-loo-metatool-rerank-refit/refit.sh experiments/2026-12-04-loo-seal-rerank-refit \
    tools metatool:all,bfcl:all $RUNS/loo-rerank-no-seal-full 8.9212 seal_tools:all:300 metatool-on-seal_tools
