#!/usr/bin/env python3
"""A float32 array larger than the device may allocate, blurred on the GPU: it goes through in
slabs along its first axis, each with the filter's reach on both sides. `GBLUR_MAX_ALLOC_MIB`
lowers the device's allocation limit so that a 4 GiB array (1024³) takes that route on any GPU
(`--max-alloc-mib 0` keeps the device's own limit, for the same array in one piece where it
fits). The result is checked against gblur's host result (the largest difference as a
fraction of the range) and timed against the host's cores: numpy in, a reused numpy array
out, mode 'nearest', paired rounds (the order reversed every other round), medians.

usage: gpu_large_array.py [--shape 1024x1024x1024] [--sigma 3] [--max-alloc-mib 512]
                          [--rounds 3] [--device gpu]
"""
import argparse
import os
import statistics
import time

import numpy as np


def largest_difference(got, want, rows=64):
    """max |got - want| over the range of `want`, a slab of rows at a time (no 4 GiB temporaries)."""
    err, lo, hi = 0.0, np.inf, -np.inf
    for i in range(0, want.shape[0], rows):
        a, b = got[i:i + rows], want[i:i + rows]
        err = max(err, float(np.abs(a.astype(np.float64) - b).max()))
        lo, hi = min(lo, float(b.min())), max(hi, float(b.max()))
    return err / max(hi - lo, 1e-30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="1024x1024x1024")
    ap.add_argument("--sigma", type=float, default=3.0)
    ap.add_argument("--max-alloc-mib", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="gpu", help="the device to open (cpu: PoCL, for a trial)")
    a = ap.parse_args()
    if a.max_alloc_mib > 0:
        # Read once, as the devices are first listed: before gblur opens any.
        os.environ["GBLUR_MAX_ALLOC_MIB"] = str(a.max_alloc_mib)
    import gblur

    shape = tuple(int(n) for n in a.shape.split("x"))
    gpu, host = gblur.Device(a.device), gblur.Device("rust")
    x = np.random.default_rng(3).random(shape, dtype=np.float32)
    gib = x.nbytes / 2**30
    limit = f"{a.max_alloc_mib} MiB" if a.max_alloc_mib > 0 else "the device's own"
    print(f"{os.cpu_count()} CPUs; GPU {gpu.name}; {a.shape} f32 ({gib:.2f} GiB), σ {a.sigma}, "
          f"allocation limit {limit}")
    want = gblur.gaussian_filter(x, a.sigma, mode="nearest", device=host)
    out = np.empty_like(x)
    tools = {
        "gblur, host cores": lambda: gblur.gaussian_filter(x, a.sigma, mode="nearest",
                                                          output=out, device=host),
        "gblur Device(gpu)": lambda: gblur.gaussian_filter(x, a.sigma, mode="nearest",
                                                          output=out, device=gpu),
    }
    tools["gblur Device(gpu)"]()
    err = largest_difference(out, want)
    verdict = "ok" if err <= 1e-5 else "OFF"
    print(f"    GPU against the host: largest difference {err:.1e} of the range ({verdict})")
    del want
    times = {name: [] for name in tools}
    for r in range(a.rounds):
        for name in (list(tools) if r % 2 == 0 else list(reversed(tools))):
            t = time.perf_counter()
            tools[name]()
            times[name].append(time.perf_counter() - t)
    gpu_time = statistics.median(times["gblur Device(gpu)"])
    print("| tool | median ms | GB/s of the array | × the GPU's time |")
    print("|---|---:|---:|---:|")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"| {name} | {m * 1e3:.1f} | {x.nbytes / m / 1e9:.1f} | {m / gpu_time:.2f} |")
    if verdict != "ok":
        raise SystemExit(f"the GPU's result is {err:.1e} of the range from the host's")


if __name__ == "__main__":
    main()
