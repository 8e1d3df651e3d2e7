# Rerun the embedder and reranker steps of `make train-default` from a fresh clone (commit 6a1a96e), with a
# fresh $AUTOTOOL_HOME, then compare with what ships (compare.py). About 40 min on 2 cores.
set -ex
cd "$(dirname "$0")"
rm -rf /tmp/repro /tmp/repro-home
git clone -q "$(git rev-parse --show-toplevel)" /tmp/repro
cd /tmp/repro && git checkout -q 6a1a96e
export AUTOTOOL_HOME=/tmp/repro-home OMP_NUM_THREADS=2
make setup
date
make train-embedder
date
make train-reranker
date
