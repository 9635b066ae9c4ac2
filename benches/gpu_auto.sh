#!/usr/bin/env bash
# Does `--device auto` run the faster path? On a GPU host: the main command on photo-like
# JPEGs of 1, 16 and 100 MP at sigma 5 with --device auto, gpu and rust.
#   first run: auto with gblur's cache folder and the OpenCL driver's own kernel cache both
#              empty (as after installing gblur), then a warm auto run for the difference;
#   rounds:    after `gblur calibrate` (as a user would run once after installing),
#              ROUNDS rounds of auto, gpu and rust once each in a rotating order; process wall
#              times, medians, and auto / min(gpu, rust) as the median of per-round ratios.
# usage: benches/gpu_auto.sh GBLUR_BINARY [ROUNDS=5] [SIZES="1024x1024 4896x3264 12288x8192"]
set -euo pipefail
bin=$(realpath "$1") rounds=${2:-5}
sizes=${3:-1024x1024 4896x3264 12288x8192}
here=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for s in $sizes; do
  python3 "$here/make_test_image.py" "$T/$s.jpg" "${s%x*}" "${s#*x}" rgb 3
done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(date -u +%F)"
python3 - "$bin" "$T" "$rounds" $sizes <<'PY'
import json, os, statistics, subprocess, sys, time
bin, t, rounds, sizes = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
warm_env = dict(os.environ, GBLUR_CACHE_DIR=f"{t}/cache")
subprocess.run([bin, "calibrate"], env=warm_env, check=True)

def run(path, device, env):
    t0 = time.perf_counter()
    p = subprocess.run([bin, path, f"{t}/out.jpg", "--sigma", "5", "--device", device, "--json", "-q"],
                       env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    r = json.loads(p.stdout)
    return wall, r.get("device", "?"), r.get("why")

for size in sizes:
    path = f"{t}/{size}.jpg"
    mp = eval(size.replace("x", "*")) / 1e6
    fresh = dict(os.environ, GBLUR_CACHE_DIR=f"{t}/fresh-{size}", CUDA_CACHE_PATH=f"{t}/nv-{size}")
    first, dev, why = run(path, "auto", fresh)
    warm, _, _ = run(path, "auto", dict(fresh))
    print(f"\n== {size} ({mp:.1f} MP) JPEG -> JPEG, sigma 5 ==")
    print(f"first run after install (caches empty), auto: {first:.3f} s on {dev}; a second run {warm:.3f} s;"
          f" difference {first - warm:+.3f} s")
    if why:
        print(f"  chosen: {why}")
    for n in ("gpu", "auto"):  # fill the warm cache (programs, calibration); not timed
        run(path, n, warm_env)
    names = ["auto", "gpu", "rust"]
    times = {n: [] for n in names}
    ran = {}
    for r in range(rounds):
        for k in range(3):
            n = names[(k + r) % 3]
            w, dev, why = run(path, n, warm_env)
            times[n].append(w)
            ran[n] = dev
    for n in names:
        print(f"  --device {n:<5} {statistics.median(times[n]):7.3f} s  ({ran[n]})")
    ratio = statistics.median(times["auto"][i] / min(times["gpu"][i], times["rust"][i]) for i in range(rounds))
    print(f"  auto / faster of gpu and rust: {ratio:.3f} (median of per-round ratios)")
PY
