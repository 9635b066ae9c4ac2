#!/usr/bin/env bash
# One-axis blurs against the 2-D blur on the Rust path: a 4896x3264 photo-like image (RGB
# 8-bit PNG, and the same as one grey channel), sigma 5 along x alone (--sigma-x),
# y alone (--sigma-y) and both (--sigma), RUNS rounds in which each runs once, order rotating.
# The time compared is the blur's passes from --json (decode and encode left out); prints each
# variant's median and its time over the 2-D blur's as the median of the per-round ratios with
# their range. Then the same three in memory (benches/one_axis_in_memory.rs, the public API),
# where every call finds the thread pool started and the cores busy: one run of the command
# blurs straight after a single-threaded decode, and waking the idle cores costs its passes a
# few milliseconds, a larger share of a shorter pass.
# usage: benches/one_axis.sh [RUNS]     (W and H in the environment change the size)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-9}
W=${W:-4896}
H=${H:-3264}
PY=${PY:-/usr/bin/python3}
$PY -c 'import numpy, PIL' 2>/dev/null || {
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get install -y -qq --no-install-recommends python3-numpy python3-pil >/dev/null
}
# Where no toolchain is (a device machine), the carried binaries are used as they are.
if command -v cargo >/dev/null; then
    cargo build --release -q
    cargo build --release -q -p gblur --example one_axis_in_memory
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
$PY benches/make_test_image.py "$T/photo.png" "$W" "$H" rgb 5
$PY - "$T" <<'PY'
import numpy as np, sys
from PIL import Image
t = sys.argv[1]
Image.open(f"{t}/photo.png").convert("L").save(f"{t}/photo-gray.png", compress_level=1)
PY
$PY - "$T" "$RUNS" <<'PY'
import json, statistics, subprocess, sys
t, runs = sys.argv[1], int(sys.argv[2])
variants = {"2-D": ["--sigma", "5"], "x alone": ["--sigma-x", "5"], "y alone": ["--sigma-y", "5"]}

def blur_ms(image, args):
    out = subprocess.run(["target/release/gblur", image, f"{t}/out" + image[image.rindex("."):],
                          "--device", "rust", "--json", "-q", *args],
                         capture_output=True, check=True).stdout
    passes = json.loads(out)["passes"]
    return sum(p["ms"] for p in passes if p["name"] not in ("decode", "encode", "write", "total (wall)"))

for image, what in ((f"{t}/photo.png", "RGB 8-bit"), (f"{t}/photo-gray.png", "grey 8-bit")):
    times = {v: [] for v in variants}
    names = list(variants)
    for r in range(runs):
        for v in names[r % 3:] + names[:r % 3]:
            times[v].append(blur_ms(image, variants[v]))
    print(f"\n== {what}, sigma 5, blur passes (ms), {runs} rounds ==")
    for v in names:
        line = f"{v:8s} {statistics.median(times[v]):7.1f} ms"
        if v != "2-D":
            ratios = [a / b for a, b in zip(times[v], times["2-D"])]
            line += f"   {statistics.median(ratios):.2f}x the 2-D blur ({min(ratios):.2f}-{max(ratios):.2f})"
        print(line)
PY
for channels in 3 1; do
    target/release/examples/one_axis_in_memory "$channels" "$((RUNS * 2 + 1))" "$W" "$H"
done
