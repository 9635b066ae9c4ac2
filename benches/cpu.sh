#!/usr/bin/env bash
# gblur without a GPU against the tools a user would script instead, on the same cores and the
# same files, in one run:
#   in memory: `gblur bench cpu` (banded Rust blur) vs OpenCV's GaussianBlur, 8-bit RGB and one
#              f32 channel, sigma 5 and 20;
#   against libblur: the `libblur` crate's exact Gaussian and its approximations on the same
#              pixels and cores (benches/libblur, its own Cargo workspace), with every tool's
#              distance from the exact Gaussian measured on 512x512 crops, and PAIRED (9) rounds
#              in one process where gblur, libblur's Gaussian and its stack blur each blur once
#              per round: the per-round ratio holds while a shared machine's speed drifts;
#   end to end: `gblur in out --sigma 5` vs `vips gaussblur`, JPEG -> JPEG and PNG -> PNG, in
#              RUNS rounds of every command once (rotating order): median wall time, peak RSS,
#              and each ratio as the median of the per-round ratios.
# Installs the peers from Debian if missing; writes its test images to a temporary folder.
# usage: benches/cpu.sh [RUNS]     (W and H in the environment change the 4896x3264 size;
#        SECTIONS="jpeg png" runs only those of: memory libblur jpeg png;
#        BASE=path/to/another/gblur adds that build to the end-to-end rounds, each command
#        paired with this build's, the strip engine too: a change's no-speed-lost check)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
W=${W:-4896}
H=${H:-3264}
PY=/usr/bin/python3
SECTIONS=${SECTIONS:-memory libblur jpeg png}
want() { [[ " $SECTIONS " == *" $1 "* ]]; }

missing=()
command -v vips >/dev/null || missing+=(libvips-tools)
[ -x /usr/bin/time ] || missing+=(time)
$PY -c 'import cv2, numpy, PIL' 2>/dev/null || missing+=(python3-opencv python3-numpy python3-pil)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -q && apt-get install -y -q "${missing[@]}"
fi
cargo build --release -q
G=$PWD/target/release/gblur
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
$PY benches/make_test_image.py "$T/photo.jpg" "$W" "$H" rgb 3
$PY benches/make_test_image.py "$T/photo.png" "$W" "$H" rgb 3
# A smooth photo: the same scene without its grain (codec cost grows with entropy).
vips gaussblur "$T/photo.png" "$T/smooth.png" 1.5
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "image:   ${W}x${H} ($(( W * H / 1000000 )) MP) photo-like, RGB 8-bit; $RUNS timed runs, medians"

if want memory; then
echo
echo "== in memory (MP/s) =="
"$G" bench cpu --sizes "${W}x${H}" --sigma 5,20 --runs "$RUNS" --json -q --device rust >"$T/gblur.json"
$PY benches/opencv_blur.py "$W" "$H" "$RUNS" 5 20 >"$T/opencv.jsonl"
$PY - "$T/gblur.json" "$T/opencv.jsonl" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
o = [json.loads(l) for l in open(sys.argv[2])]
print(f"{'layout':<15} {'sigma':>5} {'gblur':>8} {'OpenCV':>8} {'gblur/OpenCV':>13}")
for r in o:
    name = {"RGB 8-bit": "rust banded, RGB 8-bit", "1 channel f32": "rust banded, 1 channel f32"}[r["layout"]]
    mine = next(x for x in g if x["name"] == name and x["sigma"] == r["sigma"])
    print(f"{r['layout']:<15} {r['sigma']:>5.0f} {mine['mpps']:>8.0f} {r['mpps']:>8.0f} {mine['mpps'] / r['mpps']:>12.2f}x")
print(f"gblur: {g[0]['device']}; OpenCV: {o[0]['tool']}")
PY

fi
if want libblur; then
echo
echo "== in memory against libblur (benches/libblur; same pixels as gblur's rows, 2 threads) =="
LB=""
if ! command -v cargo >/dev/null; then
  echo "libblur: not measured (no cargo to build benches/libblur)"
elif ! cargo build --release -q --locked --manifest-path benches/libblur/Cargo.toml 2>"$T/libblur-build.log"; then
  echo "libblur: not measured (benches/libblur failed to build:)"
  tail -5 "$T/libblur-build.log" | sed 's/^/  /'
else
  LB=benches/libblur/target/release/libblur-bench
fi
if [ -n "$LB" ]; then
  # Accuracy: every tool blurs the same 512x512 crops (centre of the photo, and noise).
  A=$T/accuracy
  "$LB" tests "$A" --accuracy-image "$T/photo.png"
  for s in 5 20; do
    for t in photo noise; do
      "$G" "$A/${t}_rgb8.png" "$A/gblur_${t}_rgb8_s$s.png" --sigma $s --device rust -q
      "$G" "$A/${t}_f32.tiff" "$A/gblur_${t}_f32_s$s.tiff" --sigma $s --device rust -q
    done
  done
  $PY - "$A" <<'PY'
import sys
import cv2
import numpy as np
a = sys.argv[1]
for s in (5, 20):
    for t in ("photo", "noise"):
        blur = lambda img: cv2.GaussianBlur(img, (0, 0), s, sigmaY=s, borderType=cv2.BORDER_REPLICATE)
        cv2.imwrite(f"{a}/opencv_{t}_rgb8_s{s}.png", blur(cv2.imread(f"{a}/{t}_rgb8.png")))
        plane = np.fromfile(f"{a}/{t}_f32.f32", dtype="<f4")
        n = int(round(plane.size ** 0.5))
        blur(plane.reshape(n, n)).astype("<f4").tofile(f"{a}/opencv_{t}_f32_s{s}.f32")
PY
  "$LB" --size "${W}x${H}" --runs "$RUNS" --sigmas 5,20 --accuracy-image "$T/photo.png" \
    --peers "$A" --json "$T/libblur.jsonl" --paired "${PAIRED:-9}" >"$T/libblur.md"
  # gblur again right after libblur: the machine is shared, so its load drifts between runs.
  "$G" bench cpu --sizes "${W}x${H}" --sigma 5,20 --runs "$RUNS" --json -q --device rust >"$T/gblur2.json"
  $PY - "$T/gblur.json" "$T/gblur2.json" "$T/opencv.jsonl" "$T/libblur.jsonl" <<'PY'
import json, sys
g, g2 = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
o = [json.loads(l) for l in open(sys.argv[3])]
lb = [json.loads(l) for l in open(sys.argv[4])]
times = [r for r in lb if r["kind"] == "time"]
acc = [r for r in lb if r["kind"] == "accuracy"]
gname = {"RGB 8-bit": "rust banded, RGB 8-bit", "1 channel f32": "rust banded, 1 channel f32"}

def accuracy(tool, layout, sigma, variant="", setting=""):
    r = next((a for a in acc if a["tool"] == tool and a["layout"] == layout and a["sigma"] == sigma
              and a["variant"] == variant and a["setting"] == setting), None)
    if r is None or r["photo_max"] is None:
        return "  (not measured)"
    worst = max(r["photo_max"], r["noise_max"])
    inside = max(r["photo_max_inside"], r["noise_max_inside"])
    return f"{worst:8.1e} {inside:8.1e} {r['photo_mean']:8.1e}"

mp = lambda r: r["mpps"] * r["median_ms"] / r["min_ms"]  # MP/s of the fastest run
print(f"{'layout':<14} {'sigma':>5}  {'tool':<52} {'MP/s':>5} {'best':>5} {'gblur/it':>8} {'best':>6}  {'max err':>8} {'inside':>8} {'mean':>8}")
for layout in ("RGB 8-bit", "1 channel f32"):
    for sigma in (5.0, 20.0):
        runs = [next(x for x in r if x["name"] == gname[layout] and x["sigma"] == sigma) for r in (g, g2)]
        mine = (sum(r["mpps"] for r in runs) / 2, max(mp(r) for r in runs))
        label = f"gblur (banded; {runs[0]['mpps']:.0f} before, {runs[1]['mpps']:.0f} after libblur)"
        rows = [(label, mine, accuracy("gblur", layout, sigma))]
        cv = next((r for r in o if r["layout"] == layout and r["sigma"] == sigma), None)
        if cv:
            rows.append(("OpenCV GaussianBlur", (cv["mpps"], mp(cv)), accuracy("opencv", layout, sigma)))
        for r in times:
            if r["layout"] == layout and r["sigma"] == sigma:
                name = f"{r['variant']}, {r['setting']}"
                if r["measured_sigma"].startswith("broken"):
                    name += " [WRONG OUTPUT]"
                rows.append((name, (r["mpps"], mp(r)), accuracy(r["tool"], layout, sigma, r["variant"], r["setting"])))
        for name, (med, best), err in rows:
            ratio = "" if name.startswith("gblur") else f"{mine[0] / med:7.2f}x {mine[1] / best:5.2f}x"
            print(f"{layout:<14} {sigma:>5.0f}  {name:<52} {med:>5.0f} {best:>5.0f} {ratio:>15}  {err}")
print(f"MP/s: median run (gblur: mean of its runs before and after libblur); best: fastest run (gblur:")
print(f"of both). {times[0]['tool']}: {times[0]['threads']} threads, clamped edges. Errors: distance from an exact")
print("Gaussian (f64, kernel to 6 sigma) in units of the full range on 512x512 crops; max err: worst")
print("anywhere on the photo crop or noise, inside: 4 sigma or more from the edges, mean: photo crop.")
print("8-bit rounding alone is up to 2.0e-3 max, 1.0e-3 mean. Full libblur tables:")
PY
  sed 's/^/  /' "$T/libblur.md"
  echo
  echo "== gblur and libblur paired in one process (the ratio to trust on a shared machine) =="
  sed -n '/^## Paired/,/^## Distance/p' "$T/libblur.md" | grep '^|'
fi
fi

# End to end: every command of a section once per round, in an order that rotates, RUNS
# rounds; each ratio is the median of the per-round ratios (the machine's speed drifts between
# rounds, far less within one), each time the median, each peak RSS the largest.
rounds() { # section title; stdin: "label|output|command|args..." lines, then "ratio|a|b|text"
  $PY -c '
import os, statistics, subprocess, sys, time
t, runs, title = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cmds, ratios = [], []
for line in sys.stdin.read().splitlines():
    f = line.split("|")
    if f[0] == "ratio":
        ratios.append((int(f[1]), int(f[2]), f[3]))
    elif line:
        cmds.append((f[0], f[1], f[2:]))
times = [[None] * len(cmds) for _ in range(runs)]
rss = [0] * len(cmds)
for r in range(runs):
    for k in range(len(cmds)):
        i = (k + r) % len(cmds)
        # The wall by the clock (time(1) counts in 10 ms steps); the peak RSS from time(1).
        start = time.perf_counter()
        subprocess.run(["/usr/bin/time", "-o", t + "/time", "-f", "%M"] + cmds[i][2],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        took = time.perf_counter() - start
        kib = open(t + "/time").read().split()[-1]
        times[r][i], rss[i] = took, max(rss[i], int(kib))
print(f"\n== end to end, {title} ({runs} rounds; median s, peak MiB, output MB) ==")
for i, (label, out, _) in enumerate(cmds):
    med = statistics.median(x[i] for x in times)
    print(f"{label:<58} {med:7.3f} s {rss[i] // 1024:6d} MiB {os.path.getsize(out) / 1e6:6.1f} MB")
for a, b, text in ratios:
    each = [x[b] / x[a] for x in times]
    r = statistics.median(each)
    print(f"  -> {r:.2f}x ({text}; median of the per-round ratios, range {min(each):.2f}-{max(each):.2f})")
' "$T" "$RUNS" "$1"
}

# With BASE: that build's commands, after the section's first five (JPEG) or six (PNG).
base_jpeg() {
  [ -n "${BASE:-}" ] || return 0
  echo "gblur at BASE (defaults)|$T/b90.jpg|$BASE|$T/photo.jpg|$T/b90.jpg|--sigma|5|-q"
  echo "ratio|5|0|this build / BASE, defaults"
}
base_png() { # the input's name
  [ -n "${BASE:-}" ] || return 0
  echo "gblur at BASE (default)|$T/bf.png|$BASE|$T/$1.png|$T/bf.png|--sigma|5|-q"
  echo "gblur --engine strips (streamed)|$T/gt.png|$G|$T/$1.png|$T/gt.png|--sigma|5|-q|--engine|strips"
  echo "gblur at BASE --engine strips|$T/bt.png|$BASE|$T/$1.png|$T/bt.png|--sigma|5|-q|--engine|strips"
  echo "ratio|6|0|this build / BASE, default"
  echo "ratio|8|7|this build / BASE, the strip engine"
}

if want jpeg; then
rounds "JPEG -> JPEG, sigma 5 (decoded image: $(( W * H * 3 / 1048576 )) MiB)" <<EOF
gblur (defaults: quality 90, 4:4:4)|$T/g90.jpg|$G|$T/photo.jpg|$T/g90.jpg|--sigma|5|-q
gblur --quality 75 (4:2:0)|$T/g75.jpg|$G|$T/photo.jpg|$T/g75.jpg|--sigma|5|-q|--quality|75
vips gaussblur (defaults: Q 75, 4:2:0, integer taps to 1.79 sigma)|$T/v75.jpg|vips|gaussblur|$T/photo.jpg|$T/v75.jpg|5
vips gaussblur out.jpg[Q=90]|$T/v90.jpg|vips|gaussblur|$T/photo.jpg|$T/v90.jpg[Q=90]|5
vips --precision float --min-ampl 0.001 (accurate), Q 90|$T/va.jpg|vips|gaussblur|$T/photo.jpg|$T/va.jpg[Q=90]|5|--precision|float|--min-ampl|0.001
ratio|1|2|vips default / gblur, both Q 75
ratio|0|3|vips / gblur, both Q 90
ratio|0|2|vips defaults / gblur defaults
ratio|0|4|vips accurate / gblur, Q 90
$(base_jpeg)
EOF
fi

if want png; then
for img in photo smooth; do
rounds "PNG -> PNG, sigma 5, $img" <<EOF
gblur (default: --png-compression fast, fdeflate, adaptive filter)|$T/gf.png|$G|$T/$img.png|$T/gf.png|--sigma|5|-q
gblur --png-compression small (zlib level 6, adaptive filter)|$T/gs.png|$G|$T/$img.png|$T/gs.png|--sigma|5|-q|--png-compression|small
gblur --png-compression best (zlib level 9, adaptive filter)|$T/gb.png|$G|$T/$img.png|$T/gb.png|--sigma|5|-q|--png-compression|best
vips (defaults: level 6, no filter)|$T/vd.png|vips|gaussblur|$T/$img.png|$T/vd.png|5
vips out.png[compression=1] (no filter)|$T/vf.png|vips|gaussblur|$T/$img.png|$T/vf.png[compression=1]|5
vips out.png[filter=all] (level 6, libpng adaptive filter)|$T/va.png|vips|gaussblur|$T/$img.png|$T/va.png[filter=all]|5
ratio|3|0|gblur default / vips default
ratio|4|0|gblur fast / vips fastest
ratio|5|1|gblur small / vips level 6 with adaptive filtering
$(base_png "$img")
EOF
done
fi
