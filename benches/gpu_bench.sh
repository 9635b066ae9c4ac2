#!/usr/bin/env bash
# The benchmark sweeps behind docs/BENCHMARKS.md, as run on the GPU machine.
# Usage: benches/gpu_bench.sh GBLUR_BINARY OUT_DIR [DEVICE]
set -euo pipefail
bin=$1 out=$2 dev=${3:-gpu}
mkdir -p "$out"
"$bin" devices >"$out/devices.txt"
"$bin" bench peak -d "$dev" --sizes 4096,8192 -q --markdown "$out/peak.md" --json >"$out/peak.json"
"$bin" bench transpose -d "$dev" -q --markdown "$out/transpose.md" --plot "$out/transpose.svg" --json >"$out/transpose.json"
"$bin" bench blur -d "$dev" --sizes 1024,2048,4096,8192 --sigma 5 --channels 1,4 -q \
    --markdown "$out/blur.md" --plot "$out/blur.svg" --json >"$out/blur.json"
"$bin" bench blur -d "$dev" --sizes 4096 --sigma 1,2,5,20,100 --channels 1 -q \
    --markdown "$out/blur_sigma.md" --json >"$out/blur_sigma.json"
