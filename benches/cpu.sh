#!/usr/bin/env bash
# gblur without a GPU against the tools a user would script instead, on the same cores and the
# same files, in one run (issue #7):
#   in memory: `gblur bench cpu` (banded Rust blur) vs OpenCV's GaussianBlur, 8-bit RGB and one
#              f32 channel, sigma 5 and 20;
#   end to end: `gblur in out --sigma 5` vs `vips gaussblur`, JPEG -> JPEG and PNG -> PNG, wall
#              time (median of RUNS) and peak RSS.
# Installs the peers from Debian if missing; writes its test images to a temporary folder.
# usage: benches/cpu.sh [RUNS]     (W and H in the environment change the 4896x3264 size)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
W=${W:-4896}
H=${H:-3264}
PY=/usr/bin/python3

missing=()
command -v vips >/dev/null || missing+=(libvips-tools)
[ -x /usr/bin/time ] || missing+=(time)
$PY -c 'import cv2, numpy, PIL' 2>/dev/null || missing+=(python3-opencv python3-numpy python3-pil)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -q && apt-get install -y -q "${missing[@]}"
fi
cargo build --release -q
G=$PWD/target/release/gblur
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
$PY benches/make_test_image.py "$T/photo.jpg" "$W" "$H" rgb 3
$PY benches/make_test_image.py "$T/photo.png" "$W" "$H" rgb 3
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "image:   ${W}x${H} ($(( W * H / 1000000 )) MP) photo-like, RGB 8-bit; $RUNS timed runs, medians"

echo
echo "== in memory (MP/s) =="
"$G" bench cpu --sizes "${W}x${H}" --sigma 5,20 --runs "$RUNS" --json -q --device rust >"$T/gblur.json"
$PY benches/opencv_blur.py "$W" "$H" "$RUNS" 5 20 >"$T/opencv.jsonl"
$PY - "$T/gblur.json" "$T/opencv.jsonl" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
o = [json.loads(l) for l in open(sys.argv[2])]
print(f"{'layout':<15} {'sigma':>5} {'gblur':>8} {'OpenCV':>8} {'gblur/OpenCV':>13}")
for r in o:
    name = {"RGB 8-bit": "rust banded, RGB 8-bit", "1 channel f32": "rust banded, 1 channel f32"}[r["layout"]]
    mine = next(x for x in g if x["name"] == name and x["sigma"] == r["sigma"])
    print(f"{r['layout']:<15} {r['sigma']:>5.0f} {mine['mpps']:>8.0f} {r['mpps']:>8.0f} {mine['mpps'] / r['mpps']:>12.2f}x")
print(f"gblur: {g[0]['device']}; OpenCV: {o[0]['tool']}")
PY

# Median wall seconds and the largest peak RSS (MiB) of RUNS runs of a command.
wall() {
  local times=() rss=0 line
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -o "$T/time" -f '%e %M' "$@" >/dev/null 2>&1
    line=$(tail -1 "$T/time")
    times+=("${line% *}")
    [ "${line#* }" -gt "$rss" ] && rss=${line#* }
  done
  printf '%s %s\n' "$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')" "$((rss / 1024))"
}

row() { # label, then the command
  local label=$1; shift
  read -r s mib < <(wall "$@")
  printf '%-58s %7.2f s %6s MiB\n' "$label" "$s" "$mib"
  echo "$s" >"$T/last"
}

ratio() { $PY -c "import sys; print(f'  -> {float(sys.argv[2]) / float(sys.argv[1]):.2f}x ({sys.argv[3]})')" "$@"; }

echo
echo "== end to end, JPEG -> JPEG, sigma 5 (decoded image: $(( W * H * 3 / 1048576 )) MiB) =="
row "gblur (defaults: quality 90, 4:4:4)" "$G" "$T/photo.jpg" "$T/g.jpg" --sigma 5 -q; g90=$(cat "$T/last")
row "gblur --quality 75 (4:2:0)" "$G" "$T/photo.jpg" "$T/g.jpg" --sigma 5 -q --quality 75; g75=$(cat "$T/last")
row "vips gaussblur (defaults: Q 75, 4:2:0, integer taps to 1.79 sigma)" vips gaussblur "$T/photo.jpg" "$T/v.jpg" 5; v75=$(cat "$T/last")
row "vips gaussblur out.jpg[Q=90]" vips gaussblur "$T/photo.jpg" "$T/v.jpg[Q=90]" 5; v90=$(cat "$T/last")
row "vips --precision float --min-ampl 0.001 (accurate), Q 90" vips gaussblur "$T/photo.jpg" "$T/v.jpg[Q=90]" 5 --precision float --min-ampl 0.001; va=$(cat "$T/last")
ratio "$g75" "$v75" "vips default / gblur, both Q 75"
ratio "$g90" "$v90" "vips / gblur, both Q 90"
ratio "$g90" "$v75" "vips defaults / gblur defaults"
ratio "$g90" "$va" "vips accurate / gblur, Q 90"

echo
echo "== end to end, PNG -> PNG, sigma 5 =="
size() { printf '%*s output %.1f MB\n' 58 '' "$($PY -c "import os,sys; print(os.path.getsize(sys.argv[1]) / 1e6)" "$1")"; }
row "gblur --png-compression fast (fdeflate, adaptive filter)" "$G" "$T/photo.png" "$T/g.png" --sigma 5 -q --png-compression fast; gf=$(cat "$T/last"); size "$T/g.png"
row "vips out.png[compression=1] (no filter)" vips gaussblur "$T/photo.png" "$T/v.png[compression=1]" 5; vf=$(cat "$T/last"); size "$T/v.png"
row "gblur (defaults: zlib level 6, adaptive filter)" "$G" "$T/photo.png" "$T/g.png" --sigma 5 -q; gd=$(cat "$T/last"); size "$T/g.png"
row "vips out.png[filter=all] (level 6, libpng adaptive filter)" vips gaussblur "$T/photo.png" "$T/v.png[filter=all]" 5; va=$(cat "$T/last"); size "$T/v.png"
row "vips (defaults: level 6, no filter)" vips gaussblur "$T/photo.png" "$T/v.png" 5; vd=$(cat "$T/last"); size "$T/v.png"
ratio "$gf" "$vf" "vips / gblur, fastest settings"
ratio "$gd" "$va" "vips / gblur, level 6 with adaptive filtering on both"
ratio "$gd" "$vd" "vips defaults / gblur defaults (vips writes larger files)"
