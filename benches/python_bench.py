#!/usr/bin/env python3
"""gblur.gaussian_filter beside scipy.ndimage, OpenCV, SimpleITK, cupyx and dask-image, on
the same arrays in one process: paired rounds that alternate the tools, medians and ranges of
each tool's time, and each peer's time over gblur's. Every result is checked against scipy's
(float64) before it is timed, so no tool is timed on a wrong answer.

usage: python_bench.py [--rounds N] [--only 2d,3d,dask,gpu] [--json FILE]
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def pair(tools, rounds):
    """Each tool once untimed (warm-up), then once per round, in turn, the order reversed
    every other round; returns each tool's times."""
    for fn in tools.values():
        fn()
    times = {name: [] for name in tools}
    for r in range(rounds):
        order = list(tools) if r % 2 == 0 else list(reversed(tools))
        for name in order:
            times[name].append(timed(tools[name]))
    return times


def summary(title, times, base="gblur"):
    rows = []
    b = statistics.median(times[base])
    for name, ts in times.items():
        m = statistics.median(ts)
        rows.append({"case": title, "tool": name, "median_s": m, "min_s": min(ts),
                     "max_s": max(ts), "x_gblur": m / b})
        print(f"  {title:<34} {name:<22} median {m * 1e3:9.1f} ms "
              f"[{min(ts) * 1e3:.1f}-{max(ts) * 1e3:.1f}]  {m / b:7.1f}x gblur's time")
    return rows


def check(name, got, want, data, tol=1e-3):
    err = float(np.abs(np.asarray(got, np.float64) - want).max()) / float(np.ptp(data))
    status = "ok" if err < tol else "OFF"
    print(f"    {name:<22} max error {err:.2e} of the data's range ({status})")
    return err


def images(rounds, rows):
    import gblur
    import scipy.ndimage as ndi
    peers = {}
    try:
        import cv2
        peers["cv2"] = cv2
    except ImportError:
        print("  (OpenCV not installed: pip install opencv-python-headless)")
    try:
        import SimpleITK as sitk
        peers["sitk"] = sitk
    except ImportError:
        print("  (SimpleITK not installed: pip install SimpleITK)")
    rng = np.random.default_rng(0)
    # Photo-like (smooth structure plus noise) and pure noise.
    smooth = ndi.zoom(rng.random((64, 64)), 64, order=1).astype(np.float32)
    noisy = (smooth + 0.2 * rng.standard_normal(smooth.shape)).astype(np.float32)
    for label, x in [("noisy", noisy), ("smooth", smooth)]:
        for sigma in (5.0, 50.0):
            title = f"4096^2 f32 {label} sigma {sigma:g}"
            print(title)
            want = ndi.gaussian_filter(x.astype(np.float64), sigma, mode="nearest")
            tools = {"gblur": lambda: gblur.gaussian_filter(x, sigma, mode="nearest")}
            check("gblur", tools["gblur"](), want, x)
            tools["scipy"] = lambda: ndi.gaussian_filter(x, sigma, mode="nearest")
            if "cv2" in peers:
                cv2 = peers["cv2"]
                # OpenCV's kernel reaches 4 sigma for float data, as scipy's default.
                k = 2 * int(4 * sigma + 0.5) + 1
                tools["cv2 GaussianBlur"] = lambda: cv2.GaussianBlur(
                    x, (k, k), sigma, borderType=cv2.BORDER_REPLICATE)
                check("cv2 GaussianBlur", tools["cv2 GaussianBlur"](), want, x)
            if "sitk" in peers:
                sitk = peers["sitk"]
                img = sitk.GetImageFromArray(x)
                # Timed to its result image (a numpy view of it costs nothing more).
                tools["SimpleITK recursive"] = lambda: sitk.SmoothingRecursiveGaussian(img, sigma)
                check("SimpleITK recursive",
                      sitk.GetArrayFromImage(tools["SimpleITK recursive"]()), want, x)
            rows += summary(title, pair(tools, rounds))


def volumes(rounds, rows):
    import gblur
    import scipy.ndimage as ndi
    rng = np.random.default_rng(1)
    v = rng.random((256, 256, 256)).astype(np.float32)
    sigma = 3.0
    title = "256^3 f32 sigma 3"
    print(title)
    want = ndi.gaussian_filter(v.astype(np.float64), sigma, mode="nearest")
    tools = {"gblur": lambda: gblur.gaussian_filter(v, sigma, mode="nearest"),
             "scipy": lambda: ndi.gaussian_filter(v, sigma, mode="nearest")}
    check("gblur", tools["gblur"](), want, v)
    try:
        import SimpleITK as sitk
        img = sitk.GetImageFromArray(v)
        tools["SimpleITK recursive"] = lambda: sitk.SmoothingRecursiveGaussian(img, sigma)
        check("SimpleITK recursive", sitk.GetArrayFromImage(tools["SimpleITK recursive"]()),
              want, v)
    except ImportError:
        pass
    rows += summary(title, pair(tools, rounds))


def dask_case(rounds, rows):
    import dask.array as da
    import distributed
    import gblur.dask
    from dask_image import ndfilters
    shape, chunks, sigma = (4096, 4096, 64), (512, 512, 64), 5.0
    title = "dask 4096x4096x64 f32 sigma 5"
    print(title, "(2-worker LocalCluster, input persisted, result summed)")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        x = da.random.default_rng(2).random(shape, chunks=chunks, dtype=np.float32)
        x = client.persist(x)
        distributed.wait(x)
        tools = {
            "gblur": lambda: gblur.dask.gaussian_filter(x, sigma).sum().compute(),
            "dask-image": lambda: ndfilters.gaussian_filter(x, sigma).sum().compute(),
        }
        # Agreement on a corner of both results.
        a = gblur.dask.gaussian_filter(x, sigma)[:600, :600].compute()
        b = ndfilters.gaussian_filter(x, sigma)[:600, :600].compute()
        check("gblur vs dask-image", a, b.astype(np.float64), b)
        rows += summary(title, pair(tools, rounds))


def gpu(rounds, rows):
    """Volumes on the host's cores, on the GPU (from numpy and back, transfers included),
    with auto's choice, and cupyx beside them (on data already on the GPU, and from numpy)."""
    import gblur
    dev = gblur.Device("gpu")
    auto = gblur.Device("auto")
    print(f"GPU: {dev.name}; auto opened {auto.name}")
    try:
        import cupy as cp
        from cupyx.scipy import ndimage as cndi
    except ImportError:
        cp = None
        print("  (CuPy not installed)")
    try:
        import scipy.ndimage as ndi
    except ImportError:
        ndi = None
        print("  (scipy not installed)")
    for n in (128, 256, 512):
        v = np.random.default_rng(n).random((n, n, n)).astype(np.float32)
        sigma = 5.0
        title = f"{n}^3 f32 sigma 5"
        print(title)
        host = gblur.gaussian_filter(v, sigma)
        tools = {
            "gblur": lambda: gblur.gaussian_filter(v, sigma),
            "gblur gpu": lambda: gblur.gaussian_filter(v, sigma, device=dev),
            "gblur gpu nearest": lambda: gblur.gaussian_filter(v, sigma, mode="nearest",
                                                               device=dev),
            "gblur auto": lambda: gblur.gaussian_filter(v, sigma, device=auto),
        }
        for name in ("gblur gpu", "gblur auto"):
            check(name, tools[name](), host.astype(np.float64), v, tol=1e-4)
        if cp is not None:
            vd = cp.asarray(v)

            def on_gpu():
                cndi.gaussian_filter(vd, sigma)
                cp.cuda.Device().synchronize()

            def from_numpy():
                return cp.asnumpy(cndi.gaussian_filter(cp.asarray(v), sigma))
            check("cupyx", from_numpy(), host.astype(np.float64), v)
            tools["cupyx (data on GPU)"] = on_gpu
            tools["cupyx (from numpy)"] = from_numpy
        times = pair(tools, rounds)
        if ndi is not None:
            # scipy is single-threaded and slow at this size: timed once, after a check run.
            check("scipy", ndi.gaussian_filter(v, sigma), host.astype(np.float64), v)
            times["scipy"] = [timed(lambda: ndi.gaussian_filter(v, sigma))]
        rows += summary(title, times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="2d,3d,dask")
    ap.add_argument("--json")
    args = ap.parse_args()
    cases = {"2d": images, "3d": volumes, "dask": dask_case, "gpu": gpu}
    rows = []
    print(f"{os.cpu_count()} cores; numpy {np.__version__}; python {sys.version.split()[0]}")
    for name in args.only.split(","):
        cases[name](args.rounds, rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
