#!/usr/bin/env bash
# The strip engine on a large PNG against `vips gaussblur`, and its overlap on a 16 MP photo.
#
# 1. A photo-like RGB8 PNG of SIZE×SIZE (default 8192; SIZE=32768 for a gigapixel), written
#    row band by row band (benches/huge_image.py), blurred at SIGMA (default 10) by
#    `gblur --engine strips --device rust` and by `vips gaussblur` (libvips streams too; its
#    kernel is cut at min-ampl 0.2 by default, so MIN_AMPL=0.005 is passed for a kernel as wide
#    as the recursive filter's; MIN_AMPL=default runs vips with its default settings), both
#    writing PNG at zlib level 1 (gblur's default `fast`,
#    vips `[compression=1]`). ROUNDS (default 3) paired rounds, the two alternating in each;
#    medians of wall time and peak RSS (GNU time), and their ratio.
# 2. A 16 MP (4896×3264) PNG through gblur with --engine strips and --engine whole, alternating:
#    median walls, and the strip engine's wall against its slowest stage (its report's busy
#    times, which count time on a core, so with fewer cores than busy threads they include
#    waiting for one).
#    FORMATS="png tiff jpeg" (the default) also runs the pairs TIFF -> TIFF (uncompressed) and
#    JPEG -> JPEG (quality 90, both writing quality 90), their inputs written by vips from the
#    PNG; WHOLE_TABLE=0 stops after these. VIPS=0 leaves vips out (SIGMAS=1000, where its
#    kernel takes hours); MAX_MEMORY=N passes --max-memory N to gblur.
# Usage: [SIZE=32768] [SIGMA=10] [ROUNDS=3] benches/huge.sh      Prints Markdown tables.
set -euo pipefail
size=${SIZE:-8192} sigma=${SIGMA:-10} rounds=${ROUNDS:-3} min_ampl=${MIN_AMPL:-0.005}
ampl=(--min-ampl "$min_ampl")
[ "$min_ampl" != default ] || ampl=()
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/huge.XXXXXX")
trap 'rm -rf "$work"' EXIT
(cd "$root" && cargo build --release -q)
gblur="$root/target/release/gblur"
py=/usr/bin/python3
[ -x "$py" ] || py=python3

# Wall seconds and peak RSS in MiB of a command, "WALL RSS" (a failure stops the script).
measure() {
    /usr/bin/time -f "%e %M" -o "$work/t" "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
    awk '{ printf "%s %d\n", $1, $2 / 1024 }' "$work/t"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

$py "$root/benches/huge_image.py" "$work/in.png" "$size" "$size"
echo "input: ${size}x${size} RGB8 PNG, $(( $(stat -c %s "$work/in.png") >> 20 )) MiB; sigma $sigma; $(nproc) cores"

# Paired rounds of gblur and vips on INPUT, writing OUT_EXT (vips with VIPS_OPTS); one table.
# VIPS=0 runs gblur alone (at a sigma where vips takes hours); MAX_MEMORY passes
# --max-memory to gblur. The table says how gblur's window ran: sliding, or the exact
# two-pass method with its states in memory or in a file.
pair() {
    local input=$1 ext=$2 vips_opts=$3 label=$4
    local budget=()
    [ -z "${MAX_MEMORY:-}" ] || budget=(--max-memory "$MAX_MEMORY")
    : >"$work/g"; : >"$work/v"
    for _ in $(seq "$rounds"); do
        measure "$gblur" "$input" "$work/g.$ext" --sigma "$sigma" --device rust --engine strips "${budget[@]}" >>"$work/g"
        cp "$work/err" "$work/gerr"
        rm -f "$work/g.$ext"
        [ "${VIPS:-1}" = 0 ] && continue
        measure vips gaussblur "$input" "$work/v.$ext$vips_opts" "$sigma" "${ampl[@]}" >>"$work/v"
        rm -f "$work/v.$ext"
    done
    local method=window
    if grep -q 'kept in a temporary file' "$work/gerr"; then method="two-pass, states in a file"
    elif grep -q 'exact two-pass method' "$work/gerr"; then method="two-pass, states in memory"; fi
    local gw gr vw vr
    gw=$(cut -d' ' -f1 "$work/g" | median) gr=$(cut -d' ' -f2 "$work/g" | median)
    echo
    echo "| ${size}² RGB8 $label, sigma $sigma | wall (s) | peak RSS (MiB) |"
    echo "|---|---:|---:|"
    echo "| gblur --engine strips ${budget[*]} ($method) | $gw | $gr |"
    [ "${VIPS:-1}" = 0 ] && return
    vw=$(cut -d' ' -f1 "$work/v" | median) vr=$(cut -d' ' -f2 "$work/v" | median)
    echo "| vips gaussblur (min-ampl $min_ampl) | $vw | $vr |"
    echo "| gblur / vips | $(awk "BEGIN { printf \"%.3f\", $gw / $vw }") | $(awk "BEGIN { printf \"%.2f\", $gr / $vr }") |"
}
# FORMATS picks the tables: png (PNG -> PNG at zlib level 1), tiff (uncompressed strip TIFF
# -> TIFF), jpeg (quality 90 JPEG -> quality 90 JPEG, whose 4:4:4 chroma gblur keeps and vips
# writes at that quality); the inputs written by vips from the PNG.
# SIGMAS="5 50" runs the pairs at each sigma in turn (default: SIGMA).
for f in ${FORMATS:-png tiff jpeg}; do
    [ "$f" != tiff ] || vips copy "$work/in.png" "$work/in.tif"
    [ "$f" != jpeg ] || vips copy "$work/in.png" "$work/in.jpg[Q=90]"
    for sigma in ${SIGMAS:-$sigma}; do
        case $f in
            png) pair "$work/in.png" png "[compression=1]" "PNG -> PNG" ;;
            tiff) pair "$work/in.tif" tif "" "TIFF -> TIFF" ;;
            jpeg) pair "$work/in.jpg" jpg "[Q=90]" "JPEG -> JPEG" ;;
        esac
    done
    rm -f "$work/in.tif" "$work/in.jpg"
done
[ "${WHOLE_TABLE:-1}" = 1 ] || exit 0

# 2. Whole against strips where both fit, at 1, 4 and 16 MP (where auto's line lies), and the
#    16 MP strip engine's wall against its slowest stage.
echo
echo "| RGB8 PNG, sigma $sigma | --engine whole (s) | --engine strips (s) | strips / whole |"
echo "|---|---:|---:|---:|"
for dims in 1024x1024 2048x2048 4896x3264; do
    $py "$root/benches/huge_image.py" "$work/m.png" "${dims%x*}" "${dims#*x}" 2
    : >"$work/s"; : >"$work/w"; : >"$work/busy"
    for _ in $(seq "$rounds"); do
        /usr/bin/time -f "%e" -o "$work/t" "$gblur" "$work/m.png" "$work/o.png" --sigma "$sigma" --device rust --engine strips 2>"$work/err" >/dev/null
        cat "$work/t" >>"$work/s"
        # "wall W ms, busy decode A ms, blur B ms, encode C ms": W A B C and the slowest stage.
        grep -o 'wall [0-9]* ms, busy decode [0-9]* ms, blur [0-9]* ms, encode [0-9]* ms' "$work/err" |
            tr -dc '0-9 \n' | awk '{ m = $2; if ($3 > m) m = $3; if ($4 > m) m = $4; print $1, $2, $3, $4, m }' >>"$work/busy"
        measure "$gblur" "$work/m.png" "$work/o.png" --sigma "$sigma" --device rust --engine whole -q | cut -d' ' -f1 >>"$work/w"
    done
    sw=$(median <"$work/s") ww=$(median <"$work/w")
    echo "| $dims | $ww | $sw | $(echo "scale=2; $sw / $ww" | bc) |"
done
inner=$(cut -d' ' -f1 "$work/busy" | median) slowest=$(cut -d' ' -f5 "$work/busy" | median)
echo
echo "| 16 MP strips, sigma $sigma | |"
echo "|---|---:|"
echo "| pipeline wall (ms, median) | $inner |"
echo "| busy decode / blur / encode (ms, each round) | $(cut -d' ' -f2-4 "$work/busy" | tr ' ' / | paste -sd' ') |"
echo "| pipeline wall / slowest stage (median) | $(echo "scale=2; $inner / $slowest" | bc) |"
