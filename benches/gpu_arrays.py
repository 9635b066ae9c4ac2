#!/usr/bin/env python3
"""numpy in, numpy out on a GPU: gblur on the host's cores, gblur on the GPU (`Device("gpu")`
and `Device("auto")`), and the GPU peers that are installed (CuPy's `cupyx.scipy.ndimage`,
cuCIM's `skimage.filters.gaussian`, pyclesperanto's `gaussian_blur`), each from numpy and
back and, where it can, on data already on the GPU; gblur and CuPy also from arrays in their
own page-locked memory (`Device.zeros_pinned`, `cupyx.zeros_pinned`), gblur also with one side
there and the other in ordinary numpy memory. float32, mode nearest,
paired rounds in one process (the order reversed every other round), medians; every result is
checked against gblur's host result before it is timed.

usage: gpu_arrays.py [--rounds N] [--cases 8192x8192:5,512x512x512:3] [--auto] [--no-peers] [--device gpu]

--auto adds the table of `device="auto"` against the faster of host and GPU at 256², 1024²,
4096², 128³ and 512³, from ordinary numpy arrays and from each device's page-locked ones; each
of its samples times as many calls in a row as last about 20 ms for the fastest tool.
"""
import argparse
import os
import statistics
import time

import numpy as np

import gblur


def timed(fn, calls=1):
    """Seconds per call of `calls` calls of `fn` in a row."""
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) / calls


def pair(tools, rounds, calls=1):
    for fn in tools.values():
        fn()
    times = {name: [] for name in tools}
    for r in range(rounds):
        order = list(tools) if r % 2 == 0 else list(reversed(tools))
        for name in order:
            times[name].append(timed(tools[name], calls))
    return {name: statistics.median(ts) for name, ts in times.items()}, times


def calls_for(tools, span=0.02):
    """Calls per timed sample so that the fastest tool's sample lasts about `span` seconds: a
    single call of a 256² array (0.2–0.3 ms) is within the scheduler's noise on a busy host."""
    fastest = min(timed(fn) for fn in tools.values() for _ in range(3))
    return max(1, round(span / fastest))


def check(name, got, want):
    err = float(np.abs(np.asarray(got, np.float64) - want).max()) / max(float(np.ptp(want)), 1e-30)
    print(f"    {name:<34} max error {err:.1e} of the range ({'ok' if err < 1e-3 else 'OFF'})")


def peers(x, sigma, want):
    """The installed GPU peers, each from numpy and on data already on the GPU."""
    tools = {}
    try:
        import cupy as cp
        from cupyx.scipy import ndimage as cndi
        xd = cp.asarray(x)

        def cupy_numpy():
            return cp.asnumpy(cndi.gaussian_filter(cp.asarray(x), sigma, mode="nearest"))

        def cupy_gpu():
            cndi.gaussian_filter(xd, sigma, mode="nearest")
            cp.cuda.Device().synchronize()
        check("cupyx", cupy_numpy(), want)
        tools["CuPy cupyx (from numpy)"] = cupy_numpy
        tools["CuPy cupyx (on the GPU)"] = cupy_gpu
        import cupyx
        pinned_in = cupyx.zeros_pinned(x.shape, np.float32)
        pinned_in[...] = x
        pinned_out = cupyx.zeros_pinned(x.shape, np.float32)

        def cupy_pinned():
            g = cndi.gaussian_filter(cp.asarray(pinned_in), sigma, mode="nearest")
            return cp.asnumpy(g, out=pinned_out)
        check("cupyx, CuPy's pinned arrays", cupy_pinned(), want)
        tools["CuPy cupyx (CuPy's pinned arrays)"] = cupy_pinned
        try:
            from cucim.skimage.filters import gaussian as cu_gaussian

            def cucim_numpy():
                return cp.asnumpy(cu_gaussian(cp.asarray(x), sigma, mode="nearest",
                                              preserve_range=True))

            def cucim_gpu():
                cu_gaussian(xd, sigma, mode="nearest", preserve_range=True)
                cp.cuda.Device().synchronize()
            check("cuCIM", cucim_numpy(), want)
            tools["cuCIM (from numpy)"] = cucim_numpy
            tools["cuCIM (on the GPU)"] = cucim_gpu
        except Exception as e:  # not installed, or no matching CUDA
            print(f"    (cuCIM: {type(e).__name__}: {e})")
    except ImportError as e:
        print(f"    (CuPy: {e})")
    try:
        import pyclesperanto as cle
        cle.select_device("NVIDIA")
        sig = [sigma] * x.ndim
        kw = dict(zip(("sigma_z", "sigma_y", "sigma_x")[3 - x.ndim:], sig))

        def cle_numpy():
            return cle.pull(cle.gaussian_blur(cle.push(x), **kw))
        check("pyclesperanto", cle_numpy(), want)
        tools["pyclesperanto (from numpy)"] = cle_numpy
    except Exception as e:
        print(f"    (pyclesperanto: {type(e).__name__}: {e})")
    return tools


def table(cases, rounds, gpu, with_peers=True):
    host = gblur.Device("rust")
    print(f"| array | σ | " + " | ".join(["tool", "median ms", "× gblur GPU's time"]) + " |")
    for shape, sigma in cases:
        x = np.random.default_rng(1).random(shape, dtype=np.float32)
        want = gblur.gaussian_filter(x, sigma, mode="nearest").astype(np.float64)
        out = np.empty_like(x)
        tools = {
            "gblur, host cores": lambda: gblur.gaussian_filter(x, sigma, mode="nearest",
                                                              output=out, device=host),
            "gblur Device(gpu)": lambda: gblur.gaussian_filter(x, sigma, mode="nearest",
                                                              output=out, device=gpu),
            "gblur Device(gpu), reflect": lambda: gblur.gaussian_filter(x, sigma, output=out,
                                                                       device=gpu),
        }
        check("gblur Device(gpu)", gblur.gaussian_filter(x, sigma, mode="nearest", device=gpu),
              want)
        if gpu.is_opencl and hasattr(gpu, "zeros_pinned"):  # (builds before it: none)
            pinned_in, pinned_out = gpu.zeros_pinned(shape), gpu.zeros_pinned(shape)
            pinned_in[...] = x
            tools["gblur Device(gpu), pinned arrays"] = (
                lambda: gblur.gaussian_filter(pinned_in, sigma, mode="nearest",
                                              output=pinned_out, device=gpu))
            tools["gblur Device(gpu), pinned, in place"] = (
                lambda: gblur.gaussian_filter(pinned_out, sigma, mode="nearest",
                                              output=pinned_out, device=gpu))
            # One side page-locked, the other ordinary numpy memory.
            tools["gblur Device(gpu), pinned input"] = (
                lambda: gblur.gaussian_filter(pinned_in, sigma, mode="nearest", output=out,
                                              device=gpu))
            tools["gblur Device(gpu), pinned input, new output"] = (
                lambda: gblur.gaussian_filter(pinned_in, sigma, mode="nearest", device=gpu))
            tools["gblur Device(gpu), pinned output"] = (
                lambda: gblur.gaussian_filter(x, sigma, mode="nearest", output=pinned_out,
                                              device=gpu))
            check("gblur Device(gpu), pinned arrays", tools["gblur Device(gpu), pinned arrays"](),
                  want)
        if with_peers:
            tools.update(peers(x, sigma, want))
        med, _ = pair(tools, rounds)
        base = med["gblur Device(gpu)"]
        name = "×".join(map(str, shape))
        for tool, m in med.items():
            print(f"| {name} | {sigma} | {tool} | {m * 1e3:.1f} | {m / base:.2f} |")


def auto_table(rounds, gpu):
    host, auto = gblur.Device("rust"), gblur.Device("auto")
    print(f"\nauto opened {auto.name}")
    pinned = auto.is_opencl and gpu.is_opencl and hasattr(gpu, "zeros_pinned")
    head = "| array | host ms | GPU ms | auto ms | auto / faster |"
    if pinned:
        head += " GPU ms, page-locked | auto ms, page-locked | auto / faster, page-locked |"
    print(head)
    for shape in [(256, 256), (1024, 1024), (4096, 4096), (128,) * 3, (512,) * 3]:
        x = np.random.default_rng(2).random(shape, dtype=np.float32)
        out = np.empty_like(x)
        tools = {d.name if d is not auto else "auto": (lambda d=d: gblur.gaussian_filter(
            x, 3.0, mode="nearest", output=out, device=d)) for d in (host, gpu, auto)}
        if pinned:
            # Each device's own page-locked arrays (another device's are ordinary memory to it).
            for name, d in (("gpu pinned", gpu), ("auto pinned", auto)):
                a, b = d.zeros_pinned(shape), d.zeros_pinned(shape)
                a[...] = x
                tools[name] = (lambda a=a, b=b, d=d: gblur.gaussian_filter(
                    a, 3.0, mode="nearest", output=b, device=d))
        med, _ = pair(tools, rounds, calls_for(tools))
        h, g, a = (med[host.name], med[gpu.name], med["auto"])
        row = (f"| {'×'.join(map(str, shape))} | {h * 1e3:.2f} | {g * 1e3:.2f} | {a * 1e3:.2f} "
               f"| {a / min(h, g):.2f} |")
        if pinned:
            gp, ap = med["gpu pinned"], med["auto pinned"]
            row += f" {gp * 1e3:.2f} | {ap * 1e3:.2f} | {ap / min(h, gp):.2f} |"
        print(row)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cases", default="8192x8192:5,512x512x512:3")
    ap.add_argument("--auto", action="store_true")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--device", default="gpu", help="the device to open (cpu: PoCL, for a trial)")
    a = ap.parse_args()
    gpu = gblur.Device(a.device)
    print(f"{os.cpu_count()} CPUs; numpy {np.__version__}; GPU {gpu.name}")
    cases = []
    for c in a.cases.split(","):
        shape, sigma = c.split(":")
        cases.append((tuple(int(n) for n in shape.split("x")), float(sigma)))
    table(cases, a.rounds, gpu, not a.no_peers)
    if a.auto:
        auto_table(a.rounds, gpu)


if __name__ == "__main__":
    main()
