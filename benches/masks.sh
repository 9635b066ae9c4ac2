#!/usr/bin/env bash
# Masked blur (--mask, --region, --mask-mode, --nan ignore) against the plain blur.
#
# 1. Leak: a white disc (radius 200) on black, 1024², its background selected (the disc
#    excluded), sigma 20: the largest value the disc leaks into the ring of background pixels
#    within 10 px of it, blend vs exclude (exclude should leak 0), on every path here.
# 2. Speed: 4896×3264 (16 MP) RGB 8-bit images, sigma 20, --device rust, each of two kinds:
#    `noisy` (random 16-px blocks: sharp edges everywhere, as a photo's texture) and `smooth`
#    (slow gradients). Configurations: plain; --mask (a background mask, everything but a
#    central disc of radius 1000, so the blur covers the whole image) with blend and with
#    --mask-mode exclude; --region (a 500×500 box) with blend and with exclude. Then a 16 MP
#    RGB f32 TIFF (the smooth image, 1% of its samples NaN): plain (NaN made 0) against
#    --nan ignore; then the same with 1% of its pixels NaN in all three samples (nodata). Runs alternate (plain, blend, exclude, ..., plain, ...) so that a busy
#    machine slows every configuration alike; prints the median of gblur's own wall time
#    (`total_ms`, PPM or TIFF in, BMP or TIFF out, so that the codecs weigh little) and each
#    median's ratio to the plain blur's in the same series.
# 3. The same plain/exclude/region on PoCL (`--device cpu`), fewer runs (it is slower).
# Needs python3 with numpy (to make the images and read the BMP outputs).
# Usage: benches/masks.sh [RUNS=7] [POCL_RUNS=3]
set -euo pipefail
runs=${1:-7}
pocl_runs=${2:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$root" && cargo build --release -q)
gblur="$root/target/release/gblur"

python3 - "$work" <<'PY'
import sys, numpy as np
d = sys.argv[1]
def pnm(path, a):
    with open(path, 'wb') as f:
        f.write(b'P%d\n%d %d\n255\n' % (6 if a.ndim == 3 else 5, a.shape[1], a.shape[0]))
        f.write(np.ascontiguousarray(a, np.uint8).tobytes())
n = 1024; y, x = np.mgrid[0:n, 0:n]; r = np.hypot(x - 511.5, y - 511.5)
pnm(f'{d}/disc.pgm', (r <= 200) * 255); pnm(f'{d}/disc_bg.pgm', (r > 200) * 255)
w, h = 4896, 3264
rng = np.random.default_rng(1)
small = rng.integers(0, 256, (h // 16 + 1, w // 16 + 1, 3), dtype=np.uint8)
pnm(f'{d}/noisy.ppm', np.repeat(np.repeat(small, 16, 0), 16, 1)[:h, :w])
y, x = np.mgrid[0:h, 0:w].astype(np.float32)
smooth = np.stack([0.5 + 0.4 * np.sin(x / 700 + c) * np.cos(y / 500 - c) for c in range(3)], 2)
pnm(f'{d}/smooth.ppm', smooth * 255 + 0.5)
pnm(f'{d}/big_bg.pgm', (np.hypot(x - w / 2, y - h / 2) > 1000) * 255)
# Uncompressed RGB f32 TIFFs: 1% of the samples NaN (float.tif), and 1% of the pixels NaN in
# all three samples, as rasters mark nodata (nodata.tif).
import struct
def tif(path, f):
    data = f.astype('<f4').tobytes()
    tags = [(256, 4, 1, w), (257, 4, 1, h), (258, 3, 3, 8 + len(data)), (259, 3, 1, 1),
            (262, 3, 1, 2), (273, 4, 1, 8), (277, 3, 1, 3), (278, 4, 1, h),
            (279, 4, 1, len(data)), (284, 3, 1, 1), (339, 3, 3, 8 + len(data) + 6)]
    ifd = struct.pack('<H', len(tags)) + b''.join(struct.pack('<HHII', *t) for t in tags) + bytes(4)
    with open(path, 'wb') as out:
        out.write(struct.pack('<2sHI', b'II', 42, 8 + len(data) + 12) + data)
        out.write(struct.pack('<6H', 32, 32, 32, 3, 3, 3) + ifd)
f = smooth.copy()
f[rng.random(f.shape) < 0.01] = np.nan
tif(f'{d}/float.tif', f)
f = smooth.copy()
f[rng.random(f.shape[:2]) < 0.01] = np.nan
tif(f'{d}/nodata.tif', f)
PY

echo "== leak: disc radius 200 excluded, sigma 20, 1024², largest value within 10 px outside it (of 255)"
paths=("--device rust" "--device rust --method fir" "--device cpu --pipeline direct" "--device cpu --pipeline transpose" "--device cpu --pipeline blocked")
for p in "${paths[@]}"; do
    for mode in blend exclude; do
        # shellcheck disable=SC2086
        "$gblur" "$work/disc.pgm" "$work/leak.bmp" -s 20 --mask "$work/disc_bg.pgm" --mask-mode $mode $p -q
        python3 - "$work/leak.bmp" "$mode" "$p" <<'PY'
import sys, struct, numpy as np
b = open(sys.argv[1], 'rb').read()
off = struct.unpack_from('<I', b, 10)[0]; w, h = struct.unpack_from('<ii', b, 18)
stride = (w + 3) // 4 * 4
a = np.frombuffer(b, np.uint8, stride * abs(h), off).reshape(abs(h), stride)[:, :w]
a = a if h < 0 else a[::-1]
y, x = np.mgrid[0:1024, 0:1024]; r = np.hypot(x - 511.5, y - 511.5)
ring = (r > 200) & (r <= 210)
print(f'{sys.argv[3]:36} {sys.argv[2]:8} leak {a[ring].max():3d}   disc untouched: {bool((a[r <= 200] == 255).all())}')
PY
    done
done

# series NAME INPUT OUT_EXT RUNS CONFIG...: alternating runs of "label=arguments"
# configurations, the first the baseline; prints each one's median and its ratio to the
# baseline's.
series() {
    local name=$1 input=$2 ext=$3 n=$4
    shift 4
    local labels=() c i
    for c in "$@"; do labels+=("${c%%=*}"); done
    for ((i = 0; i < n; i++)); do
        for c in "$@"; do
            # shellcheck disable=SC2086
            "$gblur" "$input" "$work/out.$ext" -s 20 ${c#*=} --json -q \
                | python3 -c 'import json,sys; print(json.load(sys.stdin)["total_ms"])' \
                >> "$work/$name.${c%%=*}.ms"
        done
    done
    python3 - "$work" "$name" "${labels[@]}" <<'PY'
import sys, statistics as st
d, name, names = sys.argv[1], sys.argv[2], sys.argv[3:]
med = {n: st.median(float(v) for v in open(f'{d}/{name}.{n}.ms')) for n in names}
for n in names:
    print(f'{name:8} {n:16} median {med[n]:8.1f} ms   ratio to {names[0]} {med[n] / med[names[0]]:.2f}')
PY
}

bg="--mask $work/big_bg.pgm"
box="--region 2198,1382,500,500"
echo "== speed: 16 MP RGB8, sigma 20, --device rust, $runs alternating runs each ($(nproc) cores)"
for kind in noisy smooth; do
    series "$kind" "$work/$kind.ppm" bmp "$runs" "plain=--device rust" \
        "blend=--device rust $bg" "exclude=--device rust $bg --mask-mode exclude" \
        "region=--device rust $box" "region-exclude=--device rust $box --mask-mode exclude"
done
echo "== speed: 16 MP RGB f32 TIFF, 1% NaN, sigma 20, --device rust, $runs alternating runs each"
series float "$work/float.tif" tif "$runs" "plain=--device rust" "nan-ignore=--device rust --nan ignore"
echo "== speed: the same with 1% of the pixels NaN in all three samples (nodata), $runs runs each"
series nodata "$work/nodata.tif" tif "$runs" "plain=--device rust" "nan-ignore=--device rust --nan ignore"
echo "== speed: PoCL (--device cpu), 16 MP RGB8 noisy, sigma 20, $pocl_runs alternating runs each"
series pocl "$work/noisy.ppm" bmp "$pocl_runs" "plain=--device cpu" \
    "exclude=--device cpu $bg --mask-mode exclude" "region=--device cpu $box"
