#!/usr/bin/env python3
"""gblur.gaussian_filter of an f32 plane into a new array, into the caller's array and in
place, against OpenCV's GaussianBlur into a new array, on one thread count: each a median of
7 calls, ROUNDS rounds in turn, the medians of the rounds. With --rgb8, gblur.blur_image of a
12 MP photo-like RGB8 image (sines plus noise of 18 levels) into a new array and into the
caller's, against OpenCV's into a new array and into its ``dst=``. Run it once per build in
alternating processes to compare builds (PYTHONPATH picks the build).

usage: outputs.py [LABEL] [--rgb8] [--size N] [--sigma S] [--threads T] [--rounds R]
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


def plane_cases(size, s, n):
    """gaussian_filter of an f32 plane: into a new array, the caller's, and in place."""
    plane = np.random.default_rng(2).random((size, size), dtype=np.float32)
    mine = plane.copy()
    out = np.zeros_like(plane)
    return {
        "source": plane,
        "new": lambda: gblur.gaussian_filter(plane, s, mode="nearest", workers=n),
        "into": lambda: gblur.gaussian_filter(plane, s, output=out, mode="nearest", workers=n),
        "in place": lambda: gblur.gaussian_filter(mine, s, output=mine, mode="nearest",
                                                  workers=n),
    }, f"f32 {size}²"


def rgb8_cases(_size, s, n):
    """blur_image of a 12 MP photo-like RGB8 image (``cores.py``'s): into a new array and the
    caller's."""
    from cores import photo  # beside this script; it needs OpenCV, as this case does

    h, w = 3000, 4000
    img = photo(h, w)
    out = np.zeros_like(img)
    return {
        "source": img,
        "new": lambda: gblur.blur_image(img, s, workers=n),
        "into": lambda: gblur.blur_image(img, s, output=out, workers=n),
    }, f"RGB8 {w}x{h}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("label", nargs="?", default="gblur")
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--sigma", type=float, default=5.0)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--rgb8", action="store_true")
    a = ap.parse_args()
    n, s = a.threads, a.sigma
    cases, what = (rgb8_cases if a.rgb8 else plane_cases)(a.size, s, n)
    try:
        import cv2
        cv2.setNumThreads(n)
        src = cases.pop("source")
        dst = np.zeros_like(src)
        cases["OpenCV new"] = lambda: cv2.GaussianBlur(src, (0, 0), s,
                                                       borderType=cv2.BORDER_REPLICATE)
        if a.rgb8:
            cases["OpenCV dst="] = lambda: cv2.GaussianBlur(src, (0, 0), s, dst=dst,
                                                            borderType=cv2.BORDER_REPLICATE)
    except ImportError:
        cases.pop("source")
    rounds = {k: [] for k in cases}
    for _ in range(a.rounds):
        for k, fn in cases.items():
            rounds[k].append(median_ms(fn))
    m = {k: statistics.median(v) for k, v in rounds.items()}
    line = " | ".join(f"{k} {v:.1f} ms" for k, v in m.items())
    if "OpenCV new" in m:
        line += f" | new ÷ OpenCV {m['new'] / m['OpenCV new']:.2f}"
    if "OpenCV dst=" in m:
        line += f" | into ÷ OpenCV dst= {m['into'] / m['OpenCV dst=']:.2f}"
    print(f"{a.label}: {what}, σ {s}, {n} threads | {line}", flush=True)


if __name__ == "__main__":
    main()
