#!/usr/bin/env bash
# gblur's Python package beside scipy.ndimage, OpenCV, SimpleITK and dask-image on this
# machine (benches/python_bench.py): builds the package into a virtual environment with the
# peers from PyPI and runs the paired rounds; then, where Debian's python3-opencv is installed,
# the 2-D cases again beside Debian's own OpenCV and scipy (an older OpenCV, several times
# slower at small sigma than PyPI's).
# usage: benches/python.sh [--rounds N] [--only 2d,3d,dask] [--json FILE]
# VENV=DIR reuses an environment (default target/bench-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
venv=$(realpath -m "${VENV:-target/bench-venv}")
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q numpy scipy "dask[array,distributed]" dask-image SimpleITK opencv-python-headless
"$venv/bin/pip" install -q ./python
# From elsewhere, so that python/gblur (the sources, without the extension) is not imported.
cd /tmp
"$venv/bin/python" "$root/benches/python_bench.py" "$@"
if /usr/bin/python3 -c 'import cv2, scipy' 2>/dev/null; then
    sys_venv="$venv-debian"
    [ -x "$sys_venv/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$sys_venv"
    "$sys_venv/bin/pip" install -q --no-deps --force-reinstall "$root/python"
    echo "== beside Debian's OpenCV and scipy =="
    "$sys_venv/bin/python" "$root/benches/python_bench.py" --only 2d
fi
