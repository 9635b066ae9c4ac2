#!/usr/bin/env bash
# gblur beside libvips for every input format both read: a 4000x3000 photo-like image (RGB,
# noisy) as JPEG, PNG, TIFF, WebP, HEIC, AVIF (these two written by libvips through libheif)
# and JPEG XL (lossy, written by libvips through libjxl; gblur reads it with jxl-oxide), each blurred at sigma 5 into a JPEG by `gblur IN OUT --sigma 5` and by
# `vips gaussblur IN OUT 5`, in RUNS rounds in which both run once, order alternating. Prints
# each tool's median wall time and gblur's over vips's as the median of the per-round ratios,
# with their range. Then the lossy outputs: the JPEG blurred at sigma 5 into AVIF (quality 50,
# AV1 speed 6: vips's effort 3) and lossy WebP (quality 80, method 4: vips's default effort),
# with each tool's file size; and HEIC (quality 50, x265's default preset in both). Installs libvips and libheif from Debian if missing.
# usage: benches/formats.sh [RUNS]     (W and H in the environment change the size)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-7}
W=${W:-4000}
H=${H:-3000}
PY=/usr/bin/python3
missing=()
command -v vips >/dev/null || missing+=(libvips-tools)
dpkg-query -W -f='${Status}' libheif1 2>/dev/null | grep -q "install ok installed" || missing+=(libheif1)
$PY -c 'import numpy, PIL' 2>/dev/null || missing+=(python3-numpy python3-pil)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
cargo build --release -q
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
$PY benches/make_test_image.py "$T/photo.png" "$W" "$H" rgb 5
vips copy "$T/photo.png" "$T/photo.jpg[Q=90]"
vips copy "$T/photo.png" "$T/photo.tif"
vips copy "$T/photo.png" "$T/photo.webp[Q=90]"
vips heifsave "$T/photo.png" "$T/photo.heic" --Q 80 2>/dev/null
vips heifsave "$T/photo.png" "$T/photo.avif" --compression av1 --Q 60 --effort 0 2>/dev/null
vips copy "$T/photo.png" "$T/photo.jxl[Q=90]"
echo "gblur $(git describe --always --dirty), $(vips --version), libheif $(target/release/gblur formats --json | $PY -c 'import json,sys,re; r=[x for x in json.load(sys.stdin) if x["format"]=="Heif"][0]; m=re.search(r"libheif ([0-9.]+)", r["read"]); print(m.group(1) if m else "missing")')"
echo "$(nproc) cores, ${W}x${H}, sigma 5, into JPEG, $RUNS rounds"
$PY - "$T" "$RUNS" <<'PY'
import os, statistics, subprocess, sys, time
t, runs = sys.argv[1], int(sys.argv[2])
tools = {
    "gblur": lambda i, o: ["target/release/gblur", i, o, "--sigma", "5", "-q"],
    "vips": lambda i, o: ["vips", "gaussblur", i, o, "5"],
}
print(f"{'input':6s} {'gblur s':>8s} {'vips s':>8s}   gblur / vips")
for ext in ["jpg", "png", "tif", "webp", "heic", "avif", "jxl"]:
    src = f"{t}/photo.{ext}"
    times = {k: [] for k in tools}
    for r in range(runs):
        order = list(tools) if r % 2 == 0 else list(tools)[::-1]
        for k in order:
            start = time.perf_counter()
            subprocess.run(tools[k](src, f"{t}/out-{k}.jpg"), check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[k].append(time.perf_counter() - start)
    ratios = [a / b for a, b in zip(times["gblur"], times["vips"])]
    print(f"{ext:6s} {statistics.median(times['gblur']):8.3f} {statistics.median(times['vips']):8.3f}"
          f"   {statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})")

outputs = {
    "avif": ("--quality", "50", "[Q=50,effort=3]"),
    "heic": ("--quality", "50", "[Q=50]"),
    "webp": ("--quality", "80", "[Q=80]"),
}
print(f"\n{'output':6s} {'gblur s':>8s} {'vips s':>8s}   gblur / vips   size gblur / vips (KB)")
src = f"{t}/photo.jpg"
for ext, (flag, q, opts) in outputs.items():
    tools = {
        "gblur": ["target/release/gblur", src, f"{t}/out-gblur.{ext}", "--sigma", "5", flag, q, "-q"],
        "vips": ["vips", "gaussblur", src, f"{t}/out-vips.{ext}{opts}", "5"],
    }
    times = {k: [] for k in tools}
    for r in range(runs):
        order = list(tools) if r % 2 == 0 else list(tools)[::-1]
        for k in order:
            start = time.perf_counter()
            subprocess.run(tools[k], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[k].append(time.perf_counter() - start)
    ratios = [a / b for a, b in zip(times["gblur"], times["vips"])]
    sizes = [os.path.getsize(f"{t}/out-{k}.{ext}") // 1024 for k in tools]
    print(f"{ext:6s} {statistics.median(times['gblur']):8.3f} {statistics.median(times['vips']):8.3f}"
          f"   {statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})   {sizes[0]} / {sizes[1]}")
PY
