#!/usr/bin/env bash
# Runs gblur on every file under DIR (a folder of other libraries' test images, e.g.
# ../shared/corpus/files) to PNG, TIFF and, for 8-bit inputs, JPEG, and classifies every run:
# ok, refused (one clean line), unclear refusal, crash, hang, wrong size, unreadable output,
# temp file left, input changed. Prints the counts and every run in a bad class; exits 1 if
# there is one. Sizes are checked with vipsheader (libvips-tools) where vips reads the input.
# usage: benches/corpus.sh DIR [--jobs N] [--timeout S] [--out runs.tsv]
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: benches/corpus.sh DIR [--jobs N] [--timeout S] [--out TSV]" >&2; exit 2; }
command -v vipsheader >/dev/null || echo "vipsheader not found (apt-get install libvips-tools): sizes are checked against gblur's own report" >&2
cargo build --release -q
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
# --pixels needs numpy and OpenCV (apt-get install python3-numpy python3-opencv).
exec "$PY" benches/corpus.py "$PWD/target/release/gblur" "$@"
