#!/usr/bin/env bash
# Writes the committed seed corpora in fuzz/seeds/ from samples/: small crops of the sample
# photos in every format gblur reads (a few KB each), a header-only decompression bomb, plain
# command lines, and raw sample bytes for the filter target. Needs python3 with Pillow and a
# release build of gblur (to write the formats Pillow lacks: QOI, OpenEXR, HDR, float TIFF).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seeds="$root/fuzz/seeds"
gblur="$root/target/release/gblur"
[ -x "$gblur" ] || (cd "$root" && cargo build --release -q)
rm -rf "$seeds"
mkdir -p "$seeds/decode_blur_encode" "$seeds/filter" "$seeds/cli_args"
d="$seeds/decode_blur_encode"

python3 - "$root/samples" "$d" "$seeds/filter" <<'PY'
import struct, sys, zlib
from PIL import Image
samples, out, filt = sys.argv[1:4]
coffee = Image.open(f"{samples}/coffee.png").crop((300, 150, 332, 174))   # 32x24 RGB
rgba = Image.open(f"{samples}/chelsea-rgba.png").crop((40, 133, 64, 157))  # 24x24, across the alpha edge
gray = Image.open(f"{samples}/camera-gray.png").crop((100, 60, 132, 84))  # 32x24 L
cat = Image.open(f"{samples}/chelsea.jpg").crop((200, 100, 232, 124))
coffee.save(f"{out}/coffee-rgb.png")
rgba.save(f"{out}/chelsea-rgba.png")
gray.save(f"{out}/camera-gray.png")
gray.convert("I;16").save(f"{out}/camera-gray16.png")
cat.save(f"{out}/chelsea.jpg", quality=80)
cat.save(f"{out}/chelsea-progressive.jpg", quality=80, progressive=True)
coffee.save(f"{out}/coffee.bmp")
coffee.save(f"{out}/coffee.ppm")
gray.save(f"{out}/camera.pgm")
coffee.save(f"{out}/coffee.ico", sizes=[(24, 24)])
rgba.save(f"{out}/chelsea-rgba.tga")
coffee.save(f"{out}/coffee.tif")
coffee.save(f"{out}/coffee.gif")
coffee.save(f"{out}/coffee-lossy.webp", quality=60)
# A decompression bomb: a valid PNG header declaring 100000 x 100000 RGBA8, one tiny IDAT.
def chunk(t, data):
    return struct.pack(">I", len(data)) + t + data + struct.pack(">I", zlib.crc32(t + data))
ihdr = struct.pack(">IIBBBBB", 100000, 100000, 8, 6, 0, 0, 0)
open(f"{out}/bomb-100000x100000.png", "wb").write(
    b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b""))
# Filter target: raw sample bytes (sigmas, sizes and samples all come from photo data).
open(f"{filt}/coffee-raw", "wb").write(coffee.tobytes()[:2048])
open(f"{filt}/camera-raw", "wb").write(gray.tobytes()[:768])
open(f"{filt}/chelsea-rgba-raw", "wb").write(rgba.tobytes()[:2048])
PY

for ext in qoi exr hdr webp; do
    "$gblur" "$d/coffee-rgb.png" "$d/coffee.$ext" --sigma 0.5 --device rust -q
done
"$gblur" "$d/chelsea-rgba.png" "$d/chelsea-rgba.exr" --sigma 0.5 --device rust -q
"$gblur" "$d/chelsea-rgba.exr" "$d/chelsea-rgba-f32.tif" --sigma 0.5 --device rust -q
for f in gray16_7x5.png icc_srgb_16x16.png orientation6_8x4.jpg rgba_halo_9x9.png; do
    cp "$root/tests/fixtures/$f" "$d/"
done
head -c 700 "$d/coffee-rgb.png" >"$d/truncated.png"

c="$seeds/cli_args"
printf 'samples/coffee.png\0/tmp/out.png\0--sigma\0005' >"$c/main"
printf 'photo.jpg\0blurred.jpg\0--sigma-x\0008\0--sigma-y\0002\0--json\0--quality\00095' >"$c/axes"
printf 'in.png\0out.tif\0-s\0001.5\0--method\0fir\0--pipeline\0transpose\0--transpose\0tile32-skewed\0--device\0rust\0--linear\0--max-memory\00064\0-v' >"$c/options"
printf 'batch\0in\0out\0--sigma\0003\0--format\0png\0--overwrite\0--shard\0002/8\0--json\0-q' >"$c/batch"
printf 'batch\0photos\0photos\0--sigma\0002\0--in-place\0--png-compression\0best' >"$c/batch-in-place"
printf 'devices\0--json' >"$c/devices"
printf 'bench\0blur\0--sizes\000512,4000x3000\0--sigma\0005,40\0--channels\0001,4\0--runs\0003\0--csv\0b.csv' >"$c/bench"
printf 'bench\0transpose\0--device\0gpu\0--markdown\0t.md\0--plot\0t.svg' >"$c/bench-transpose"
ls -l "$seeds"/*
