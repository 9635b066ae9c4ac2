#!/usr/bin/env bash
# The main command on a noisy 16 MP JPEG (q90 4:2:0), sigma 5, down each path in turn: auto,
# the GPU and the Rust path, each with YCbCr planes and with --jpeg-path rgb. Rounds run the
# paths in the same order one after another (paired), and the medians of process wall are
# printed; each path's last report goes to OUT_DIR/table_<path>.txt. The first run, with an
# empty program cache, is timed on its own. CALIBRATE=1 runs `gblur calibrate` first (into the
# same scratch cache), so that auto weighs the GPU.
# Usage: benches/main_job_paths.sh GBLUR_BINARY OUT_DIR [ROUNDS=7]
# KEYS="auto gpu rust" picks the paths (default: all five). Needs python3 with numpy, Pillow
# and OpenCV (PYTHON=path picks another interpreter).
set -euo pipefail
bin=$1 out=$2 rounds=${3:-7}
here=$(dirname "$0")
py=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$py" "$here/make_test_image.py" "$work/in.png" 4096 4096 rgb
"$py" -c "import cv2, sys; cv2.imwrite(sys.argv[2], cv2.imread(sys.argv[1]), [cv2.IMWRITE_JPEG_QUALITY, 90])" \
    "$work/in.png" "$work/in.jpg"
declare -A args=([auto]="" [gpu]="--device gpu" [rust]="--device rust"
    [gpu_rgb]="--device gpu --jpeg-path rgb" [rust_rgb]="--device rust --jpeg-path rgb")
declare -A times
keys=${KEYS:-"auto gpu rust gpu_rgb rust_rgb"}
export GBLUR_CACHE_DIR=$work/cache
if [ -n "${CALIBRATE:-}" ]; then "$bin" calibrate --json >"$out/calibrate.json"; fi
ms() { echo $(( ($2 - $1) / 1000000 )); }
s=$(date +%s%N)
"$bin" "$work/in.jpg" "$work/o.jpg" --sigma 5 --json >/dev/null 2>"$out/first_auto.txt"
echo "first run (auto, program cache empty): $(ms "$s" "$(date +%s%N)") ms"
for _ in $(seq "$rounds"); do
    for k in $keys; do
        s=$(date +%s%N)
        # shellcheck disable=SC2086 # the arguments split on purpose
        "$bin" "$work/in.jpg" "$work/o_$k.jpg" --sigma 5 ${args[$k]} --json >/dev/null 2>"$out/table_$k.txt"
        times[$k]+=" $(ms "$s" "$(date +%s%N)")"
    done
done
for k in $keys; do
    median=$(echo ${times[$k]} | tr ' ' '\n' | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    printf '%-9s median %5s ms  (all:%s)\n' "$k" "$median" "${times[$k]}"
done
