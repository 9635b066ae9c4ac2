#!/usr/bin/env python3
"""OpenCV's GaussianBlur in memory, the way benches/cpu.sh compares gblur bench cpu with it.

usage: opencv_blur.py WIDTH HEIGHT RUNS SIGMA [SIGMA ...]
Prints one JSON record per (layout, sigma): median and min ms over RUNS timed runs after two
warm-ups, and MP/s. Uses every core OpenCV sees (cv2.setNumThreads(0) leaves its default).
"""
import json
import statistics
import sys
import time

import cv2
import numpy as np


def time_blur(img, sigma, runs):
    times = []
    for i in range(2 + runs):
        t = time.perf_counter()
        cv2.GaussianBlur(img, (0, 0), sigma, sigmaY=sigma, borderType=cv2.BORDER_REPLICATE)
        if i >= 2:
            times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), min(times)


def main():
    w, h, runs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    sigmas = [float(s) for s in sys.argv[4:]]
    rng = np.random.default_rng(7)
    layouts = {
        "RGB 8-bit": rng.integers(0, 256, (h, w, 3), dtype=np.uint8),
        "1 channel f32": rng.random((h, w), dtype=np.float32),
    }
    for sigma in sigmas:
        for name, img in layouts.items():
            median, best = time_blur(img, sigma, runs)
            print(json.dumps({
                "tool": f"OpenCV {cv2.__version__} GaussianBlur ({cv2.getNumThreads()} threads)",
                "layout": name, "sigma": sigma, "median_ms": median, "min_ms": best,
                "mpps": w * h / median / 1e3,
            }))


if __name__ == "__main__":
    main()
