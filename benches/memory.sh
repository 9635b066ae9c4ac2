#!/usr/bin/env bash
# Peak memory (maximum resident set size, from GNU time) of
#   - the main command on a 64 MP (8192×8192) RGBA8 PNG, on the Rust path and on the OpenCL
#     device, against the image's decoded size (256 MiB): the promise is at most 2.5×;
#   - gblur batch on folders of 10 and 40 images of 3 MP: bounded by the queue depth, so the
#     two peaks should match whatever the folder's size.
#   - gblur batch on several devices, for each device list in LISTS (e.g. LISTS="cpu,cpu 0,rust"):
#     the bound grows by one image per device, not with the folder.
# Usage: [LISTS="..."] benches/memory.sh [DEVICE=auto]     (DEVICE: what "the OpenCL device" runs means)
# Needs python3 with numpy and Pillow (benches/make_test_image.py) and GNU time (installed
# with apt when missing). Prints a Markdown table.
set -euo pipefail
device=${1:-auto}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ ! -x /usr/bin/time ]; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get install -y -qq time >/dev/null
fi
(cd "$root" && cargo build --release -q)
gblur="$root/target/release/gblur"

# Peak RSS in MiB of a command (its output is discarded; a failure stops the script).
peak_mib() {
    /usr/bin/time -f %M -o "$work/rss" "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
    echo $(( $(tail -1 "$work/rss") / 1024 ))
}

w=8192 h=8192
python3 "$root/benches/make_test_image.py" "$work/big.png" $w $h rgba
decoded_mib=$(( w * h * 4 / 1048576 ))
echo "| run | peak RSS (MiB) | × decoded size ($decoded_mib MiB) |"
echo "|---|---:|---:|"
for dev in rust "$device"; do
    mib=$(peak_mib "$gblur" "$work/big.png" "$work/out.png" --sigma 5 --device "$dev" -q)
    echo "| main command, 64 MP RGBA8 PNG, --device $dev | $mib | $(echo "scale=2; $mib / $decoded_mib" | bc) |"
done

python3 "$root/benches/make_test_image.py" "$work/one.jpg" 2048 1536 rgb
for n in 10 40; do
    mkdir -p "$work/in$n"
    for i in $(seq -w 1 $n); do cp "$work/one.jpg" "$work/in$n/img$i.jpg"; done
done
for dev in rust "$device" ${LISTS:-}; do
    for n in 10 40; do
        rm -rf "$work/out"
        mib=$(peak_mib "$gblur" batch "$work/in$n" "$work/out" --sigma 5 --device "$dev" -q)
        echo "| batch, $n × 3 MP RGB JPEG, --device $dev | $mib | - |"
    done
done
