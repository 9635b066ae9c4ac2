#!/usr/bin/env bash
# CMYK through its ICC profile: a 4000x3000 photo-like image turned into CMYK by libvips with
# a real press profile (Artifex's SWOP profile, ghostscript's default_cmyk.icc from Debian's
# libgs-common) and saved as a JPEG carrying it. Then, in RUNS rounds in which both run once,
# order alternating: `gblur IN OUT.png --sigma 5` (converts through the profile, then blurs)
# against `vips icc_transform IN T.v srgb` followed by `vips gaussblur T.v OUT.png 5`
# (relative colorimetric, as both default to; float precision and a kernel down to 1e-3, so
# that vips's own rounding does not blur the comparison). Prints each tool's median wall time,
# gblur's over vips's as the median of the per-round ratios with their range, and how far
# apart the two PNGs are (largest and mean difference, in levels). Installs what is missing.
# Then the same JPEG kept CMYK: blurred into a CMYK JPEG by both tools (see below).
# usage: benches/cmyk.sh [RUNS]     (W and H in the environment change the size)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-7}
W=${W:-4000}
H=${H:-3000}
PY=/usr/bin/python3
PROFILE=${PROFILE:-/usr/share/color/icc/ghostscript/default_cmyk.icc}
missing=()
command -v vips >/dev/null || missing+=(libvips-tools)
[ -f "$PROFILE" ] || missing+=(libgs-common)
$PY -c 'import numpy, PIL' 2>/dev/null || missing+=(python3-numpy python3-pil)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
cargo build --release -q
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
$PY benches/make_test_image.py "$T/photo.png" "$W" "$H" rgb 5
vips icc_transform "$T/photo.png" "$T/cmyk.v" "$PROFILE" --input-profile srgb
vips jpegsave "$T/cmyk.v" "$T/cmyk.jpg" --Q 90
echo "gblur $(git describe --always --dirty), $(vips --version), $(nproc) cores"
echo "${W}x${H} CMYK JPEG ($(du -k "$T/cmyk.jpg" | cut -f1) KB, $(basename "$PROFILE")) -> sRGB PNG, sigma 5, $RUNS rounds"
$PY - "$T" "$RUNS" <<'PY'
import statistics, subprocess, sys, time
import numpy as np
from PIL import Image
t, runs = sys.argv[1], int(sys.argv[2])
src = f"{t}/cmyk.jpg"
tools = {
    "gblur": [["target/release/gblur", src, f"{t}/gblur.png", "--sigma", "5", "-q"]],
    "vips": [["vips", "icc_transform", src, f"{t}/srgb.v", "srgb"],
             ["vips", "gaussblur", f"{t}/srgb.v", f"{t}/vips.png", "5",
              "--precision", "float", "--min-ampl", "0.001"]],
}
times = {k: [] for k in tools}
for r in range(runs):
    for k in (list(tools) if r % 2 == 0 else list(tools)[::-1]):
        start = time.perf_counter()
        for cmd in tools[k]:
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times[k].append(time.perf_counter() - start)
ratios = [a / b for a, b in zip(times["gblur"], times["vips"])]
print(f"gblur {statistics.median(times['gblur']):.3f} s, vips {statistics.median(times['vips']):.3f} s:"
      f" gblur / vips {statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})")
a = np.asarray(Image.open(f"{t}/gblur.png").convert("RGB"), dtype=np.int16)
b = np.asarray(Image.open(f"{t}/vips.png").convert("RGB"), dtype=np.int16)
d = np.abs(a - b)
print(f"gblur against vips: largest difference {d.max()} levels, mean {d.mean():.2f}")
PY

# CMYK kept: the same JPEG blurred into a CMYK JPEG by both tools at their defaults (gblur
# quality 90, vips 75: the ink error is given against an exact per-channel blur, computed in
# float with scipy, so that each tool's coding loss shows), both keeping the profile.
echo
echo "${W}x${H} CMYK JPEG -> CMYK JPEG, sigma 5, $RUNS rounds"
$PY - "$T" "$RUNS" <<'PY'
import statistics, subprocess, sys, time
import numpy as np
from PIL import Image
t, runs = sys.argv[1], int(sys.argv[2])
src = f"{t}/cmyk.jpg"
tools = {
    "gblur": ["target/release/gblur", src, f"{t}/gblur.jpg", "--sigma", "5", "-q"],
    "vips": ["vips", "gaussblur", src, f"{t}/vips.jpg", "5"],
}
times = {k: [] for k in tools}
for r in range(runs):
    for k in (list(tools) if r % 2 == 0 else list(tools)[::-1]):
        start = time.perf_counter()
        subprocess.run(tools[k], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times[k].append(time.perf_counter() - start)
ratios = [a / b for a, b in zip(times["gblur"], times["vips"])]
print(f"gblur {statistics.median(times['gblur']):.3f} s, vips {statistics.median(times['vips']):.3f} s:"
      f" gblur / vips {statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})")
profile = Image.open(src).info.get("icc_profile")
try:
    from scipy.ndimage import gaussian_filter
    inks = np.asarray(Image.open(src), dtype=np.float64)
    exact = np.stack([gaussian_filter(inks[..., c], 5, mode="nearest", truncate=6) for c in range(4)], -1)
except ImportError:
    exact = None
for k in tools:
    out = Image.open(f"{t}/{k}.jpg")
    line = f"{k}: {out.mode}, profile {'kept' if out.info.get('icc_profile') == profile else 'NOT kept'}"
    if exact is not None:
        d = np.abs(np.asarray(out, dtype=np.float64) - exact)
        line += f", inks against the exact blur: largest {d.max():.1f} levels, mean {d.mean():.2f}"
    print(line)
PY
