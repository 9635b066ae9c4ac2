#!/usr/bin/env bash
# Runs the main job on the GPU machine on a 16 MP RGBA8 photo-like PNG at sigma 5: the default
# pipeline (auto) three times, then the transpose and direct pipelines; the first run pays for
# driver start-up. Usage: benches/gpu_main_job.sh GBLUR_BINARY OUT_DIR
set -euo pipefail
bin=$1 out=$2
work=$(mktemp -d)
here=$(dirname "$0")
python3 "$here/make_test_image.py" "$work/in.png" 4096 4096 rgba
for variant in auto auto auto transpose direct; do
    "$bin" "$work/in.png" "$work/out.png" --sigma 5 --device gpu --png-compression fast \
        --pipeline "$variant" --json 2>>"$out/table_$variant.txt" >"$out/run_$variant.json"
done
rm -rf "$work"
