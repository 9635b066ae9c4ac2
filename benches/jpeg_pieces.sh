#!/usr/bin/env bash
# A 100 MP JPEG decoded whole (no restart markers) and in restart pieces (OpenCV's file with a
# marker every MCU row, 4:2:0 and 4:4:4; gblur's own output, every 16 MCU rows), at 1, 4 and
# 16 threads, two gblur builds in alternation (or one): the decode pass and the whole
# process, medians of 3; OpenCV's imread beside. Needs python3 with numpy and OpenCV, about
# 4 GB of memory and 250 MB of disk under /tmp/w.
# usage: benches/jpeg_pieces.sh GBLUR [OTHER_GBLUR]     (PATHS="auto rgb" picks the routes)
set -u
[ $# -ge 1 ] || { echo "usage: benches/jpeg_pieces.sh GBLUR [OTHER_GBLUR]" >&2; exit 2; }
BUILDS=("$@")
W=/tmp/w; mkdir -p $W; rm -f $W/all.txt
python3 - <<'PY'
import numpy as np, cv2, time
rng=np.random.default_rng(1)
h,w=8400,12000
y=np.arange(h,dtype=np.float32)[:,None]; x=np.arange(w,dtype=np.float32)[None,:]
img=np.empty((h,w,3),np.uint8)
for c in range(3):
    img[:,:,c]=np.clip(128+60*np.sin(x/97+c)+40*np.cos(y/61-c)+rng.normal(0,18,(h,w)).astype(np.float32),0,255)
q=[cv2.IMWRITE_JPEG_QUALITY,90]
cv2.imwrite('/tmp/w/plain.jpg',img,q)
cv2.imwrite('/tmp/w/rst.jpg',img,q+[cv2.IMWRITE_JPEG_RST_INTERVAL,w//16])
try:
    cv2.imwrite('/tmp/w/rst444.jpg',img,q+[cv2.IMWRITE_JPEG_RST_INTERVAL,w//8,cv2.IMWRITE_JPEG_SAMPLING_FACTOR,cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444])
except Exception as e:
    print('no 4:4:4:', e)
print('opencv', cv2.__version__, 'threads', cv2.getNumThreads())
for f in ['plain','rst','rst444']:
    ts=[]
    for _ in range(3):
        t=time.perf_counter(); cv2.imread(f'/tmp/w/{f}.jpg'); ts.append(time.perf_counter()-t)
    print(f'opencv imread {f}: {sorted(ts)[1]*1e3:.0f} ms')
PY
"${BUILDS[-1]}" $W/plain.jpg $W/gblur.jpg -s 5 -q --json > /dev/null
ls -la $W
nproc; grep -m1 "model name" /proc/cpuinfo
for f in plain rst rst444 gblur; do
  [ -f $W/$f.jpg ] || continue
  for path in ${PATHS:-auto rgb}; do
    for t in 1 4 16; do
      for r in 1 2 3; do
        for G in "${BUILDS[@]}"; do
          s=$(date +%s.%N)
          "$G" $W/$f.jpg $W/out.jpg -s 5 --device rust --threads $t --jpeg-path $path --max-memory 8192 --json -q > $W/r.json 2>$W/r.err || { echo "$G $f $path t=$t failed: $(head -c 300 $W/r.err)"; continue; }
          e=$(date +%s.%N)
          python3 - "$G $f $path t=$t" $s $e <<'PY'
import json,sys
r=json.load(open('/tmp/w/r.json'))
d=sum(p['ms'] for p in r['passes'] if p['stage']=='decode')
b=sum(p['ms'] for p in r['passes'] if p['stage']=='blur')
e=sum(p['ms'] for p in r['passes'] if p['stage']=='encode')
print(f"{sys.argv[1]}: decode {d:.0f} blur {b:.0f} encode {e:.0f} process {(float(sys.argv[3])-float(sys.argv[2]))*1e3:.0f}", file=open("/tmp/w/all.txt","a"))
PY
        done
      done
    done
  done
done
python3 - <<'PY'
import collections, statistics
runs=collections.defaultdict(list)
for l in open('/tmp/w/all.txt'):
    k,v=l.split(': ')
    f=dict(zip(v.split()[::2], map(float, v.split()[1::2])))
    runs[k].append(f)
for k,rs in runs.items():
    print(k, ' '.join(f"{m}={statistics.median(r[m] for r in rs):.0f}" for m in ['decode','blur','encode','process']))
PY
echo default-budget:; "${BUILDS[-1]}" $W/rst.jpg $W/out.jpg -s 5 2>&1 | head -8
