#!/bin/bash
# A real Slurm on this one machine, running benches/slurm/blur-array.sbatch as written:
#   1. installs Debian's slurm-wlm and munge (if missing), writes a single-node slurm.conf for
#      this host (no cgroups, no systemd: proctrack/linuxproc, task/none) and starts munged,
#      slurmctld and slurmd in the background;
#   2. generates 400 PNGs (python3 and zlib, no gblur), submits a 4-task array over them,
#      cancels one task while it runs, checks that batch-report then fails naming that shard,
#      submits that task again alone, and checks with batch-report that every input has
#      exactly one complete output, no temporary file is left, and each task's share is within
#      15% of 400/4.
# Usage: benches/slurm.sh [WORK_DIR]   (as root; too heavy for every CI run)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-/tmp/gblur-slurm}
GBLUR=${GBLUR:-$ROOT/target/release/gblur}
IMAGES=${IMAGES:-400}
TASKS=4
SIGMA=${SIGMA:-6}
say() { echo "slurm.sh: $*" >&2; }

[ -x "$GBLUR" ] || (cd "$ROOT" && cargo build --release --locked)
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    apt-get update && apt-get install -y slurm-wlm munge
fi

# --- Slurm for this host -------------------------------------------------------------------
HOST=$(hostname -s)
STATE=$WORK/state
rm -rf "$WORK" && mkdir -p "$STATE/ctld" "$STATE/d" "$WORK/logs"
[ -s /etc/munge/munge.key ] || { dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null; }
chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
mkdir -p /run/munge /var/log/munge /var/lib/munge && chown munge:munge /run/munge /var/log/munge /var/lib/munge
pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged
mkdir -p /etc/slurm
cat >/etc/slurm/slurm.conf <<CONF
ClusterName=gblur
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$WORK/logs/slurmctld.log
SlurmdLogFile=$WORK/logs/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
KillWait=5
NodeName=$HOST CPUs=$(nproc) State=UNKNOWN
PartitionName=batch Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
[ -f "$STATE/slurmctld.pid" ] && kill "$(cat "$STATE/slurmctld.pid")" 2>/dev/null || true
slurmctld -c -i
slurmd
for _ in $(seq 60); do sinfo -h -o %T 2>/dev/null | grep -qx idle && break; sleep 1; done
sinfo -h -o %T | grep -qx idle || { say "the node did not come up"; cat "$WORK"/logs/*.log; exit 1; }
say "$(sinfo -V), node $HOST with $(nproc) CPUs is idle"

# --- 400 images, written without gblur ----------------------------------------------------
python3 - "$WORK/in" "$IMAGES" <<'PY'
import os, random, struct, sys, zlib
out, n = sys.argv[1], int(sys.argv[2])
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
w, h = 1024, 768
for i in range(n):
    rnd = random.Random(i)
    # Noise: slow enough to encode that a task runs for seconds, so one can be cancelled.
    rows = b"".join(b"\0" + rnd.randbytes(w) for _ in range(h))
    sub = os.path.join(out, f"set{i % 7}")
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, f"img-{i:04d}.png"), "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b""))
PY
say "$(find "$WORK/in" -type f | wc -l) images in $WORK/in"

# --- the array, one task cancelled mid-run, then submitted again ----------------------------
submit() {
    sbatch --parsable --chdir="$WORK/logs" "$@" \
        --export=ALL,GBLUR="$GBLUR",IN="$WORK/in",OUT="$WORK/out",SUMMARY="$WORK/summary",SIGMA="$SIGMA",SHARDS=$TASKS \
        "$ROOT/benches/slurm/blur-array.sbatch"
}
wait_job() { while squeue -h -j "$1" 2>/dev/null | grep -q .; do sleep 0.5; done; }
state() { scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z]*' | head -1 | cut -d= -f2; }

T0=$(date +%s.%N)
JOB=$(submit --array=0-$((TASKS - 1)))
VICTIM=${JOB}_2
say "submitted array $JOB; cancelling task $VICTIM once it has run 2 s"
while [ "$(state "$VICTIM")" != RUNNING ]; do sleep 0.2; done
sleep 2
[ "$(state "$VICTIM")" = RUNNING ] || { say "FAIL: task $VICTIM ended before it could be cancelled"; exit 1; }
scancel "$VICTIM"
wait_job "$JOB"
T1=$(date +%s.%N)
say "array done in $(echo "$T1 - $T0" | bc) s; task states: $(for a in 0 1 2 3; do echo -n "$a=$(state "${JOB}_$a") "; done)"
PARTIAL_OUT=$(find "$WORK/out" -name '*.png' | wc -l)
set +e
"$GBLUR" batch-report "$WORK/summary" 2>"$WORK/report-before.txt"
BEFORE=$?
set -e
cat "$WORK/report-before.txt" >&2
# SIGTERM lets the task finish the files in flight and record itself as interrupted; were it
# killed outright, its record would be missing. Either way the report must fail on shard 3/4.
[ "$BEFORE" = 1 ] && grep -Eq "missing   shard 3/4|shard 3/4: interrupted" "$WORK/report-before.txt" \
    || { say "FAIL: batch-report should exit 1 naming shard 3/4 (got $BEFORE)"; exit 1; }
say "after the cancel: $PARTIAL_OUT of $IMAGES outputs, $(find "$WORK/out" -name '.gblur-*' | wc -l) temporary files, batch-report exit 1 naming shard 3/4 (as it should)"

AGAIN=$(submit --array=2)
wait_job "$AGAIN"
say "task 2 submitted again as $AGAIN: $(state "${AGAIN}_2")"
"$GBLUR" batch-report "$WORK/summary" --json >"$WORK/report.json" 2>"$WORK/report-after.txt" \
    || { cat "$WORK/report-after.txt" >&2; say "FAIL: batch-report after the re-run"; exit 1; }
cat "$WORK/report-after.txt" >&2

# --- checks --------------------------------------------------------------------------------
python3 - "$WORK" "$IMAGES" "$TASKS" <<'PY'
import json, os, sys, zlib
work, n, tasks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rel = lambda top: {os.path.relpath(os.path.join(d, f), top) for d, _, fs in os.walk(top) for f in fs}
ins, outs = rel(f"{work}/in"), rel(f"{work}/out")
tmp = [p for p in outs if os.path.basename(p).startswith(".gblur-")]
assert not tmp, f"temporary files left: {tmp}"
assert ins == outs, f"outputs differ from inputs: {len(ins - outs)} missing, {len(outs - ins)} extra"
def complete(p):  # every chunk whole, the image data inflates, IEND last
    b = open(p, "rb").read(); i = 8; idat = b""
    while i < len(b):
        ln = int.from_bytes(b[i:i + 4], "big"); t = b[i + 4:i + 8]
        if t == b"IDAT": idat += b[i + 8:i + 8 + ln]
        i += 12 + ln
        if t == b"IEND": return i == len(b) and len(zlib.decompress(idat)) > 0
    return False
bad = [p for p in outs if not complete(f"{work}/out/{p}")]
assert not bad, f"partial outputs: {bad}"
r = json.load(open(f"{work}/report.json"))
assert r["complete"] and r["files"] == n and not r["duplicated"] and not r["missing"]
shares = {l["shard"]: l["files"] for l in r["present"]}
for k, c in sorted(shares.items()):
    off = (c - n / tasks) / (n / tasks)
    print(f"slurm.sh: task {k - 1} (shard {k}/{tasks}): {c} files ({off:+.1%} of {n // tasks})", file=sys.stderr)
    assert abs(off) <= 0.15, f"shard {k}: share {c} is not within 15% of {n / tasks}"
s3 = json.load(open(f"{work}/summary/shard-3-of-{tasks}.json"))
print(f"slurm.sh: the re-run task: {s3['skipped_existing']} outputs kept from before the cancel, "
      f"{s3['blurred']} blurred now, {s3['failed']} failed", file=sys.stderr)
print(f"slurm.sh: OK: {len(outs)} outputs for {len(ins)} inputs, none twice, 0 partial, 0 temporary files", file=sys.stderr)
PY
scontrol shutdown >/dev/null 2>&1 || true
