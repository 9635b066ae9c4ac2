#!/usr/bin/env python3
"""gblur against OpenCV at 1, 2, 4, 8, 16 ... threads: the table of how each scales on this
machine, in one process per case, paired rounds alternating the two tools, medians.

- RGB8 12 MP photo-like image in memory, sigma 5, edges 'nearest' (OpenCV's BORDER_REPLICATE):
  ``gblur.blur_image(img, 5, workers=n)`` against ``cv2.GaussianBlur`` under
  ``cv2.setNumThreads(n)``, each into a new array, then into one it is handed (``output=``,
  ``dst=``).
- float32 8192^2 noise, sigma 5, 'nearest': ``gblur.gaussian_filter`` against OpenCV.
- float32 256 x 512 x 512 (``--volume 512,512,512`` for another shape), sigma 3, 'nearest':
  ``gblur.gaussian_filter`` (OpenCV has no 3-D Gaussian).
- With --jpeg FILE and --gblur BINARY: the command on that JPEG into a JPEG at sigma 5
  (``gblur FILE out.jpg -s 5 --threads n``, a process each) against OpenCV's ``imread`` +
  ``GaussianBlur`` + ``imwrite`` in this process.

Each result is checked against the other tool's before anything is timed (OpenCV's kernel is
cut at about 4 sigma, rounded for 8-bit: the two agree to a few levels, not exactly).
Photo-like: sines plus Gaussian noise of sigma 18 levels, not a smooth test card.

usage: cores.py [--threads 1,2,4,8,16] [--rounds 5] [--only rgb8,f32,vol,jpeg]
                [--volume 256,512,512] [--jpeg FILE --gblur BINARY]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import cv2
import numpy as np

import gblur


def photo(h, w, seed=1):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    base = np.stack([128 + 60 * np.sin(x / 97 + c) + 40 * np.cos(y / 61 - c) for c in range(3)], -1)
    return np.clip(base + rng.normal(0, 18, (h, w, 3)), 0, 255).astype(np.uint8)


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def paired(tools, rounds):
    """Each tool once untimed, then once a round in turn, the order reversed every other
    round: each tool's median in ms."""
    for fn in tools.values():
        fn()
    times = {name: [] for name in tools}
    for r in range(rounds):
        for name in (list(tools) if r % 2 == 0 else list(reversed(tools))):
            times[name].append(timed(tools[name]))
    return {name: statistics.median(t) * 1e3 for name, t in times.items()}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", default="1,2,4,8,16")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--only", default="rgb8,f32,vol,jpeg")
    p.add_argument("--volume", default="256,512,512")
    p.add_argument("--jpeg")
    p.add_argument("--gblur")
    a = p.parse_args()
    threads = [int(t) for t in a.threads.split(",")]
    only = set(a.only.split(","))
    print(f"{os.cpu_count()} CPUs, OpenCV {cv2.__version__}, numpy {np.__version__}; "
          f"medians of {a.rounds} paired rounds, ms")
    rows = []

    def table(name, cases):
        """cases: thread count -> {tool: ms}."""
        tools = list(next(iter(cases.values())))
        print(f"\n{name}")
        print("| threads | " + " | ".join(tools) + (" | gblur / OpenCV |" if "OpenCV" in tools else " |"))
        print("|---:|" + "---:|" * (len(tools) + ("OpenCV" in tools)))
        one = cases[threads[0]]
        for n, ms in cases.items():
            cells = [f"{ms[t]:.1f}" for t in tools]
            if "OpenCV" in tools:
                cells.append(f"{ms['gblur'] / ms['OpenCV']:.2f}")
            print(f"| {n} | " + " | ".join(cells) + " |")
        for t in tools:
            print(f"  {t}: {one[t] / cases[threads[-1]][t]:.1f}x from {threads[0]} to {threads[-1]} threads")
        sys.stdout.flush()

    if "rgb8" in only:
        img = photo(3000, 4000)
        g = gblur.blur_image(img, 5.0)
        c = cv2.GaussianBlur(img, (0, 0), 5.0, borderType=cv2.BORDER_REPLICATE)
        print(f"RGB8 check: gblur vs OpenCV largest {np.abs(g.astype(int) - c).max()} levels, "
              f"mean {np.abs(g.astype(int) - c).mean():.3f}")
        cases = {}
        for n in threads:
            cv2.setNumThreads(n)
            cases[n] = paired({
                "gblur": lambda: gblur.blur_image(img, 5.0, workers=n),
                "OpenCV": lambda: cv2.GaussianBlur(img, (0, 0), 5.0, borderType=cv2.BORDER_REPLICATE),
            }, a.rounds)
        table("RGB8 4000x3000 in memory, sigma 5, nearest", cases)
        # The same into an array each tool is handed (gblur's output=, OpenCV's dst=), as a
        # caller blurring many frames of one size would: no new array's pages to map.
        mine, theirs = np.empty_like(img), np.empty_like(img)
        cases = {}
        for n in threads:
            cv2.setNumThreads(n)
            cases[n] = paired({
                "gblur": lambda: gblur.blur_image(img, 5.0, workers=n, output=mine),
                "OpenCV": lambda: cv2.GaussianBlur(img, (0, 0), 5.0, dst=theirs,
                                                   borderType=cv2.BORDER_REPLICATE),
            }, a.rounds)
        table("RGB8 4000x3000 into a reused array, sigma 5, nearest", cases)

    if "f32" in only:
        arr = np.random.default_rng(2).random((8192, 8192), dtype=np.float32)
        out = np.empty_like(arr)
        g = gblur.gaussian_filter(arr, 5.0, mode="nearest")
        c = cv2.GaussianBlur(arr, (0, 0), 5.0, borderType=cv2.BORDER_REPLICATE)
        print(f"f32 check: gblur vs OpenCV largest {np.abs(g - c).max():.2e}")
        cases = {}
        for n in threads:
            cv2.setNumThreads(n)
            cases[n] = paired({
                "gblur": lambda: gblur.gaussian_filter(arr, 5.0, output=out, mode="nearest", workers=n),
                "OpenCV": lambda: cv2.GaussianBlur(arr, (0, 0), 5.0, dst=out, borderType=cv2.BORDER_REPLICATE),
            }, a.rounds)
        table("float32 8192x8192, sigma 5, nearest (OpenCV cuts its kernel at 4 sigma for floats, 3 for 8-bit)", cases)

    if "vol" in only:
        shape = tuple(int(s) for s in a.volume.split(","))
        vol = np.random.default_rng(3).random(shape, dtype=np.float32)
        out = np.empty_like(vol)
        cases = {}
        for n in threads:
            cases[n] = paired({
                "gblur": lambda: gblur.gaussian_filter(vol, 3.0, output=out, mode="nearest", workers=n),
            }, a.rounds)
        table(f"float32 {'x'.join(map(str, shape))}, sigma 3, nearest", cases)

    if "jpeg" in only and a.jpeg and a.gblur:
        with tempfile.TemporaryDirectory() as d:
            ours, theirs = os.path.join(d, "g.jpg"), os.path.join(d, "c.jpg")
            cases = {}
            for n in threads:
                cv2.setNumThreads(n)

                def command():
                    subprocess.run([a.gblur, a.jpeg, ours, "-s", "5", "--threads", str(n),
                                    "--device", "rust", "-q"], check=True)

                def opencv():
                    im = cv2.imread(a.jpeg)
                    cv2.imwrite(theirs, cv2.GaussianBlur(im, (0, 0), 5.0, borderType=cv2.BORDER_REPLICATE),
                                [cv2.IMWRITE_JPEG_QUALITY, 90])

                cases[n] = paired({"gblur": command, "OpenCV": opencv}, a.rounds)
            table(f"the command: {os.path.basename(a.jpeg)} -> JPEG q90, sigma 5, whole process", cases)


if __name__ == "__main__":
    main()
