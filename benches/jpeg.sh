#!/usr/bin/env bash
# JPEG -> JPEG end to end and the JPEG codecs alone: gblur beside libvips and OpenCV on the
# same files and cores, in one run.
#   end to end: `gblur in.jpg out.jpg --sigma 5` (YCbCr planes; and `--jpeg-path rgb`) vs
#              `vips gaussblur in.jpg out.jpg 5` vs a
#              python3 OpenCV script (imread, GaussianBlur sigma 5, imwrite at quality 90), each
#              a whole process, on a noisy photo-like 16 MP JPEG (q90 4:2:0), a smooth one and
#              a 4:4:4 one; RUNS rounds of every command once in a rotating order; each ratio
#              is the median of the per-round ratios.
#   codecs alone: decode + encode at quality 90 in one process, no blur: gblur's codecs
#              (examples/codec_ceiling: YCbCr planes, and through RGB) vs OpenCV's imread +
#              imwrite (libjpeg-turbo), timed
#              inside python so its start-up is not counted; alternating rounds, medians.
# usage: benches/jpeg.sh [RUNS]     (W and H in the environment change the 4896x3264 size)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-7}
W=${W:-4896}
H=${H:-3264}
PY=/usr/bin/python3

missing=()
command -v vips >/dev/null || missing+=(libvips-tools)
$PY -c 'import cv2, numpy, PIL' 2>/dev/null || missing+=(python3-opencv python3-numpy python3-pil)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -q && apt-get install -y -q "${missing[@]}"
fi
cargo build --release -q -p gblur --features unstable-internals --example codec_ceiling
cargo build --release -q
G=$PWD/target/release/gblur
C=$PWD/target/release/examples/codec_ceiling
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
$PY benches/make_test_image.py "$T/photo.png" "$W" "$H" rgb 3
$PY - "$T" <<'PY'
import sys
from PIL import Image, ImageFilter
t = sys.argv[1]
im = Image.open(f"{t}/photo.png")
im.save(f"{t}/noisy420.jpg", quality=90, subsampling=2)
im.save(f"{t}/noisy444.jpg", quality=90, subsampling=0)
im.filter(ImageFilter.GaussianBlur(6)).save(f"{t}/smooth420.jpg", quality=90, subsampling=2)
PY
cat >"$T/cv_blur.py" <<'PY'
import sys, cv2
img = cv2.imread(sys.argv[1])
cv2.imwrite(sys.argv[2], cv2.GaussianBlur(img, (0, 0), 5), [cv2.IMWRITE_JPEG_QUALITY, 90])
PY
cat >"$T/cv_codecs.py" <<'PY'
import sys, time, statistics, cv2
src, runs = sys.argv[1], int(sys.argv[2])
times = []
for _ in range(runs):
    t = time.perf_counter()
    ok, buf = cv2.imencode(".jpg", cv2.imread(src), [cv2.IMWRITE_JPEG_QUALITY, 90])
    times.append(time.perf_counter() - t)
print(f"{statistics.median(times) * 1e3:.1f}")
PY
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "images:  ${W}x${H} photo-like; $RUNS rounds, medians; $(vips --version), OpenCV $($PY -c 'import cv2; print(cv2.__version__)')"

for img in noisy420 smooth420 noisy444; do
  $PY - "$T" "$img" "$RUNS" "$G" <<'PY'
import os, statistics, subprocess, sys, time
t, img, runs, g = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
src = f"{t}/{img}.jpg"
cmds = [
    ("gblur (defaults: Q 90, input's layout, planes)", f"{t}/g90.jpg", [g, src, f"{t}/g90.jpg", "--sigma", "5", "-q"]),
    ("gblur --quality 75 (input's layout)", f"{t}/g75.jpg", [g, src, f"{t}/g75.jpg", "--sigma", "5", "-q", "--quality", "75"]),
    ("vips gaussblur (defaults: Q 75, 4:2:0)", f"{t}/v75.jpg", ["vips", "gaussblur", src, f"{t}/v75.jpg", "5"]),
    ("vips gaussblur out.jpg[Q=90]", f"{t}/v90.jpg", ["vips", "gaussblur", src, f"{t}/v90.jpg[Q=90]", "5"]),
    ("python3 OpenCV imread/GaussianBlur/imwrite Q 90", f"{t}/cv.jpg", ["/usr/bin/python3", f"{t}/cv_blur.py", src, f"{t}/cv.jpg"]),
    ("gblur --jpeg-path rgb (Q 90, input's layout)", f"{t}/grgb.jpg", [g, src, f"{t}/grgb.jpg", "--sigma", "5", "-q", "--jpeg-path", "rgb"]),
]
times = [[0.0] * len(cmds) for _ in range(runs)]
for r in range(runs):
    for k in range(len(cmds)):
        i = (k + r) % len(cmds)
        s = time.perf_counter()
        subprocess.run(cmds[i][2], check=True, stdout=subprocess.DEVNULL)
        times[r][i] = time.perf_counter() - s
print(f"\n== {img}.jpg ({os.path.getsize(src) / 1e6:.1f} MB) -> JPEG, sigma 5: median wall s, output MB ==")
for i, (label, out, _) in enumerate(cmds):
    print(f"  {label:<50} {statistics.median(x[i] for x in times):6.3f} s {os.path.getsize(out) / 1e6:6.2f} MB")
for a, b, text in [(0, 2, "gblur defaults / vips defaults"), (1, 2, "gblur Q 75 / vips defaults"),
                   (0, 3, "gblur / vips, both Q 90"), (0, 4, "gblur / OpenCV, both Q 90"),
                   (0, 5, "gblur planes / gblur through RGB")]:
    print(f"  -> {statistics.median(x[a] / x[b] for x in times):.2f}x ({text}; median of per-round ratios)")
PY
done

echo
echo "== codecs alone: decode + encode Q 90 in one process, no blur (median ms per image) =="
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
for img in noisy420 smooth420 noisy444; do
  mkdir -p "$T/one_$img" && cp "$T/$img.jpg" "$T/one_$img/"
  # One file: its decode and encode times are the wall time of each (encode on every core).
  ceiling() {
    "$C" "$T/one_$img" 5 "$@" | sed -E 's/.*decode ([0-9.]+) ms, encode ([0-9.]+) ms.*/\1 \2/' |
      awk '{print $1 + $2}' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
  }
  ours=() rgb=() theirs=() ratios=() rgb_ratios=()
  for r in $(seq 3); do
    o=$(ceiling)
    c=$($PY "$T/cv_codecs.py" "$T/$img.jpg" 5)
    g=$(ceiling rgb)
    ours+=("$o") rgb+=("$g") theirs+=("$c")
    ratios+=("$(ratio "$o" "$c")") rgb_ratios+=("$(ratio "$g" "$c")")
  done
  echo "  $img: gblur planes ${ours[*]} ms, through RGB ${rgb[*]} ms, OpenCV ${theirs[*]} ms"
  echo "    gblur planes / OpenCV ${ratios[*]}; through RGB / OpenCV ${rgb_ratios[*]}"
done
