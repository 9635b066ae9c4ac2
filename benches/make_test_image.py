#!/usr/bin/env python3
"""Writes a photo-like test image: smooth structure at several scales plus fine grain.

usage: make_test_image.py OUT WIDTH HEIGHT [rgb|rgba|gray] [seed]
Needs numpy and Pillow. Deterministic for a given seed.
"""
import sys

import numpy as np
from PIL import Image


def main():
    out, w, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    mode = sys.argv[4] if len(sys.argv) > 4 else "rgb"
    rng = np.random.default_rng(int(sys.argv[5]) if len(sys.argv) > 5 else 1)
    channels = {"gray": 1, "rgb": 3, "rgba": 4}[mode]
    img = np.zeros((h, w, channels), np.float32)
    for scale, weight in [(8, 0.5), (64, 0.3), (512, 0.15)]:
        small = rng.random((max(2, h // scale), max(2, w // scale), channels), np.float32)
        layer = [np.asarray(Image.fromarray(small[:, :, c]).resize((w, h), Image.BICUBIC)) for c in range(channels)]
        img += weight * np.stack(layer, axis=2)
    img += 0.05 * rng.random((h, w, channels), np.float32)
    img = np.clip(img, 0, 1)
    if mode == "rgba":  # soft-edged transparency: a large disc
        yy, xx = np.mgrid[0:h, 0:w]
        r = np.hypot((xx - w / 2) / (w / 2), (yy - h / 2) / (h / 2))
        img[:, :, 3] = np.clip((1.0 - r) * 4, 0, 1)
    data = (img * 255 + 0.5).astype(np.uint8)
    pil_mode = {"gray": "L", "rgb": "RGB", "rgba": "RGBA"}[mode]
    Image.fromarray(data[:, :, 0] if channels == 1 else data, pil_mode).save(out, compress_level=1, quality=92)


if __name__ == "__main__":
    main()
