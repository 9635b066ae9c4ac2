#!/usr/bin/env python3
"""torchvision's GPU JPEG pipeline on a folder: nvJPEG decode on the device, the Gaussian blur
of torchvision.transforms.functional (a separable FIR of 2*ceil(3 sigma)+1 taps), nvJPEG
encode on the device, files read and written by the host. Timed after a warm-up batch that
pays for CUDA's and nvJPEG's start-up; prints one line: "<seconds> <images> images/s".

usage: torch_nvjpeg.py IN_DIR OUT_DIR SIGMA [BATCH=16] [QUALITY=90]
"""
import math
import os
import sys
import time

import torch
import torchvision
from torchvision.io import decode_jpeg, encode_jpeg, read_file
from torchvision.transforms.functional import gaussian_blur


def run(names, src, dst, sigma, batch, quality):
    k = 2 * math.ceil(3 * sigma) + 1
    for i in range(0, len(names), batch):
        group = names[i : i + batch]
        data = [read_file(os.path.join(src, n)) for n in group]
        images = decode_jpeg(data, device="cuda")
        out = [gaussian_blur(img, [k, k], [sigma, sigma]) for img in images]
        encoded = encode_jpeg(out, quality=quality)
        for n, e in zip(group, encoded):
            with open(os.path.join(dst, n), "wb") as f:
                f.write(e.cpu().numpy().tobytes())
    torch.cuda.synchronize()


def main():
    src, dst, sigma = sys.argv[1], sys.argv[2], float(sys.argv[3])
    batch = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    quality = int(sys.argv[5]) if len(sys.argv) > 5 else 90
    names = sorted(os.listdir(src))
    os.makedirs(dst, exist_ok=True)
    run(names[:batch], src, dst, sigma, batch, quality)  # warm-up: not timed
    t0 = time.perf_counter()
    run(names, src, dst, sigma, batch, quality)
    t = time.perf_counter() - t0
    print(f"{t:.3f} {len(names) / t:.2f} images/s (torchvision {torchvision.__version__}, "
          f"{torch.cuda.get_device_name()}, batches of {batch})")


if __name__ == "__main__":
    main()
