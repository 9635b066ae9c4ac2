#!/usr/bin/env bash
# gblur sharpen beside vips sharpen and ImageMagick's -unsharp on the same 16 MP photo-like
# JPEG, JPEG out, at sigma 2 and 20 (amount 1, threshold 0): RUNS paired rounds in which every
# command runs once, the order rotating; prints each command's median wall time and peak
# memory, and gblur's time over each peer's as the median of the per-round ratios with their
# range. vips sharpen and -unsharp differ from gblur's unsharp mask in detail (vips sharpens
# L* with a contrast curve; ImageMagick cuts its kernel at about 3 sigma); each is run as its
# documentation gives the equivalent of "sigma S, amount 1".
# usage: benches/sharpen.sh [RUNS]     (W and H in the environment change the 4896x3264 size)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
W=${W:-4896}
H=${H:-3264}
PY=/usr/bin/python3
missing=()
command -v vips >/dev/null || missing+=(libvips-tools)
command -v convert >/dev/null || missing+=(imagemagick)
[ -x /usr/bin/time ] || missing+=(time)
$PY -c 'import numpy, PIL' 2>/dev/null || missing+=(python3-numpy python3-pil)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
cargo build --release -q
G=$PWD/target/release/gblur
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
$PY benches/make_test_image.py "$T/photo.jpg" "$W" "$H" rgb 3
# ImageMagick's resource limits (Debian's policy.xml) would refuse a 16 MP image otherwise.
export MAGICK_WIDTH_LIMIT=100000 MAGICK_HEIGHT_LIMIT=100000 MAGICK_AREA_LIMIT=4GB
for s in 2 20; do
    {
        printf '%s|%s|%s\n' \
            "gblur sharpen --sigma $s (defaults: amount 1, quality 90)" "$T/g$s.jpg" "$G sharpen $T/photo.jpg $T/g$s.jpg --sigma $s -q" \
            "vips sharpen --sigma $s, Q 90" "$T/v$s.jpg" "vips sharpen $T/photo.jpg $T/v$s.jpg[Q=90] --sigma $s" \
            "convert -unsharp 0x$s+1+0, quality 90" "$T/m$s.jpg" "convert $T/photo.jpg -unsharp 0x$s+1+0 -quality 90 $T/m$s.jpg"
        echo "ratio|0|1|gblur / vips sharpen"
        echo "ratio|0|2|gblur / ImageMagick -unsharp"
    } | $PY -c '
import os, statistics, subprocess, sys
t, runs, title = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cmds, ratios = [], []
for line in sys.stdin.read().splitlines():
    f = line.split("|")
    if f[0] == "ratio":
        ratios.append((int(f[1]), int(f[2]), f[3]))
    elif line:
        cmds.append((f[0], f[1], f[2].split()))
times = [[None] * len(cmds) for _ in range(runs)]
rss = [0] * len(cmds)
for r in range(runs):
    for k in range(len(cmds)):
        i = (k + r) % len(cmds)
        subprocess.run(["/usr/bin/time", "-o", t + "/time", "-f", "%e %M"] + cmds[i][2],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        s, kib = open(t + "/time").read().split()[-2:]
        times[r][i], rss[i] = float(s), max(rss[i], int(kib))
print(f"\n== {title} ({runs} rounds; median s, peak MiB, output MB) ==")
for i, (label, out, _) in enumerate(cmds):
    med = statistics.median(x[i] for x in times)
    print(f"{label:<48} {med:7.2f} s {rss[i] // 1024:6d} MiB {os.path.getsize(out) / 1e6:6.1f} MB")
for a, b, text in ratios:
    each = [x[a] / x[b] for x in times]
    print(f"  -> {statistics.median(each):.2f}x ({text}; median of the per-round ratios, range {min(each):.2f}-{max(each):.2f})")
' "$T" "$RUNS" "sharpen, ${W}x${H} JPEG -> JPEG, sigma $s"
done
