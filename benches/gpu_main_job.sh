#!/usr/bin/env bash
# Runs the main job on the GPU machine: every transpose strategy and the direct pipeline on
# a 16 MP RGBA8 photo-like PNG, sigma 5, three runs each (the last is reported: the first pays
# for driver start-up). Usage: benches/gpu_main_job.sh GBLUR_BINARY OUT_DIR
set -euo pipefail
bin=$1 out=$2
work=$(mktemp -d)
here=$(dirname "$0")
python3 "$here/make_test_image.py" "$work/in.png" 4096 4096 rgba
"$bin" devices | tee "$out/devices.txt"
for t in naive local skewed padded padded-skewed tile32 tile32-skewed direct; do
    if [ "$t" = direct ]; then args=(--pipeline direct); else args=(--transpose "$t"); fi
    for run in 1 2 3; do
        "$bin" "$work/in.png" "$work/out.png" --sigma 5 --device gpu --png-compression fast \
            "${args[@]}" --json 2>>"$out/table_$t.txt" >"$out/run_$t.json"
    done
done
rm -rf "$work"
