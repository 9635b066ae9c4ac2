#!/usr/bin/env python3
"""gblur.gaussian_filter of an f32 plane into a new array, into the caller's array and in
place, against OpenCV's GaussianBlur into a new array, on one thread count: each a median of
7 calls, ROUNDS rounds in turn, the medians of the rounds. Run it once per build in
alternating processes to compare builds (PYTHONPATH picks the build).

usage: outputs.py [LABEL] [--size N] [--sigma S] [--threads T] [--rounds R]
"""
import argparse
import statistics
import time

import numpy as np

import gblur


def median_ms(fn, calls=7):
    fn()
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("label", nargs="?", default="gblur")
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--sigma", type=float, default=5.0)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    n, s = a.threads, a.sigma
    plane = np.random.default_rng(2).random((a.size, a.size), dtype=np.float32)
    mine = plane.copy()
    out = np.zeros_like(plane)
    cases = {
        "new": lambda: gblur.gaussian_filter(plane, s, mode="nearest", workers=n),
        "into": lambda: gblur.gaussian_filter(plane, s, output=out, mode="nearest", workers=n),
        "in place": lambda: gblur.gaussian_filter(mine, s, output=mine, mode="nearest",
                                                  workers=n),
    }
    try:
        import cv2
        cv2.setNumThreads(n)
        cases["OpenCV new"] = lambda: cv2.GaussianBlur(plane, (0, 0), s,
                                                       borderType=cv2.BORDER_REPLICATE)
    except ImportError:
        pass
    rounds = {k: [] for k in cases}
    for _ in range(a.rounds):
        for k, fn in cases.items():
            rounds[k].append(median_ms(fn))
    m = {k: statistics.median(v) for k, v in rounds.items()}
    line = " | ".join(f"{k} {v:.1f} ms" for k, v in m.items())
    if "OpenCV new" in m:
        line += f" | new ÷ OpenCV {m['new'] / m['OpenCV new']:.2f}"
    print(f"{a.label}: f32 {a.size}², σ {s}, {n} threads | {line}", flush=True)


if __name__ == "__main__":
    main()
