#!/usr/bin/env bash
# Runs every fuzz target in turn for SECONDS each (default 540), niced, from the committed
# seeds plus the local grown corpus (fuzz/corpus/, not committed). Crashes land in
# fuzz/artifacts/TARGET/. Needs cargo-fuzz and a nightly toolchain (or RUSTC_BOOTSTRAP=1).
# Usage: fuzz/run.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-540}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(decode_blur_encode filter cli_args metadata)
toolchain=+nightly
# ASan takes two function-local tables of the same name in libjpeg's jcdctmgr.c (both
# `static`, so no clash) for a violation of the one-definition rule and stops at start-up.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_odr_violation=0}
rustup run nightly true 2>/dev/null || { toolchain=""; export RUSTC_BOOTSTRAP=1; }
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    echo "== $t: $secs s"
    # One rayon thread: the fuzzer's process stays on one core.
    RAYON_NUM_THREADS=1 nice -n 19 cargo $toolchain fuzz run -O "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -max_len=16384 -print_final_stats=1 ||
        echo "== $t: stopped early: see fuzz/artifacts/$t/"
done
