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
# Run from anywhere: sh experiments/2026-12-04-loo-metatool-rerank-refit/run.sh (about 1 h on 2 cores, alone, most of it
# the reranker; the steps are in ../2026-12-04-loo-metatool-rerank-refit/refit.sh;
# the embedder must be in $RUNS/embedder-no-metatool-dropout-0: sh experiments/2026-12-04-name-word-dropout/run.sh).
set -eu
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-runs}
exec sh experiments/2026-12-04-loo-metatool-rerank-refit/refit.sh experiments/2026-12-04-loo-metatool-rerank-refit \
    $RUNS/embedder-no-metatool-dropout-0/adapter seal_tools:all,bfcl:all $RUNS/loo-rerank-no-metatool-full 10.0103 \
    metatool:all:300 seal_tools-on-metatool
