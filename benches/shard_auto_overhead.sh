#!/bin/bash
# What --shard auto costs over --shard 1/1 on a 1-image batch: RUNS pairs of runs, alternating
# which goes first, each a whole `gblur batch` process (a 9×9 PNG, --overwrite, Rust path);
# prints the median of each and the median of the paired differences.
# Usage: benches/shard_auto_overhead.sh [RUNS]   (default 200)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$ROOT/target/release/gblur" ] || (cd "$ROOT" && cargo build --release --locked)
python3 - "$ROOT" "${1:-200}" <<'PY'
import os, shutil, statistics, subprocess, sys, tempfile, time
root, runs = sys.argv[1], int(sys.argv[2])
gblur = f"{root}/target/release/gblur"
work = tempfile.mkdtemp()
os.makedirs(f"{work}/in")
shutil.copy(f"{root}/tests/fixtures/rgba_halo_9x9.png", f"{work}/in/one.png")
base = [gblur, "batch", f"{work}/in", f"{work}/out", "--sigma", "2", "--device", "rust", "--overwrite", "-q"]
env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "JOB_COMPLETION", "GBLUR_"))}
slurm = dict(env, SLURM_ARRAY_TASK_ID="0", SLURM_ARRAY_TASK_COUNT="1", SLURM_ARRAY_TASK_MIN="0",
             SLURM_ARRAY_TASK_MAX="0", SLURM_ARRAY_TASK_STEP="1")
def once(args, e):
    t = time.perf_counter()
    subprocess.run(args, env=e, check=True)
    return (time.perf_counter() - t) * 1e3
fixed, auto = [], []
for i in range(runs + 10):
    pair = [(base + ["--shard", "1/1"], env, fixed), (base + ["--shard", "auto"], slurm, auto)]
    if i % 2:
        pair.reverse()
    for args, e, into in pair:
        ms = once(args, e)
        if i >= 10:  # the first 10 pairs warm the page cache
            into.append(ms)
diff = [a - f for a, f in zip(auto, fixed)]
print(f"{runs} pairs: --shard 1/1 median {statistics.median(fixed):.2f} ms, "
      f"--shard auto (Slurm variables set) median {statistics.median(auto):.2f} ms, "
      f"paired difference median {statistics.median(diff):+.3f} ms")
shutil.rmtree(work)
PY
