#!/bin/bash
# The matmul and reduce ladders on a GPU machine, with cuBLAS (FP32, TF32 off) and the copy
# kernel measured in the same run. usage: benches/gpu_ladders.sh GBLUR OUT_DIR [quick]
# `quick` runs only the tiled rungs at 4096³ over many rung-10 presets (tuning).
set -u
B=$1
O=$2
mkdir -p "$O"
HERE=$(dirname "$0")
"$B" devices | tee "$O/devices.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee "$O/nvidia-smi.txt"
PYTHONUNBUFFERED=1 python3 "$HERE/cublas_matmul.py" 4096 2048 1024 2000 | tee "$O/cublas.txt"
TUNE=all,64x128x8-8x8,64x64x16-8x8,128x128x16-16x8
"$B" bench matmul -d gpu --sizes 4096 --rungs 7,8,9,10 --presets "$TUNE" --no-cpu | tee "$O/tune.txt"
[ "${3:-}" = quick ] && exit 0
"$B" bench peak -d gpu --sizes 8192 | tee "$O/peak.txt"
"$B" bench reduce -d gpu --csv "$O/reduce.csv" --markdown "$O/reduce.md" --plot "$O/reduce.svg" | tee "$O/reduce.txt"
timeout 330 "$B" bench matmul -d gpu --csv "$O/matmul.csv" --markdown "$O/matmul.md" --plot "$O/matmul.svg" | tee "$O/matmul.txt"
timeout 60 "$B" bench matmul -d gpu --type i32 --sizes 2048 --rungs 3,7,8,9,10 --presets 128x128x8-8x8 --no-cpu | tee "$O/matmul-i32.txt"
