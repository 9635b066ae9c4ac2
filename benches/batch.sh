#!/usr/bin/env bash
# gblur batch against the peers a user would script instead, on the same files in one run:
#   vips gaussblur driven by xargs -P (one process per core), Debian's libvips-tools;
#   OpenCV (imread, GaussianBlur, imwrite) in a process pool, one process per core.
# Generates N photo-like 3000×2000 JPEGs first. Prints images/s for each and the ratios.
# Usage: benches/batch.sh [N_IMAGES=200] [SIGMA=5] [GBLUR_DEVICE=auto]
# ROUNDS=k (default 1) times every tool k times, in turn within each round (paired,
# alternating), and prints the median; on a shared machine take 5 or more.
# GBLUR_BIN=path uses a prebuilt gblur (machines without cargo); GBLUR_BINS="a=path b=path"
# times several builds side by side, each under its label. Where libvips cannot be
# installed (no package registry), its row is left out and the script says so.
# GBLUR_DEVICES="gpu rust" times gblur once per listed --device value (default: GBLUR_DEVICE),
# each followed by gblur's own summary (where the time went).
# It also measures the codec ceilings, the rate with no blur at all: gblur's decoder and
# encoder (benches/codec_ceiling.rs; GBLUR_CODEC_BIN=path uses a prebuilt one) and OpenCV's
# imread + imwrite in the same pool. No blur can take a tool past its ceiling, so ceiling ÷
# the best peer bounds what any blur speed-up can give gblur.
# Where PyTorch sees a CUDA device, torchvision's nvJPEG pipeline (benches/torch_nvjpeg.py)
# runs too: timed as a process, like the others, and after its warm-up batch (TORCH=0 leaves
# it out).
set -euo pipefail
n=${1:-200} sigma=${2:-5} device=${3:-auto} rounds=${ROUNDS:-1}
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
elif command -v cargo >/dev/null && (cd "$root" && cargo build --release -q -p gblur --features unstable-internals --example codec_ceiling); then
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
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
rate() { awk "BEGIN { printf \"%.2f\", $n / $1 }"; }

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

devices=${GBLUR_DEVICES:-$device}
bins=${GBLUR_BINS:-gblur=$gblur}
# Keys of the gblur rows: label/device.
keys=()
for b in $bins; do for d in $devices; do keys+=("${b%%=*}/$d"); done; done
declare -A times
for r in $(seq "$rounds"); do
    for b in $bins; do
        for d in $devices; do
            k="${b%%=*}/$d"
            rm -rf "$work/gblur"
            times[$k]+=" $(seconds "${b#*=}" batch "$work/in" "$work/gblur" --sigma "$sigma" --device "$d" 2>"$work/summary_${k//\//_}.txt")"
            got=$(ls "$work/gblur" | wc -l)
            [ "$got" -eq "$n" ] || { echo "$k wrote $got of $n files" >&2; exit 1; }
        done
    done
    if command -v vips >/dev/null; then
        rm -rf "$work/vips"; mkdir -p "$work/vips"
        times[vips]+=" $(seconds sh -c "cd '$work/in' && ls | xargs -P $cores -I{} vips gaussblur {} '$work/vips/{}' $sigma")"
    fi
    rm -rf "$work/opencv" "$work/opencv_codecs"; mkdir -p "$work/opencv" "$work/opencv_codecs"
    times[cv]+=" $(seconds "$py" "$work/cv.py" "$work/in" "$work/opencv" "$sigma")"
    times[cv_codecs]+=" $(seconds "$py" "$work/cv.py" "$work/in" "$work/opencv_codecs" 0)"
    if [ "${TORCH:-1}" != 0 ] && "$py" -c 'import sys, torch, torchvision; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
        times[torch]+=" $(seconds sh -c "'$py' '$root/benches/torch_nvjpeg.py' '$work/in' '$work/torch' $sigma >'$work/torch.txt'")"
    fi
    if [ -n "$codecs" ]; then
        # gblur's codecs alone, one run per round (three in a single round).
        runs=1; [ "$rounds" -gt 1 ] || runs=3
        "$codecs" "$work/in" $runs | tee -a "$work/ceiling.txt" >/dev/null
    fi
done
for d in $peers; do
    got=$(ls "$work/$d" | wc -l)
    [ "$got" -eq "$n" ] || { echo "$d wrote $got of $n files" >&2; exit 1; }
done

t_cv=$(echo "${times[cv]}" | median)
ceiling=""
[ -z "$codecs" ] || ceiling=$(sed -E 's/.*= ([0-9.]+) images.*/\1/' "$work/ceiling.txt" | tr '\n' ' ' | median)
echo "machine: $(nproc) cores; $n JPEGs of 3000x2000 (6 MP); sigma $sigma; median of $rounds round(s)"
row() { printf '%-34s %8.2f s %8.2f images/s   (%s)\n' "$1" "$2" "$(rate "$2")" "$3"; }
for k in "${keys[@]}"; do
    t=$(echo "${times[$k]}" | median)
    label=${k%%/*} d=${k#*/}
    [ "$label" = gblur ] && name="gblur batch --device $d" || name="gblur[$label] batch --device $d"
    row "$name" "$t" "${times[$k]# }"
    grep -E "^(device|stages)" "$work/summary_${k//\//_}.txt" | sed 's/^/    /'
done
if [ -n "${times[vips]:-}" ]; then
    row "vips gaussblur (xargs -P$cores)" "$(echo "${times[vips]}" | median)" "${times[vips]# }"
else
    echo "vips gaussblur: not installed here, not measured"
fi
row "OpenCV pool ($cores procs)" "$t_cv" "${times[cv]# }"
row "OpenCV codecs only (no blur)" "$(echo "${times[cv_codecs]}" | median)" "${times[cv_codecs]# }"
if [ -n "${times[torch]:-}" ]; then
    printf '%-34s %8.2f s %8.2f images/s (process; after warm-up: %s)\n' "torchvision nvJPEG + blur" \
        "$(echo "${times[torch]}" | median)" "$(rate "$(echo "${times[torch]}" | median)")" "$(cut -d' ' -f2- "$work/torch.txt")"
fi
if [ -n "$ceiling" ]; then
    printf '%-34s %8s   %8.2f images/s (median)\n' "gblur codecs only (no blur)" "" "$ceiling"
    sed 's/^/    /' "$work/ceiling.txt"
    printf 'gblur codec ceiling / OpenCV pool %.2f (no blur speed can take gblur past this)\n' \
        "$(awk "BEGIN { print $ceiling * $t_cv / $n }")"
else
    echo "gblur codecs only: not measured (no cargo to build benches/codec_ceiling.rs, no GBLUR_CODEC_BIN)"
fi
for k in "${keys[@]}"; do
    t=$(echo "${times[$k]}" | median)
    [ -z "${times[vips]:-}" ] || printf '%s / vips   %.2f\n' "$k" "$(awk "BEGIN { print $(echo "${times[vips]}" | median) / $t }")"
    printf '%s / OpenCV %.2f\n' "$k" "$(awk "BEGIN { print $t_cv / $t }")"
    [ -z "${times[torch]:-}" ] || printf '%s / torchvision %.2f\n' "$k" "$(awk "BEGIN { print $(echo "${times[torch]}" | median) / $t }")"
    [ -z "$ceiling" ] || printf '%s / its codec ceiling %.2f\n' "$k" "$(awk "BEGIN { print $n / $t / $ceiling }")"
done
