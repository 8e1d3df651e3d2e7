# Run from the repository root: sh experiments/2026-12-03-seal_tools-unseen-shipped/eval.sh (about 15 min on 2 cores, alone)
# The shipped policy as served today: the tools embedder and the reranker (since 2026-12-02), the same 40 requests
X=experiments
python -m eval --bench seal_tools --embedder tools --methods bm25,dense,hybrid \
  --policy reason=autotool/default_policy:reason --policy fast=autotool/default_policy:fast \
  --split unseen-test --limit 40 \
  --exclude-run $X/2026-11-30-seal_tools-default-unseen --exclude-run $X/2026-11-30-seal_tools-default-unseen-disjoint \
  --exclude-run $X/2026-11-30-seal_tools-default-unseen-fast --exclude-run $X/2026-11-30-seal_tools-default-unseen-disjoint-fast \
  --exclude-run $X/2026-11-29-gpu-ablation-seal_tools-unseen-test --exclude-run $X/2026-11-29-namegen-seal_tools-unseen-test \
  --exclude-run $X/2026-11-29-seal_tools-default --exclude-run $X/2026-11-30-phase1-stages-seal_tools \
  --exclude-run $X/2026-11-30-phase1-stages-seal_tools-unseen \
  --out experiments/2026-12-03-seal_tools-unseen-shipped
