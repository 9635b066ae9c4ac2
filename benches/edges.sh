#!/usr/bin/env bash
# What an edge mode other than clamp costs: the main command on a 16 MP photo-like RGB 8-bit
# PNG, every mode once per round in rotating order (paired, alternating), RUNS rounds. For
# each mode: the median of the blur's own time (the blur passes plus extending and cropping,
# from the report's JSON) and of the whole run's wall time, and each mode's ratio to clamp as
# the median of the per-round ratios, which holds while a shared machine's speed drifts.
# usage: benches/edges.sh [RUNS] [SIGMAS]   (DEVICE=rust|cpu|gpu, W and H in the environment)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-7}
SIGMAS=${2:-5,20}
W=${W:-4896}
H=${H:-3264}
DEVICE=${DEVICE:-rust}
PY=/usr/bin/python3
$PY -c "import numpy, PIL" 2>/dev/null || { apt-get update -q && apt-get install -y -q python3-numpy python3-pil; }
cargo build --release -q
G=$PWD/target/release/gblur
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
$PY benches/make_test_image.py "$T/photo.png" "$W" "$H" rgb 3
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "image:   ${W}x${H} photo-like RGB 8-bit PNG -> BMP; --device $DEVICE; $RUNS rounds, medians"
MODES=(clamp reflect reflect101 wrap constant=0.5)
for sigma in ${SIGMAS//,/ }; do
  for round in $(seq 1 "$RUNS"); do
    n=${#MODES[@]}
    for i in $(seq 0 $((n - 1))); do
      mode=${MODES[$(( (i + round) % n ))]}
      "$G" "$T/photo.png" "$T/out.bmp" --sigma "$sigma" --edge "$mode" --device "$DEVICE" \
        --max-memory 4096 --json -q >"$T/r-$sigma-$round-$mode.json"
    done
  done
  $PY - "$T" "$sigma" "$RUNS" "${MODES[@]}" <<'PY'
import json, statistics, sys
t, sigma, runs, modes = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
def times(mode, r):
    d = json.load(open(f"{t}/r-{sigma}-{r}-{mode}.json"))
    blur = sum(p["ms"] for p in d["passes"]
               if p["stage"] == "blur" or p["name"] in ("extend edges", "crop edges"))
    return blur, d["total_ms"]
rounds = range(1, runs + 1)
base = {r: times("clamp", r) for r in rounds}
print(f"\nsigma {sigma}")
print(f"{'mode':<13} {'blur ms':>9} {'wall ms':>9} {'blur/clamp':>11} {'wall/clamp':>11}")
for m in modes:
    tt = {r: times(m, r) for r in rounds}
    med = lambda i: statistics.median(tt[r][i] for r in rounds)
    ratio = lambda i: statistics.median(tt[r][i] / base[r][i] for r in rounds)
    print(f"{m:<13} {med(0):>9.0f} {med(1):>9.0f} {ratio(0):>10.2f}x {ratio(1):>10.2f}x")
PY
done
