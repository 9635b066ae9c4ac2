#!/usr/bin/env bash
# The benchmark sweeps behind docs/BENCHMARKS.md, as run on the GPU machine. Each step is
# bounded in time and everything so far is packed into $pack after each step, so a cut-off
# run still brings back what it measured.
# Usage: benches/gpu_bench.sh GBLUR_BINARY OUT_DIR PACK.tgz [DEVICE]
# SKIP="transpose peak" leaves those steps out.
set -uo pipefail
bin=$1 out=$2 pack=$3 dev=${4:-gpu}
mkdir -p "$out"
step() {
    local name=$1
    shift
    case " ${SKIP:-} " in *" $name "*) return ;; esac
    echo "== $name $(date +%T)"
    timeout 170 "$@" >"$out/$name.json" 2>"$out/$name.err" || echo "$name exited $?"
    tar czf "$pack" -C "$out" .
}
"$bin" devices >"$out/devices.txt"
step blur "$bin" bench blur -d "$dev" --sizes 4096,8192 --sigma 5 --channels 1,4 -q \
    --markdown "$out/blur.md" --plot "$out/blur.svg" --json
step transpose "$bin" bench transpose -d "$dev" -q --markdown "$out/transpose.md" --plot "$out/transpose.svg" --json
step peak "$bin" bench peak -d "$dev" --sizes 4096,8192 -q --markdown "$out/peak.md" --json
step blur_sizes "$bin" bench blur -d "$dev" --sizes 512,1024,2048 --sigma 5 --channels 1 -q \
    --markdown "$out/blur_sizes.md" --plot "$out/blur_sizes.svg" --json
step blur_sigma "$bin" bench blur -d "$dev" --sizes 4096 --sigma 1,20,100 --channels 1 -q \
    --markdown "$out/blur_sigma.md" --json
