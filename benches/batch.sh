#!/usr/bin/env bash
# gblur batch against the peers a user would script instead, on the same files in one run:
#   vips gaussblur driven by xargs -P (one process per core), Debian's libvips-tools;
#   OpenCV (imread, GaussianBlur, imwrite) in a process pool, one process per core.
# Generates N photo-like 3000×2000 JPEGs first. Prints images/s for each and the ratios.
# Usage: benches/batch.sh [N_IMAGES=200] [SIGMA=5] [GBLUR_DEVICE=auto]
# GBLUR_BIN=path uses a prebuilt gblur (machines without cargo). Where libvips cannot be
# installed (no package registry), its row is left out and the script says so.
# GBLUR_DEVICES="gpu rust" times gblur once per listed --device value (default: GBLUR_DEVICE),
# each followed by gblur's own summary (where the time went).
# It also measures the codec ceilings, the rate with no blur at all: gblur's decoder and
# encoder (benches/codec_ceiling.rs; GBLUR_CODEC_BIN=path uses a prebuilt one) and OpenCV's
# imread + imwrite in the same pool. No blur can take a tool past its ceiling, so ceiling ÷
# the best peer bounds what any blur speed-up can give gblur.
# Where PyTorch sees a CUDA device, torchvision's nvJPEG pipeline (benches/torch_nvjpeg.py)
# runs too: timed as a process, like the others, and after its warm-up batch.
set -euo pipefail
n=${1:-200} sigma=${2:-5} device=${3:-auto}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cores=$(nproc)

# Debian's own python3 carries python3-opencv; another python3 on the PATH may not.
py=${PYTHON:-/usr/bin/python3}
need=()
command -v vips >/dev/null || need+=(libvips-tools)
"$py" -c 'import cv2' 2>/dev/null || need+=(python3-opencv)
if [ ${#need[@]} -gt 0 ]; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get install -y -qq "${need[@]}" >/dev/null || echo "could not install ${need[*]}" >&2
fi
if [ -n "${GBLUR_BIN:-}" ]; then
    gblur=$GBLUR_BIN
else
    (cd "$root" && cargo build --release -q)
    gblur="$root/target/release/gblur"
fi
if [ -n "${GBLUR_CODEC_BIN:-}" ]; then
    codecs=$GBLUR_CODEC_BIN
elif command -v cargo >/dev/null && (cd "$root" && cargo build --release -q --example codec_ceiling); then
    codecs="$root/target/release/examples/codec_ceiling"
else
    codecs=""
fi
peers="opencv"
command -v vips >/dev/null && peers="vips opencv"

mkdir -p "$work/in" "$work/gblur" "$work/vips" "$work/opencv"
"$py" - "$work/in" "$n" <<'PY'
import sys, numpy as np, cv2
out, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(1)
for i in range(n):
    img = np.zeros((2000, 3000, 3), np.float32)
    for scale, weight in [(8, 0.5), (64, 0.3), (400, 0.15)]:
        small = rng.random((2000 // scale + 2, 3000 // scale + 2, 3), np.float32)
        img += weight * cv2.resize(small, (3000, 2000), interpolation=cv2.INTER_CUBIC)
    img += 0.05 * rng.random(img.shape, np.float32)
    cv2.imwrite(f"{out}/img{i:04d}.jpg", np.clip(img * 255, 0, 255).astype(np.uint8), [cv2.IMWRITE_JPEG_QUALITY, 90])
PY

seconds() { local t0 t1; t0=$(date +%s.%N); "$@"; t1=$(date +%s.%N); awk "BEGIN { print $t1 - $t0 }"; }

devices=${GBLUR_DEVICES:-$device}
declare -A t_dev
for d in $devices; do
    rm -rf "$work/gblur"
    t_dev[$d]=$(seconds "$gblur" batch "$work/in" "$work/gblur" --sigma "$sigma" --device "$d" 2>"$work/summary_$d.txt")
done
t_vips=""
if command -v vips >/dev/null; then
    t_vips=$(seconds sh -c "cd '$work/in' && ls | xargs -P $cores -I{} vips gaussblur {} '$work/vips/{}' $sigma")
fi
cat >"$work/cv.py" <<PY
import sys, os, cv2
from multiprocessing import Pool
src, dst, sigma = sys.argv[1], sys.argv[2], float(sys.argv[3])
cv2.setNumThreads(1)
def one(name):
    img = cv2.imread(os.path.join(src, name))
    # sigma 0 times OpenCV's codecs alone: its ceiling.
    cv2.imwrite(os.path.join(dst, name), cv2.GaussianBlur(img, (0, 0), sigma) if sigma > 0 else img)
if __name__ == "__main__":
    with Pool($cores) as p:
        p.map(one, sorted(os.listdir(src)))
PY
t_cv=$(seconds "$py" "$work/cv.py" "$work/in" "$work/opencv" "$sigma")
mkdir -p "$work/opencv_codecs"
t_cv_codecs=$(seconds "$py" "$work/cv.py" "$work/in" "$work/opencv_codecs" 0)
t_torch=""
if "$py" -c 'import sys, torch, torchvision; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    t_torch=$(seconds sh -c "'$py' '$root/benches/torch_nvjpeg.py' '$work/in' '$work/torch' $sigma >'$work/torch.txt'")
fi
ceiling=""
if [ -n "$codecs" ]; then
    # Median of three runs of gblur's codecs alone.
    ceiling=$("$codecs" "$work/in" 3 | tee "$work/ceiling.txt" | sed -E 's/.*= ([0-9.]+) images.*/\1/' | sort -n | sed -n 2p)
fi

for d in gblur $peers; do
    got=$(ls "$work/$d" | wc -l)
    [ "$got" -eq "$n" ] || { echo "$d wrote $got of $n files" >&2; exit 1; }
done
echo "machine: $(nproc) cores; $n JPEGs of 3000x2000 (6 MP); sigma $sigma"
for d in $devices; do
    t=${t_dev[$d]}
    printf '%-28s %8s s %8.2f images/s\n' "gblur batch --device $d" "$t" "$(awk "BEGIN { print $n / $t }")"
    grep -E "^(device|stages)" "$work/summary_$d.txt" | sed 's/^/    /'
done
if [ -n "$t_vips" ]; then
    printf '%-28s %8s s %8.2f images/s\n' "vips gaussblur (xargs -P$cores)" "$t_vips" "$(awk "BEGIN { print $n / $t_vips }")"
else
    echo "vips gaussblur: not installed here, not measured"
fi
printf '%-28s %8s s %8.2f images/s\n' "OpenCV pool ($cores procs)" "$t_cv" "$(awk "BEGIN { print $n / $t_cv }")"
printf '%-28s %8s s %8.2f images/s\n' "OpenCV codecs only (no blur)" "$t_cv_codecs" "$(awk "BEGIN { print $n / $t_cv_codecs }")"
if [ -n "$t_torch" ]; then
    printf '%-28s %8s s %8.2f images/s (process; after warm-up: %s)\n' "torchvision nvJPEG + blur" "$t_torch" \
        "$(awk "BEGIN { print $n / $t_torch }")" "$(cut -d' ' -f2- "$work/torch.txt")"
fi
if [ -n "$ceiling" ]; then
    printf '%-28s %8s   %8.2f images/s (median of 3)\n' "gblur codecs only (no blur)" "" "$ceiling"
    sed 's/^/    /' "$work/ceiling.txt"
    printf 'gblur codec ceiling / OpenCV pool %.2f (no blur speed can take gblur past this)\n' \
        "$(awk "BEGIN { print $ceiling * $t_cv / $n }")"
else
    echo "gblur codecs only: not measured (no cargo to build benches/codec_ceiling.rs, no GBLUR_CODEC_BIN)"
fi
for d in $devices; do
    t=${t_dev[$d]}
    [ -z "$t_vips" ] || printf 'gblur --device %s / vips   %.2f\n' "$d" "$(awk "BEGIN { print $t_vips / $t }")"
    printf 'gblur --device %s / OpenCV %.2f\n' "$d" "$(awk "BEGIN { print $t_cv / $t }")"
    [ -z "$t_torch" ] || printf 'gblur --device %s / torchvision %.2f\n' "$d" "$(awk "BEGIN { print $t_torch / $t }")"
done
