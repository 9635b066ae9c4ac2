#!/usr/bin/env python3
"""Writes a large photo-like PNG row band by row band, never holding the image: smooth
structure (random sinusoids at three scales, different per channel) plus fine grain, RGB 8-bit,
zlib level 1. Deterministic for a given seed.

usage: huge_image.py OUT WIDTH HEIGHT [seed]
Needs numpy.
"""
import struct
import sys
import zlib

import numpy as np

BAND = 256


def chunk(f, kind, data):
    f.write(struct.pack(">I", len(data)) + kind + data)
    f.write(struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def main():
    out, w, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    # Per channel and scale: frequencies and phases of x and y waves.
    waves = [
        [(rng.uniform(0.5, 1.5) / s, rng.uniform(0.5, 1.5) / s, rng.uniform(0, 6.3, 2), wt)
         for s, wt in [(40.0, 0.2), (300.0, 0.3), (3000.0, 0.3)]]
        for _ in range(3)
    ]
    x = np.arange(w, dtype=np.float32)
    z = zlib.compressobj(1)
    with open(out, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        chunk(f, b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
        for y0 in range(0, h, BAND):
            y = np.arange(y0, min(h, y0 + BAND), dtype=np.float32)[:, None]
            band = np.empty((len(y), w, 3), np.float32)
            for c in range(3):
                v = np.full((len(y), w), 0.1, np.float32)
                for fx, fy, (px, py), wt in waves[c]:
                    v += wt * (0.5 + 0.5 * np.sin(fx * x + px)[None, :] * np.cos(fy * y + py))
                band[:, :, c] = v
            band += 0.1 * rng.random(band.shape, np.float32)
            rows = (np.clip(band, 0, 1) * 255 + 0.5).astype(np.uint8).reshape(len(y), w * 3)
            # Filter type 0 (none) before each row.
            raw = np.concatenate([np.zeros((len(y), 1), np.uint8), rows], axis=1).tobytes()
            data = z.compress(raw)
            if data:
                chunk(f, b"IDAT", data)
        chunk(f, b"IDAT", z.flush())
        chunk(f, b"IEND", b"")


if __name__ == "__main__":
    main()
