#!/usr/bin/env bash
# Masked blur (--mask, --region, --mask-mode) against the plain blur, on the Rust path.
#
# 1. Leak: a white disc (radius 200) on black, 1024², its background selected (the disc
#    excluded), sigma 20: the largest value the disc leaks into the ring of background pixels
#    within 10 px of it, blend vs exclude (exclude should leak 0), on every path here.
# 2. Speed: a 4896×3264 (16 MP) RGB 8-bit image, sigma 20, --device rust: plain, --mask (a
#    background mask, everything but a central disc of radius 1000, so the blur covers the
#    whole image), the same with --mask-mode exclude, and --region (a 500×500 box). Runs
#    alternate (plain, blend, exclude, region, plain, ...) so that a busy machine slows every
#    configuration alike; prints the median of gblur's own wall time (`total_ms`, PPM in, BMP
#    out, so that the codecs weigh little) and each median's ratio to the plain blur's.
# Needs python3 with numpy (to make the images and read the BMP outputs).
# Usage: benches/masks.sh [RUNS=7]
set -euo pipefail
runs=${1:-7}
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
pnm(f'{d}/big.ppm', np.repeat(np.repeat(small, 16, 0), 16, 1)[:h, :w])
y, x = np.mgrid[0:h, 0:w]
pnm(f'{d}/big_bg.pgm', (np.hypot(x - w / 2, y - h / 2) > 1000) * 255)
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

echo "== speed: 16 MP RGB8, sigma 20, --device rust, $runs alternating runs each ($(nproc) cores)"
declare -A conf=(
    [plain]=""
    [blend]="--mask $work/big_bg.pgm"
    [exclude]="--mask $work/big_bg.pgm --mask-mode exclude"
    [region]="--region 2198,1382,500,500"
)
order=(plain blend exclude region)
for ((i = 0; i < runs; i++)); do
    for c in "${order[@]}"; do
        # shellcheck disable=SC2086
        "$gblur" "$work/big.ppm" "$work/out.bmp" -s 20 --device rust ${conf[$c]} --json -q \
            | python3 -c 'import json,sys; print(json.load(sys.stdin)["total_ms"])' >> "$work/$c.ms"
    done
done
python3 - "$work" "${order[@]}" <<'PY'
import sys, statistics as st
d, names = sys.argv[1], sys.argv[2:]
med = {n: st.median(float(v) for v in open(f'{d}/{n}.ms')) for n in names}
for n in names:
    print(f'{n:8} median {med[n]:8.1f} ms   ratio to plain {med[n] / med["plain"]:.2f}')
PY
