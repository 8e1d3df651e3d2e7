#!/bin/sh
# Run `make train-default` (the embedder, the policy, the reranker and its fits) in one go from a fresh clone,
# timing each python command: the wrapper below runs this checkout's venv python and logs
# "[timing] <args>: <s> s" after each call. The clone's .venv is a link to this checkout's (set up already),
# and $AUTOTOOL_HOME is a fresh folder, so every cache (merged adapters, banks) is rebuilt.
# Usage: sh experiments/2026-12-05-train-default-one-go/run.sh [COMMIT]   (clone in /tmp/repro-default)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
COMMIT=${1:-HEAD}
CLONE=/tmp/repro-default
rm -rf "$CLONE" && git clone -q "$REPO" "$CLONE" && git -C "$CLONE" checkout -q "$COMMIT"
ln -s "$REPO/.venv" "$CLONE/.venv"
touch "$REPO/.venv/.installed"   # newer than the clone's requirements.txt, so `setup` installs nothing
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
echo "commit $(git rev-parse HEAD), AUTOTOOL_HOME $AUTOTOOL_HOME, started $(date -u +%FT%TZ)"
make PY="$CLONE/timed-python" train-default
echo "finished $(date -u +%FT%TZ)"
