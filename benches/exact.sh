#!/usr/bin/env bash
# The price of the difference form (exact constant regions) on the banded Rust blur: this
# tree's gblur against another build (BASE, e.g. one built from an earlier commit) on the same
# files, in RUNS rounds that alternate which of the two runs first. Only the blur's own passes
# are timed (the report's "blur" stage, --device rust), so decoding and encoding do not
# dilute the ratio (on an OpenCL device: its kernels' and transfers' passes). Each ratio is the median of the per-round ratios (this tree ÷ BASE).
#
# Each measurement is the least of REPEAT runs (3), which a shared machine's bursts of load
# inflate less than a single run.
# Images (W×H, default 2000×1500, RGB): photo-like noise over smooth structure as f32 TIFF,
# 8-bit PPM and 16-bit PPM; and a float image of large constant regions (1e4, -3, 0.25), where
# the difference form's states decay towards zero (a subnormal slowdown would show there).
# DEVICE=cpu times an OpenCL device's blur passes instead (PoCL here), IMAGES picks the files.
# The second part times the same builds in memory (`gblur bench cpu`, ROUNDS rounds).
# usage: benches/exact.sh BASE [RUNS]     (W, H, SIGMAS, DEVICE, IMAGES, NEW, ROUNDS in the environment;
#        IMAGES=none skips the files)
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=$1
RUNS=${2:-9}
W=${W:-2000}
H=${H:-1500}
SIGMAS=${SIGMAS:-"3 50"}
REPEAT=${REPEAT:-3}
DEVICE=${DEVICE:-rust}
IMAGES=${IMAGES:-"photo_f32.tif regions_f32.tif photo_8.ppm photo_16.ppm"}
# NEW names an already built binary of this tree (skips the build).
if [ -z "${NEW:-}" ]; then
  cargo build --release -q
  NEW=$PWD/target/release/gblur
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
python3 - "$T" "$W" "$H" <<'PY'
import struct, sys
import numpy as np
out, w, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(1)

def smooth(scale):
    small = rng.random((h // scale + 2, w // scale + 2, 3), np.float32)
    big = np.repeat(np.repeat(small, scale, 0), scale, 1)[:h, :w]
    # a box pass each way turns the blocks into ramps
    k = np.ones(scale, np.float32) / scale
    for axis in (0, 1):
        big = np.apply_along_axis(lambda v: np.convolve(v, k, "same"), axis, big)
    return big

photo = 0.5 * smooth(8) + 0.3 * smooth(64) + 0.05 * rng.random((h, w, 3), np.float32)
photo = np.clip(photo / photo.max(), 0, 1).astype(np.float32)
regions = np.full((h, w, 3), 0.25, np.float32)
regions[h // 8 : h // 2, w // 8 : w // 2] = 1e4
regions[h // 2 : 7 * h // 8, w // 2 : 7 * w // 8] = -3.0

def tiff(path, img):
    data = img.astype("<f4").tobytes()
    tags = [(256, 4, w), (257, 4, h), (258, 3, None), (259, 3, 1), (262, 3, 2), (273, 4, 8),
            (277, 3, 3), (278, 4, h), (279, 4, len(data)), (284, 3, 1), (339, 3, None)]
    ifd = 8 + len(data)
    extra = ifd + 2 + 12 * len(tags) + 4
    b = bytearray(b"II*\0" + struct.pack("<I", ifd) + data + struct.pack("<H", len(tags)))
    for tag, kind, value in tags:
        if value is None:  # three shorts: BitsPerSample 32, SampleFormat 3 (IEEE float)
            b += struct.pack("<HHII", tag, 3, 3, extra + (0 if tag == 258 else 6))
        elif kind == 3:
            b += struct.pack("<HHIHH", tag, 3, 1, value, 0)
        else:
            b += struct.pack("<HHII", tag, 4, 1, value)
    b += struct.pack("<I", 0) + struct.pack("<6H", 32, 32, 32, 3, 3, 3)
    open(path, "wb").write(b)

def ppm(path, img, maxval):
    dtype = ">u2" if maxval > 255 else "u1"
    data = (img * maxval + 0.5).astype(dtype).tobytes()
    open(path, "wb").write(f"P6 {w} {h} {maxval}\n".encode() + data)

tiff(f"{out}/photo_f32.tif", photo)
tiff(f"{out}/regions_f32.tif", regions)
ppm(f"{out}/photo_8.ppm", photo, 255)
ppm(f"{out}/photo_16.ppm", photo, 65535)
PY
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(date -u +%F)"
echo "images:  ${W}x${H} RGB; $RUNS rounds, alternating order, each the least of $REPEAT runs; blur passes only (--device $DEVICE)"
blur_ms() { # binary input sigma -> the blur stage's milliseconds, the least of REPEAT runs
  for _ in $(seq 1 "$REPEAT"); do
    "$1" "$2" "$T/out.tif" --sigma "$3" --device "$DEVICE" --json -q |
      python3 -c 'import json,sys; print(sum(p["ms"] for p in json.load(sys.stdin)["passes"] if p["stage"] == "blur"))'
  done | sort -g | head -1
}
printf '%-18s %6s %10s %10s %12s %s\n' image sigma "base ms" "this ms" "this/base" "(range)"
for img in ${IMAGES/none/}; do
  for s in $SIGMAS; do
    b=(); n=()
    for r in $(seq 1 "$RUNS"); do
      if [ $((r % 2)) -eq 1 ]; then
        b+=("$(blur_ms "$BASE" "$T/$img" "$s")"); n+=("$(blur_ms "$NEW" "$T/$img" "$s")")
      else
        n+=("$(blur_ms "$NEW" "$T/$img" "$s")"); b+=("$(blur_ms "$BASE" "$T/$img" "$s")")
      fi
    done
    python3 - "$img" "$s" "${b[*]}" "${n[*]}" <<'PY'
import statistics as st, sys
img, s, b, n = sys.argv[1], sys.argv[2], list(map(float, sys.argv[3].split())), list(map(float, sys.argv[4].split()))
r = [y / x for x, y in zip(b, n)]
print(f"{img:<18} {s:>6} {st.median(b):>10.1f} {st.median(n):>10.1f} {st.median(r):>11.3f}x ({min(r):.3f}-{max(r):.3f})")
PY
  done
done

# In memory: `gblur bench cpu` (the median of its own --runs each) from both builds, in
# alternating order: the banded blur on 8-bit RGB and on one f32 channel, and the planar
# reference and the OpenCL device's direct pipeline on 8-bit RGB (whose kernels run the
# difference form for every image).
ROUNDS=${ROUNDS:-9}
echo
echo "== in memory: gblur bench cpu --sizes ${W}x${H} --runs 5, $ROUNDS rounds =="
for r in $(seq 1 "$ROUNDS"); do
  order=("$BASE" "$NEW")
  [ $((r % 2)) -eq 0 ] && order=("$NEW" "$BASE")
  for g in "${order[@]}"; do
    tag=$([ "$g" = "$BASE" ] && echo base || echo this)
    "$g" bench cpu --sizes "${W}x${H}" --sigma ${SIGMAS// /,} --runs 5 --json -q --device "${BENCH_DEVICE:-cpu}" |
      python3 -c 'import json,sys; [print(sys.argv[1], sys.argv[2], r["name"].replace(" ", "_"), r["sigma"], r["median_ms"]) for r in json.load(sys.stdin)]' "$r" "$tag"
  done
done >"$T/mem.txt"
python3 - "$T/mem.txt" <<'PY'
import collections, statistics as st, sys
ms = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    r, tag, name, sigma, v = line.split()
    ms[(name, float(sigma))].setdefault(r, {})[tag] = float(v)
print(f"{'measurement':<42} {'sigma':>5} {'base ms':>9} {'this ms':>9} {'this/base':>10} (range)")
for (name, sigma), rounds in ms.items():
    pairs = [(d["base"], d["this"]) for d in rounds.values() if len(d) == 2]
    ratio = [t / b for b, t in pairs]
    print(f"{name.replace('_', ' '):<42} {sigma:>5.0f} {st.median(b for b, _ in pairs):>9.1f} "
          f"{st.median(t for _, t in pairs):>9.1f} {st.median(ratio):>9.3f}x ({min(ratio):.3f}-{max(ratio):.3f})")
PY
