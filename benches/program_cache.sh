#!/usr/bin/env bash
# What the program cache saves: the main command on an OpenCL device with gblur's program cache
# empty (cold: every kernel compiled) and filled (warm: loaded from CL_PROGRAM_BINARIES), in
# pairs whose order alternates, RUNS pairs. Prints the median set-up (the report's `open device`
# and `kernels` passes) and wall time of each, and the median of the per-pair ratios cold/warm,
# which holds while a shared machine's speed drifts. The driver's own caches (PoCL's kcache,
# NVIDIA's ComputeCache) are left as they are; POCL_KERNEL_CACHE=0 turns PoCL's off, as on a
# first run after install.
# usage: benches/program_cache.sh [RUNS]   (DEVICE=cpu|gpu|N, W and H in the environment)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-9}
W=${W:-2048}
H=${H:-2048}
DEVICE=${DEVICE:-cpu}
PY=/usr/bin/python3
$PY -c "import numpy, PIL" 2>/dev/null || { apt-get update -q && apt-get install -y -q python3-numpy python3-pil; }
cargo build --release -q
G=$PWD/target/release/gblur
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
$PY benches/make_test_image.py "$T/photo.jpg" "$W" "$H" rgb 3
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(date -u +%F)"
echo "image:   ${W}x${H} photo-like RGB JPEG -> JPEG, sigma 5, --device $DEVICE; $RUNS pairs, medians"
# One run with the cache in $1: "setup_ms wall_ms kernels-pass-name".
run() {
  GBLUR_CACHE_DIR="$1" "$G" "$T/photo.jpg" "$T/out.jpg" --sigma 5 --device "$DEVICE" --json -q |
    $PY -c '
import json, sys
r = json.load(sys.stdin)
setup = [p for p in r["passes"] if p["stage"] == "setup"]
kernels = [p["name"] for p in setup if p["name"].startswith("kernels")]
print(sum(p["ms"] for p in setup), r["total_ms"], kernels[0].replace(" ", "_"))'
}
run "$T/warm" >/dev/null
: >"$T/rows"
for i in $(seq 1 "$RUNS"); do
  rm -rf "$T/cold"
  if (( i % 2 )); then
    c=$(run "$T/cold"); w=$(run "$T/warm")
  else
    w=$(run "$T/warm"); c=$(run "$T/cold")
  fi
  echo "$c $w" >>"$T/rows"
done
$PY - "$T/rows" <<'EOF'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
cold_setup = [float(r[0]) for r in rows]; cold_wall = [float(r[1]) for r in rows]
warm_setup = [float(r[3]) for r in rows]; warm_wall = [float(r[4]) for r in rows]
assert all(r[2] == "kernels_(compiled)" and r[5] == "kernels_(from_cache)" for r in rows), rows
m = st.median
print(f"{'':10}{'set-up ms':>12}{'wall ms':>12}")
print(f"{'cold':10}{m(cold_setup):12.1f}{m(cold_wall):12.1f}")
print(f"{'warm':10}{m(warm_setup):12.1f}{m(warm_wall):12.1f}")
print(f"set-up saved: {m([c - w for c, w in zip(cold_setup, warm_setup)]):.1f} ms (median of pairs); "
      f"wall cold/warm: {m([c / w for c, w in zip(cold_wall, warm_wall)]):.2f}x")
EOF
