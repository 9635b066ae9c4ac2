#!/bin/bash
# The recipes of docs/CLUSTER.md other than Slurm's (benches/slurm.sh runs that one), run here
# as written:
#   - the Kubernetes Indexed Job: the container command of benches/kubernetes/blur-indexed-job.yaml,
#     once per index with JOB_COMPLETION_INDEX set, /data mapped to a temporary folder;
#   - GNU parallel: the line below, with --sshlogin : (this host) for the hosts.
# Each is checked with gblur batch-report (exit 0: every file once, none failed).
# Usage: benches/cluster-recipes.sh   (needs python3; GNU parallel for the second recipe)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$ROOT/target/release/gblur" ] || (cd "$ROOT" && cargo build --release --locked)
export PATH="$ROOT/target/release:$PATH"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
say() { echo "cluster-recipes.sh: $*" >&2; }

fresh_data() {
    rm -rf "$WORK/data" && mkdir -p "$WORK/data/in/a" "$WORK/data/in/b"
    for i in $(seq 0 39); do
        cp "$ROOT/tests/fixtures/rgba_halo_9x9.png" "$WORK/data/in/$([ $((i % 2)) = 0 ] && echo a || echo b)/img$i.png"
    done
}

# --- Kubernetes Indexed Job --------------------------------------------------------------
MANIFEST=$ROOT/benches/kubernetes/blur-indexed-job.yaml
COMPLETIONS=$(sed -n 's/^  completions: *\([0-9]*\)$/\1/p' "$MANIFEST")
COMMAND=$(sed -n 's/^ *command: *\(\[.*\]\)$/\1/p' "$MANIFEST")
mapfile -t ARGV < <(python3 -c 'import json, sys; print("\n".join(json.loads(sys.argv[1])))' "$COMMAND")
ARGV=("${ARGV[@]//\/data/$WORK/data}")
fresh_data
for ((i = 0; i < COMPLETIONS; i++)); do
    JOB_COMPLETION_INDEX=$i "${ARGV[@]}"
done
gblur batch-report "$WORK/data/summary"
say "Kubernetes: $COMPLETIONS indices of '${ARGV[*]}' (with /data here): batch-report exit 0"

# --- GNU parallel over ssh logins ----------------------------------------------------------
if ! command -v parallel >/dev/null; then
    say "GNU parallel is not installed: its recipe is not run"
    exit 0
fi
fresh_data
cd "$WORK"
HOSTS=:   # in docs/CLUSTER.md: node1,node2,node3 (each with gblur on its PATH and data/ shared)
seq 1 8 | parallel --will-cite --sshlogin "$HOSTS" gblur batch data/in data/out --sigma 4 --shard {}/8 --summary data/summary -q
gblur batch-report data/summary
say "GNU parallel: 8 shards over --sshlogin $HOSTS: batch-report exit 0"
