#!/usr/bin/env bash
# gblur's Python package beside scipy.ndimage, OpenCV, SimpleITK and dask-image on this
# machine (benches/python_bench.py): builds the package into a virtual environment with the
# peers from PyPI, then runs the paired rounds.
# usage: benches/python.sh [--rounds N] [--only 2d,3d,dask] [--json FILE]
# VENV=DIR reuses an environment (default target/bench-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(realpath -m "${VENV:-target/bench-venv}")
root=$PWD
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q numpy scipy "dask[array,distributed]" dask-image SimpleITK opencv-python-headless
"$venv/bin/pip" install -q ./python
# From elsewhere, so that python/gblur (the sources, without the extension) is not imported.
cd /tmp && exec "$venv/bin/python" "$root/benches/python_bench.py" "$@"
