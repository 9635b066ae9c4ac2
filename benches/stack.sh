#!/usr/bin/env bash
# A TIFF stack blurred as a volume: 64 pages of 1024x1024 16-bit gray (microscopy-like: soft
# blobs over a background, with Poisson noise), sigma 2 across each page and SZ (default 2)
# across pages. gblur --sigma-z (the whole process: read, blur, write) against
# scipy.ndimage.gaussian_filter on the same volume, read and written with tifffile, timed
# inside Python (its start-up and imports left out, which favours scipy). RUNS rounds, the two
# alternating; prints each one's median wall, the median and range of the per-round ratio,
# the largest difference from scipy's result in levels, and the pages written.
# usage: benches/stack.sh [RUNS]        (PAGES, SIZE and SZ in the environment change the stack;
#                                       METHOD=fir|recursive sets gblur's --method)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
PY=${PY:-python3}
$PY -c 'import numpy, scipy, tifffile' 2>/dev/null || {
    echo "needs numpy, scipy and tifffile for $PY (pip install numpy scipy tifffile)" >&2
    exit 1
}
cargo build --release -q
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
METHOD=${METHOD:-auto} PAGES=${PAGES:-64} SIZE=${SIZE:-1024} SZ=${SZ:-2} $PY - "$T" "$RUNS" <<'PY'
import os, statistics, subprocess, sys, time
import numpy as np, tifffile
from scipy import ndimage

t, runs = sys.argv[1], int(sys.argv[2])
pages, size, sz = int(os.environ["PAGES"]), int(os.environ["SIZE"]), float(os.environ["SZ"])
rng = np.random.default_rng(5)
z, y, x = np.mgrid[0:pages, 0:size, 0:size].astype(np.float32)
mean = np.full((pages, size, size), 800.0, np.float32)
for _ in range(60):
    cz, cy, cx = rng.uniform(0, pages), rng.uniform(0, size), rng.uniform(0, size)
    r = rng.uniform(8, 40)
    mean += rng.uniform(2000, 12000) * np.exp(-((z - cz) ** 2 * 16 + (y - cy) ** 2 + (x - cx) ** 2) / (2 * r * r))
stack = rng.poisson(mean).clip(0, 65535).astype(np.uint16)
del z, y, x, mean
src = f"{t}/stack.tif"
tifffile.imwrite(src, stack, photometric="minisblack")
sigma = (sz, 2.0, 2.0)

def ours():
    start = time.perf_counter()
    subprocess.run(["target/release/gblur", src, f"{t}/gblur.tif", "--sigma", "2",
                    "--sigma-z", str(sz), "--method", os.environ["METHOD"], "-q"], check=True)
    return time.perf_counter() - start

def scipy_run():
    start = time.perf_counter()
    v = tifffile.imread(src)
    out = ndimage.gaussian_filter(v, sigma, mode="nearest")
    tifffile.imwrite(f"{t}/scipy.tif", out, photometric="minisblack")
    return time.perf_counter() - start

walls = {"gblur": [], "scipy": []}
for r in range(runs):
    order = [("gblur", ours), ("scipy", scipy_run)]
    for name, f in order[r % 2:] + order[:r % 2]:
        walls[name].append(f())
ratios = [a / b for a, b in zip(walls["gblur"], walls["scipy"])]
with tifffile.TiffFile(f"{t}/gblur.tif") as f:
    written = len(f.pages)
g = tifffile.imread(f"{t}/gblur.tif").astype(np.int32)
s = tifffile.imread(f"{t}/scipy.tif").astype(np.int32)
exact = np.round(ndimage.gaussian_filter(stack.astype(np.float64), sigma, mode="nearest"))
print(f"{pages} pages of {size}x{size} 16-bit, sigma {sigma[::-1]} (x, y, z), {runs} rounds")
print(f"gblur --sigma-z  {statistics.median(walls['gblur']):.3f} s   (the whole process)")
print(f"scipy            {statistics.median(walls['scipy']):.3f} s   (tifffile read + gaussian_filter + write, in process)")
print(f"gblur / scipy    {statistics.median(ratios):.2f}x  ({min(ratios):.2f}-{max(ratios):.2f})")
print(f"largest difference: {np.abs(g - s).max()} levels from scipy's uint16 output, "
      f"{np.abs(g - exact).max():.0f} from its float64 result rounded; pages written {written} of {pages}")
PY
