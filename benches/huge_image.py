#!/usr/bin/env python3
"""Writes a large photo-like image row band by row band, never holding the image: smooth
structure (random sinusoids at three scales, different per channel) plus fine grain, RGB 8-bit:
a PNG at zlib level 1, or (OUT ending in .tif) an uncompressed strip TIFF of BAND-row strips
(classic TIFF: under 4 GiB of pixels). Deterministic for a given seed.

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


def bands(w, h, rng):
    """The image's rows as bytes, BAND rows at a time."""
    # Per channel and scale: frequencies and phases of x and y waves.
    waves = [
        [(rng.uniform(0.5, 1.5) / s, rng.uniform(0.5, 1.5) / s, rng.uniform(0, 6.3, 2), wt)
         for s, wt in [(40.0, 0.2), (300.0, 0.3), (3000.0, 0.3)]]
        for _ in range(3)
    ]
    x = np.arange(w, dtype=np.float32)
    for y0 in range(0, h, BAND):
        y = np.arange(y0, min(h, y0 + BAND), dtype=np.float32)[:, None]
        band = np.empty((len(y), w, 3), np.float32)
        for c in range(3):
            v = np.full((len(y), w), 0.1, np.float32)
            for fx, fy, (px, py), wt in waves[c]:
                v += wt * (0.5 + 0.5 * np.sin(fx * x + px)[None, :] * np.cos(fy * y + py))
            band[:, :, c] = v
        band += 0.1 * rng.random(band.shape, np.float32)
        yield (np.clip(band, 0, 1) * 255 + 0.5).astype(np.uint8).reshape(len(y), w * 3)


def write_png(out, w, h, rng):
    z = zlib.compressobj(1)
    with open(out, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        chunk(f, b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
        for rows in bands(w, h, rng):
            # Filter type 0 (none) before each row.
            raw = np.concatenate([np.zeros((len(rows), 1), np.uint8), rows], axis=1).tobytes()
            data = z.compress(raw)
            if data:
                chunk(f, b"IDAT", data)
        chunk(f, b"IDAT", z.flush())
        chunk(f, b"IEND", b"")


def write_tiff(out, w, h, rng):
    offsets, counts = [], []
    with open(out, "wb") as f:
        f.write(b"II*\0" + struct.pack("<I", 0))
        for rows in bands(w, h, rng):
            offsets.append(f.tell())
            counts.append(rows.nbytes)
            f.write(rows.tobytes())
        # The arrays the directory points to, then the directory (tags in order).
        arrays = f.tell()
        f.write(struct.pack("<3H", 8, 8, 8))
        f.write(struct.pack(f"<{len(offsets)}I", *offsets))
        f.write(struct.pack(f"<{len(counts)}I", *counts))
        bits, offs, cnts = arrays, arrays + 6, arrays + 6 + 4 * len(offsets)
        one = len(offsets) == 1
        tags = [
            (256, 4, 1, w), (257, 4, 1, h), (258, 3, 3, bits), (259, 3, 1, 1),
            (262, 3, 1, 2), (273, 4, len(offsets), offsets[0] if one else offs),
            (277, 3, 1, 3), (278, 4, 1, BAND), (279, 4, len(counts), counts[0] if one else cnts),
            (284, 3, 1, 1),
        ]
        ifd = f.tell()
        f.write(struct.pack("<H", len(tags)))
        for tag, kind, n, value in tags:
            packed = struct.pack("<H", value) + b"\0\0" if kind == 3 and n == 1 else struct.pack("<I", value)
            f.write(struct.pack("<HHI", tag, kind, n) + packed)
        f.write(struct.pack("<I", 0))
        f.seek(4)
        f.write(struct.pack("<I", ifd))


def main():
    out, w, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    if out.endswith(".tif"):
        write_tiff(out, w, h, rng)
    else:
        write_png(out, w, h, rng)


if __name__ == "__main__":
    main()
