#!/usr/bin/env bash
# What carrying metadata costs a 16 MP JPEG -> JPEG job (sigma 5, the Rust path). Three jobs on
# the same pixels, in RUNS rounds of each once (rotating order, so drift hits all alike):
#   meta   the photo with a phone's EXIF (camera fields, maker note, GPS, a JPEG thumbnail) and
#          an XMP packet (tests/fixtures/phone_exif_xmp.jpg's APP1 segments, orientation set
#          to 1 so no job turns the pixels), default options: read, patched, written;
#   strip  the same file with --strip: read at decode, not written;
#   bare   the same pixels with no metadata at all.
# Prints the medians, the median of the per-round ratios meta/bare (all that metadata
# handling costs) and meta/strip (what writing it costs), and the report's own `metadata`
# pass (the EXIF and XMP put into the encoded file), timed inside the process; then what
# reading them at decode costs (benches/metadata_read.rs).
# usage: benches/metadata.sh [RUNS]     (W and H in the environment change the 4896x3264 size)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-15}
W=${W:-4896}
H=${H:-3264}
PY=/usr/bin/python3
$PY -c 'import numpy' 2>/dev/null || { apt-get update -q && apt-get install -y -q python3-numpy; }
cargo build --release -q
cargo build --release -q -p gblur --features unstable-internals --example metadata_read
G=$PWD/target/release/gblur
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# Photo-like pixels (smooth structure plus grain) as a PPM, made a JPEG by gblur itself.
$PY - "$T/photo.ppm" "$W" "$H" <<'PY'
import sys
import numpy as np
out, w, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
y, x = np.mgrid[0:h, 0:w].astype(np.float32)
rng = np.random.default_rng(5)
img = np.stack([
    0.5 + 0.25 * np.sin(x / 97 + c) * np.cos(y / 61 - c) + 0.15 * np.sin((x + y) / 13 + c)
    for c in range(3)], axis=2)
img += 0.06 * rng.random(img.shape, np.float32)
data = (np.clip(img, 0, 1) * 255 + 0.5).astype(np.uint8)
with open(out, "wb") as f:
    f.write(b"P6\n%d %d\n255\n" % (w, h))
    f.write(data.tobytes())
PY
"$G" "$T/photo.ppm" "$T/bare.jpg" --sigma 1 --quality 90 -q

# The phone fixture's APP1 segments (EXIF, XMP), orientation set to 1, spliced after SOI.
$PY - tests/fixtures/phone_exif_xmp.jpg "$T/bare.jpg" "$T/meta.jpg" <<'PY'
import struct, sys
src, bare, out = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read(), sys.argv[3]
segs, at = [], 2
while src[at + 1] == 0xE1:
    n = struct.unpack(">H", src[at + 2:at + 4])[0]
    segs.append(bytearray(src[at:at + 2 + n]))
    at += 2 + n
exif = segs[0]
t = 10  # FF E1, length, "Exif\0\0": the TIFF header starts here
bo = ">" if exif[t:t + 2] == b"MM" else "<"
ifd0 = t + struct.unpack(bo + "I", exif[t + 4:t + 8])[0]
for i in range(struct.unpack(bo + "H", exif[ifd0:ifd0 + 2])[0]):
    e = ifd0 + 2 + 12 * i
    if struct.unpack(bo + "H", exif[e:e + 2])[0] == 0x0112:
        exif[e + 8:e + 10] = struct.pack(bo + "H", 1)
with open(out, "wb") as f:
    f.write(bare[:2] + b"".join(segs) + bare[2:])
PY

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load average $(cut -d' ' -f1 /proc/loadavg)"
echo "image:   ${W}x${H} JPEG q90 -> JPEG q90, sigma 5, --device rust; $RUNS rounds, medians"
echo "metadata: $(($(wc -c <"$T/meta.jpg") - $(wc -c <"$T/bare.jpg"))) bytes of APP1 segments (EXIF with thumbnail, GPS, maker note; XMP)"
# Each job runs as its own process; the driver records its wall time (the report's total) and
# its CPU time (user + system, from getrusage), which a machine shared with other work
# disturbs far less than wall time.
$PY - "$G" "$T" "$RUNS" <<'PY'
import json, resource, statistics as st, subprocess, sys
g, t, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
jobs = {
    "meta": [f"{t}/meta.jpg"],
    "strip": [f"{t}/meta.jpg", "--strip"],
    "bare": [f"{t}/bare.jpg"],
}
def job(name):
    src, *extra = jobs[name]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([g, src, f"{t}/out-{name}.jpg", "--sigma", "5", "--device", "rust",
                          "--json", "-q", *extra], check=True, capture_output=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e3
    report = json.loads(out)
    embed = sum(p["ms"] for p in report["passes"] if p["name"] == "metadata")
    return report["total_ms"], cpu, embed
job("meta")  # warm the page cache and the binary
names = list(jobs)
rounds = []
for r in range(runs):
    k = r % 3
    rounds.append({n: job(n) for n in names[k:] + names[:k]})
med = st.median
print(f"{'job':<24} {'wall ms':>9} {'CPU ms':>9}")
for n, label in [("meta", "meta (default: kept)"), ("strip", "meta --strip"), ("bare", "bare (no metadata)")]:
    print(f"{label:<24} {med(x[n][0] for x in rounds):>9.1f} {med(x[n][1] for x in rounds):>9.1f}")
for a, b, what in [("meta", "bare", "all metadata handling"), ("meta", "strip", "writing it")]:
    wall = med(x[a][0] / x[b][0] for x in rounds)
    cpu = med(x[a][1] / x[b][1] for x in rounds)
    print(f"{a}/{b} ({what}): wall {wall:.4f}, CPU {cpu:.4f} (medians of per-round ratios)")
embed = med(x["meta"][2] for x in rounds)
print(f"the 'metadata' pass of meta (EXIF and XMP into the encoded file): {embed:.3f} ms, "
      f"{100 * med(x['meta'][2] / x['meta'][0] for x in rounds):.3f}% of its job")
PY
echo
echo "reading at decode (the header parse image repeats per call), with and without the segments:"
target/release/examples/metadata_read "$T/meta.jpg" "$T/bare.jpg" --calls 200
