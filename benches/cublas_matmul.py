#!/usr/bin/env python3
"""cuBLAS FP32 SGEMM through PyTorch, the yardstick of `gblur bench matmul` on NVIDIA GPUs.

TF32 is off (torch.backends.cuda.matmul.allow_tf32 = False, matmul precision 'highest'), so
the product runs on the FP32 units like the OpenCL kernels. Operands are random, never zeros.
Each size: 3 warm-ups, then RUNS products, each timed with CUDA events; the median is
reported, with the same flop count as gblur (2·M·N·K).

usage: cublas_matmul.py [SIZES...]   (N for N×N×N or MxNxK; default 1024 2048 4096 2000)
Prints a table, and JSON lines on stdout after it (one per size).
"""
import json
import statistics
import sys

import torch

RUNS = 20


def parse(s):
    d = [int(v) for v in s.lower().split("x")]
    return (d[0], d[0], d[0]) if len(d) == 1 else tuple(d)


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    sizes = [parse(s) for s in sys.argv[1:]] or [parse(s) for s in ["1024", "2048", "4096", "2000"]]
    dev = torch.cuda.get_device_name(0)
    rows = []
    for m, n, k in sizes:
        g = torch.Generator(device="cuda").manual_seed(m * 7 + n * 3 + k)
        a = torch.rand(m, k, device="cuda", generator=g) * 2 - 1
        b = torch.rand(k, n, device="cuda", generator=g) * 2 - 1
        c = torch.empty(m, n, device="cuda")
        for _ in range(3):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
        # TF32 off is the point: check the result against float64.
        err = ((c.double() - a.double() @ b.double()).norm() / (a.double() @ b.double()).norm()).item()
        times = []
        for _ in range(RUNS):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            torch.matmul(a, b, out=c)
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e))
        med = statistics.median(times)
        rows.append(
            {
                "device": dev,
                "size": f"{m}x{n}x{k}",
                "median_ms": med,
                "min_ms": min(times),
                "max_ms": max(times),
                "tflops": 2 * m * n * k / (med * 1e-3) * 1e-12,
                "rel_error_vs_f64": err,
                "torch": torch.__version__,
                "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            }
        )
    print(f"cuBLAS FP32 (TF32 off) via PyTorch {torch.__version__} on {dev}")
    print(f"{'size':>16} {'median ms':>10} {'TFLOP/s':>8} {'rel err':>9}")
    for r in rows:
        print(f"{r['size']:>16} {r['median_ms']:10.3f} {r['tflops']:8.2f} {r['rel_error_vs_f64']:9.1e}")
    for r in rows:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
