#!/usr/bin/env python3
"""Runs gblur on every file under a folder, to PNG, TIFF and (for 8-bit inputs) JPEG, and
classifies each run, so that a decoder or metadata regression shows in one command.

Classes: ok, refused (exit 1 or 2 with one line on stderr naming the file), unclear refusal
(exit 1 or 2 otherwise), crash (any other exit, or a panic message), hang (over the time
limit), wrong size (the output's size is not the input's, upright), unreadable output,
temp file left, input changed. Sizes are checked against vipsheader where vips reads the
input (orientation 5-8 swaps width and height), else against gblur's own report. Where the
formats define the size differently from vips, the format's own definition counts: a GIF's
logical screen, an ICO's largest entry, an OpenEXR file's display window.

With --pixels, every PNG that gblur wrote from an integer image is also compared with the
input as vips decodes and turns it upright (`vips autorot`), and where those differ, as Pillow
does (`ImageOps.exif_transpose`), each blurred at sigma 0.4 (gblur; scipy for the others):
"pixels differ" where gblur agrees with neither, agreement being a mean difference of at
most 1% of full scale with at most 1% of samples off by more than a quarter of it (colour
premultiplied by alpha). Files whose readings are known to differ, and why, are listed in
benches/corpus-known.tsv ("known difference").

usage: corpus.py GBLUR DIR [--jobs N] [--timeout S] [--out TSV] [--pixels]
"""
import argparse
import concurrent.futures as cf
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

BAD = ("crash", "hang", "wrong size", "unreadable output", "temp file left", "input changed",
       "unclear refusal", "pixels differ")


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def own_size(path):
    """(width, height) where the format defines its size otherwise than vips reads it."""
    import struct
    ext = path.lower().rsplit(".", 1)[-1]
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return None
    if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        return struct.unpack("<HH", head[6:10])
    if ext in ("ico", "cur") and head[:2] == b"\0\0" and len(head) >= 6:
        n = struct.unpack("<H", head[4:6])[0]
        sizes = []
        for i in range(n):
            e = head[6 + 16 * i:22 + 16 * i]
            if len(e) < 16:
                break
            sizes.append((e[0] or 256, e[1] or 256))
        return max(sizes, key=lambda s: s[0] * s[1]) if sizes else None
    if head[:4] == b"\x76\x2f\x31\x01":
        at = 8
        while at < len(head) and head[at]:
            name_end = head.index(b"\0", at)
            name = head[at:name_end]
            type_end = head.index(b"\0", name_end + 1)
            kind = head[name_end + 1:type_end]
            size = struct.unpack("<i", head[type_end + 1:type_end + 5])[0]
            value = head[type_end + 5:type_end + 5 + size]
            if name == b"displayWindow" and kind == b"box2i":
                x0, y0, x1, y1 = struct.unpack("<4i", value)
                return (x1 - x0 + 1, y1 - y0 + 1)
            at = type_end + 5 + size
    return None


def vips_size(path):
    """(width, height) as vips reads the file, upright; None where vips cannot read it."""
    if not shutil.which("vipsheader"):
        return None
    try:
        r = subprocess.run(["vipsheader", "-a", path], capture_output=True, timeout=30, text=True,
                           errors="replace")
    except subprocess.TimeoutExpired:
        return None
    if r.returncode != 0:
        return None
    fields = {}
    for line in r.stdout.splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    try:
        w, h = int(fields["width"]), int(fields["height"])
    except (KeyError, ValueError):
        return None
    # A multi-page file read as one tall strip of pages: the first page's height.
    page = fields.get("page-height")
    if page and page.isdigit() and 0 < int(page) < h:
        h = int(page)
    orientation = fields.get("orientation", "1").split()[0]
    if orientation in ("5", "6", "7", "8"):
        w, h = h, w
    return (w, h)


def load_png(path):
    import cv2
    import numpy as np
    a = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    if a is None:
        return None
    scale = 65535.0 if a.dtype == np.uint16 else 255.0
    a = a.astype(np.float64) / scale
    if a.ndim == 2:
        a = a[:, :, None]
    if a.shape[2] in (1, 2):
        colour, alpha = np.repeat(a[:, :, :1], 3, axis=2), a[:, :, 1:2] if a.shape[2] == 2 else None
    else:
        colour, alpha = a[:, :, :3], a[:, :, 3:4] if a.shape[2] == 4 else None
    return colour, alpha


def pillow_reading(src, out):
    """Writes src as Pillow reads it, upright, to the PNG out; False where Pillow cannot."""
    try:
        from PIL import Image, ImageOps
        img = ImageOps.exif_transpose(Image.open(src))
        if img.mode not in ("RGB", "RGBA", "L", "LA", "I;16"):
            alpha = "A" in img.mode or "transparency" in img.info
            img = img.convert("RGBA" if alpha else "RGB")
        img.save(out)
        return True
    except Exception:
        return False


def pixels_differ(gblur, src, timeout):
    """None where gblur's reading of src agrees with vips's or Pillow's, else what differs."""
    with tempfile.TemporaryDirectory(prefix="corpus-px-") as d:
        ref, ours = os.path.join(d, "ref.png"), os.path.join(d, "ours.png")
        try:
            r = subprocess.run(["vips", "autorot", src, ref], capture_output=True, timeout=timeout)
            if r.returncode != 0:
                return None
            r = subprocess.run([gblur, src, ours, "--sigma", "0.4", "-q"], capture_output=True,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        if r.returncode != 0:
            return None
        a, b = load_png(ref), load_png(ours)
        # Sizes are the size check's to judge.
        if not same_size(a, b):
            return None
        vips = apart(a, b)
        if vips is None:
            return None
        pillow = os.path.join(d, "pillow.png")
        if pillow_reading(src, pillow):
            p = load_png(pillow)
            if same_size(p, b) and apart(p, b) is None:
                return None
        return "from vips: " + vips


def apart(a, b):
    """None where the readings a and b (load_png's, the same size) agree, else how far apart
    they are."""
    import numpy as np
    from scipy.ndimage import gaussian_filter
    (ca, aa), (cb, ab) = a, b
    # The other reading gets gblur's blur too (premultiplied, edges clamped).
    if aa is not None and ab is not None:
        ca, cb = ca * aa, cb * ab
        aa = gaussian_filter(aa, (0.4, 0.4, 0), mode="nearest", truncate=5)
        ca = gaussian_filter(ca, (0.4, 0.4, 0), mode="nearest", truncate=5)
        diff = np.concatenate([np.abs(ca - cb), np.abs(aa - ab)], axis=2)
    else:
        if aa is not None:
            ca = ca * aa
        ca = gaussian_filter(ca, (0.4, 0.4, 0), mode="nearest", truncate=5)
        diff = np.abs(ca - cb)
    mean, far = diff.mean(), (diff > 0.25).mean()
    if mean > 0.01 or far > 0.01:
        return f"mean difference {mean:.3f} of full scale, {100 * far:.1f}% of samples off by over 0.25"
    return None


def same_size(a, b):
    return a is not None and b is not None and a[0].shape == b[0].shape


def one_run(gblur, src, fmt, timeout, expected):
    """Runs gblur on src into a fresh folder as fmt; returns (class, detail, report)."""
    with tempfile.TemporaryDirectory(prefix="corpus-") as out_dir:
        out = os.path.join(out_dir, "out." + fmt)
        before = sha(src)
        try:
            r = subprocess.run([gblur, src, out, "--sigma", "2", "--json"], capture_output=True,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            return "hang", f"over {timeout} s", None
        err = r.stderr.decode("utf-8", "replace")
        lines = [l for l in err.splitlines() if l.strip()]
        left = [f for f in os.listdir(out_dir) if f.startswith(".gblur-")]
        if sha(src) != before:
            return "input changed", "", None
        if left:
            return "temp file left", " ".join(left), None
        if r.returncode not in (0, 1, 2) or "panicked" in err or "RUST_BACKTRACE" in err:
            return "crash", f"exit {r.returncode}: " + (lines[0] if lines else ""), None
        if r.returncode != 0:
            one = len(lines) == 1 and lines[0].startswith("gblur: ") and src in lines[0]
            if os.path.exists(out):
                return "unclear refusal", "an output was left: " + " | ".join(lines), None
            return ("refused" if one else "unclear refusal"), " | ".join(lines)[:300], None
        try:
            report = json.loads(r.stdout)
        except ValueError:
            report = None
        if not os.path.exists(out):
            return "unreadable output", "exit 0 and no output", report
        got = vips_size(out)
        if got is None:
            return "unreadable output", "vips cannot read what gblur wrote", report
        want = expected
        if want is None and report:
            want = (report["input"]["width"], report["input"]["height"])
        if want is not None and got != want:
            return "wrong size", f"{got[0]}x{got[1]}, input {want[0]}x{want[1]}", report
        return "ok", "", report


EIGHT_BIT = ("L8", "La8", "Rgb8", "Rgba8")


def known_differences():
    """benches/corpus-known.tsv: a path under the corpus folder, a tab, why its readings
    differ."""
    here = os.path.dirname(os.path.abspath(__file__))
    known = {}
    with open(os.path.join(here, "corpus-known.tsv")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                path, _, why = line.rstrip("\n").partition("\t")
                known[path] = why
    return known


KNOWN = {}


def runs_for(gblur, src, timeout, pixels):
    expected = own_size(src) or vips_size(src)
    results = []
    cls, detail, report = one_run(gblur, src, "png", timeout, expected)
    results.append(("png", cls, detail))
    integer = report and report["input"]["color"] not in ("Rgb32F", "Rgba32F")
    if pixels and cls == "ok" and integer and src.lower().rsplit(".", 1)[-1] not in ("gif", "ico", "cur"):
        differ = pixels_differ(gblur, src, timeout)
        known = next((why for path, why in KNOWN.items() if src.endswith("/" + path)), None)
        if differ and known:
            results.append(("pixels", "known difference", known))
        elif differ:
            results.append(("pixels", "pixels differ", differ))
    cls2, detail2, _ = one_run(gblur, src, "tif", timeout, expected)
    results.append(("tif", cls2, detail2))
    # JPEG for 8-bit inputs (as gblur's PNG run read them), and for every input gblur refused,
    # so that a refusal that depends on the output is seen too.
    color = report["input"]["color"] if report else None
    if color in EIGHT_BIT or cls != "ok":
        cls3, detail3, _ = one_run(gblur, src, "jpg", timeout, expected)
        results.append(("jpg", cls3, detail3))
    return src, results


def main():
    p = argparse.ArgumentParser()
    p.add_argument("gblur")
    p.add_argument("dir")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--out", default=None, help="write every run as TSV here")
    p.add_argument("--pixels", action="store_true", help="compare pixels with vips's decode")
    a = p.parse_args()
    KNOWN.update(known_differences())
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(a.dir) for f in fs)
    counts = {}
    bad = []
    rows = []
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    os.environ.update(env)
    with cf.ThreadPoolExecutor(a.jobs) as pool:
        futures = [pool.submit(runs_for, a.gblur, f, a.timeout, a.pixels) for f in files]
        for i, fut in enumerate(cf.as_completed(futures), 1):
            src, results = fut.result()
            for fmt, cls, detail in results:
                counts[cls] = counts.get(cls, 0) + 1
                rows.append((src, fmt, cls, detail))
                if cls in BAD:
                    bad.append((src, fmt, cls, detail))
            if i % 100 == 0:
                print(f"  {i} of {len(files)} files", file=sys.stderr, flush=True)
    if a.out:
        with open(a.out, "w") as f:
            for row in sorted(rows):
                f.write("\t".join(str(x).replace("\t", " ").replace("\n", " ") for x in row) + "\n")
    print(f"{len(files)} files, {len(rows)} runs under {a.dir}")
    for cls in sorted(counts, key=lambda c: -counts[c]):
        print(f"  {cls:18} {counts[cls]}")
    for src, fmt, cls, detail in sorted(bad):
        print(f"{cls}\t{fmt}\t{src}\t{detail}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
