#!/bin/sh
# Rerun `make train-policy` (experiments/2026-11-29-train-default/train.sh) from a fresh clone, timing each
# command: the wrapper below runs the clone's venv python and logs "[timing] <args>: <s> s" after each call.
# Usage: sh experiments/2026-12-05-train-policy-rerun/run.sh [COMMIT]   (clone in /tmp/repro-policy, reuses this venv)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
COMMIT=${1:-HEAD}
CLONE=/tmp/repro-policy
rm -rf "$CLONE" && git clone -q "$REPO" "$CLONE" && git -C "$CLONE" checkout -q "$COMMIT"
cat > "$CLONE/timed-python" <<EOT
#!/bin/sh
start=\$(date +%s)
"$REPO/.venv/bin/python" "\$@"; rc=\$?
echo "[timing] \$*: \$(( \$(date +%s) - start )) s (rc \$rc)" >&2
exit \$rc
EOT
chmod +x "$CLONE/timed-python"
export AUTOTOOL_HOME=$(mktemp -d)
cd "$CLONE"
start=$(date +%s)
PY="$CLONE/timed-python" sh experiments/2026-11-29-train-default/train.sh
echo "train-policy: $(( $(date +%s) - start )) s wall time"
