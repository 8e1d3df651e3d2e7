#!/bin/sh
# The anchor ablation of issue #7 in one run, sized for one GPU and ten minutes (a CPU runs it too, with
# small knobs): train two policies with the selection term on (the default policy ships with it off),
# then evaluate them beside the shipped policy, its fast mode, name generation and the retrieval baselines.
#
#   residual  e' = normalize(W h + a E(query) + b E(rationale)), W from zero, a/b learned
#   pure      e' = normalize(W h)
#   shipped   the default policy: head untrained (e' = E(query)); LM trained on the protocol
#
# Each policy: SFT on MetaTool's train split, then on Seal-Tools' (seed 0 splits; no test query is read).
# A training run that outlives its time guard is evaluated from its newest checkpoint. Each (benchmark,
# split) is its own eval run, so a run cut short keeps what finished. Results: $RESULTS/<bench>-<split>/
# (the committed ones of the 2026-11-29 lease are experiments/2026-11-29-gpu-ablation-*; README.md here).
#
#   sh experiments/2026-11-29-gpu-ablation/gpu_ablation.sh     # or RESULTS=/some/folder sh ...
set -u
cd "$(dirname "$0")/../.." || exit 1
PY=${PY:-.venv/bin/python}
RUNS=${RUNS:-runs/ablation}
RESULTS=${RESULTS:-experiments/2026-11-29-gpu-ablation/eval}
META_STEPS=${META_STEPS:-300}     # SFT steps x 8 on MetaTool train
SEAL_STEPS=${SEAL_STEPS:-100}     # then SFT steps x 8 on Seal-Tools train
TRAIN_S=${TRAIN_S:-100}           # time guard of each training run, seconds
META_LIMIT=${META_LIMIT:-400}     # queries sampled per MetaTool split
SEAL_LIMIT=${SEAL_LIMIT:-150}     # queries sampled per Seal-Tools split
BATCH=${BATCH:-64}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1

newest() {  # the finished policy of a run, else its newest checkpoint
    if [ -f "$1/policy-sft/manifest.json" ]; then echo "$1/policy-sft"; return; fi
    ls -d "$1"/checkpoints/sft-*/policy 2>/dev/null | tail -1
}

train() {  # ANCHOR
    meta=$RUNS/$1-metatool seal=$RUNS/$1-seal_tools
    timeout "$TRAIN_S" $PY -m training.phase1 --config training/configs/phase1.yaml --anchor "$1" \
        --stages '[sft]' --sft.steps "$META_STEPS" --eval.limit 0 --checkpoint_every 50 --out "$meta"
    init=$(newest "$meta")
    [ -n "$init" ] || { echo "no $1 policy from MetaTool"; return 1; }
    timeout "$TRAIN_S" $PY -m training.phase1 --config training/configs/phase1.yaml --anchor "$1" \
        --benchmark seal_tools --init "$init" --stages '[sft]' --sft.steps "$SEAL_STEPS" --eval.limit 0 \
        --checkpoint_every 25 --call_tokens 64 --out "$seal"
    echo "$1: $(newest "$seal")"
}

started=$(date +%s)
# One-time set-up first, so the time guards below are spent on training: the backbone's conversion from
# GGUF and the evaluation banks (both cached under $AUTOTOOL_HOME).
$PY -c "from autotool.backbone import load_backbone; load_backbone(None)"
$PY -c "from autotool.benchmarks import load_benchmark; from autotool.benchmarks import benchmark_bank
for name in ('metatool', 'seal_tools'): benchmark_bank(load_benchmark(name), 'default')"
echo "set-up: $(( $(date +%s) - started )) s"
train residual
train pure
echo "training: $(( $(date +%s) - started )) s"

residual=$(newest "$RUNS/residual-seal_tools") pure=$(newest "$RUNS/pure-seal_tools")
for run in "metatool unseen-test $META_LIMIT" "seal_tools unseen-test $SEAL_LIMIT" \
           "metatool seen-test $META_LIMIT" "seal_tools seen-test $SEAL_LIMIT"; do
    set -- $run
    policies=""
    [ -n "$residual" ] && policies="$policies --policy residual=$residual --policy residual-fast=$residual:fast"
    [ -n "$pure" ] && policies="$policies --policy pure=$pure"
    # shellcheck disable=SC2086
    $PY -m eval --bench "$1" --split "$2" --limit "$3" --batch-size "$BATCH" \
        --methods bm25,dense,hybrid,namegen,policy,policy-fast $policies --out "$RESULTS/$1-$2" \
        || echo "eval $1 $2 failed"
    echo "after $1 $2: $(( $(date +%s) - started )) s"
done
