#!/usr/bin/env bash
# Peak host memory (maximum resident set size) of the main command on the GPU machine, which
# has no GNU time: python's getrusage of the child. A 64 MP (8192×8192) RGBA8 PNG, blurred on
# the GPU (8-bit upload, upload::blur_u8), on the GPU as planar f32 (--pipeline transpose
# keeps the host conversion), and on the Rust path; against the decoded size (256 MiB).
# Usage: benches/gpu_memory.sh GBLUR_BINARY   (prints a Markdown table)
set -euo pipefail
bin=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$(dirname "$0")/make_test_image.py" "$work/big.png" 8192 8192 rgba
decoded_mib=256
echo "| run | peak RSS (MiB) | × decoded size ($decoded_mib MiB) | wall s |"
echo "|---|---:|---:|---:|"
for args in "--device gpu" "--device gpu --pipeline transpose" "--device rust"; do
    python3 - "$bin" "$work/big.png" "$work/out.png" $args <<'PY'
import resource, subprocess, sys, time
t = time.time()
subprocess.run(sys.argv[1:] + ["--sigma", "5", "--png-compression", "fast", "-q"], check=True)
wall = time.time() - t
mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"| main command, 64 MP RGBA8 PNG, {' '.join(sys.argv[4:])} | {mib:.0f} | {mib / 256:.2f} | {wall:.2f} |")
PY
done
