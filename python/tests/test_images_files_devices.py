"""blur_image, blur_file and Device: the command's own filter on images, its job on files,
and an OpenCL device (PoCL's CPU device in CI) opened once and reused."""

import gc
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import scipy.ndimage as ndi

import gblur

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "coffee.png"


def test_blur_image_premultiplies_alpha_and_keeps_dtype():
    img = np.zeros((40, 40, 4), np.uint8)
    img[10:30, 10:30] = (255, 0, 0, 255)
    out = gblur.blur_image(img, 3.0)
    assert out.dtype == np.uint8 and out.shape == img.shape
    visible = out[..., 3] > 8
    assert (out[visible][:, 0] >= 250).all(), "transparent black darkened the red"
    # Without alpha handling the colour is blurred on its own, and darkens.
    plain = gblur.blur_image(img, 3.0, alpha=False)
    assert plain[..., 0][visible].min() < 200
    assert not np.shares_memory(out, img) and img[0, 0, 3] == 0


def test_blur_image_matches_scipy_nearest_on_gray_and_float():
    rng = np.random.default_rng(5)
    gray = rng.random((60, 70)).astype(np.float32)
    got = gblur.blur_image(gray, 4.0)
    want = ndi.gaussian_filter(gray.astype(np.float64), 4.0, mode="nearest")
    assert np.abs(got - want).max() < 1e-3
    rgb = (rng.random((30, 50, 3)) * 65535).astype(np.uint16)
    got = gblur.blur_image(rgb, 2.5, sigma_y=0.0, mode="reflect")
    want = ndi.gaussian_filter(rgb.astype(np.float64), (0, 2.5, 0), mode="reflect")
    assert np.abs(got - np.rint(want)).max() <= 12
    with pytest.raises(ValueError):
        gblur.blur_image(np.zeros((2, 2, 2, 2)), 1.0)
    with pytest.raises(ValueError):
        gblur.blur_image(gray, -1.0)


def test_blur_image_into_output_in_place_and_through_copies():
    rng = np.random.default_rng(8)
    rgb = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
    want = gblur.blur_image(rgb, 3.0)
    out = np.full_like(rgb, 7)
    assert gblur.blur_image(rgb, 3.0, output=out) is out
    assert np.array_equal(out, want)
    # The image itself: blurred in place.
    inplace = rgb.copy()
    assert gblur.blur_image(inplace, 3.0, output=inplace) is inplace
    assert np.array_equal(inplace, want)
    # An output overlapping the image elsewhere: the image is read before it is overwritten.
    wide = np.zeros((48, 64 * 2, 3), np.uint8)
    wide[:, :64] = rgb
    shifted = wide[:, 32:96]
    img = wide[:, :64]
    got = gblur.blur_image(img, 3.0, output=shifted)
    assert got is shifted and np.array_equal(got, want)
    # Outputs the library cannot take as they are (strided, or another than the blur's type).
    strided = np.zeros((48, 128, 3), np.uint8)[:, ::2]
    assert np.array_equal(gblur.blur_image(rgb, 3.0, output=strided), want)
    gray = rng.random((40, 30))
    out64 = np.zeros_like(gray)
    assert np.array_equal(gblur.blur_image(gray, 2.0, output=out64), gblur.blur_image(gray, 2.0))
    # A call the library refuses leaves the output as it was, from a strided image too.
    kept = np.full_like(rgb, 9)
    for image in (rgb, np.zeros((48, 128, 3), np.uint8)[:, ::2]):
        with pytest.raises(ValueError):
            gblur.blur_image(image, -1.0, output=kept)
        assert (kept == 9).all()
    with pytest.raises(ValueError, match="shape"):
        gblur.blur_image(rgb, 3.0, output=np.zeros((48, 64), np.uint8))
    with pytest.raises(ValueError, match="dtype"):
        gblur.blur_image(rgb, 3.0, output=np.zeros(rgb.shape, np.uint16))
    frozen = np.zeros_like(rgb)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        gblur.blur_image(rgb, 3.0, output=frozen)
    with pytest.raises(TypeError):
        gblur.blur_image(rgb, 3.0, output=[1, 2])


def test_blur_file_writes_what_the_command_writes(tmp_path):
    ours, theirs = tmp_path / "py.png", tmp_path / "cli.png"
    report = gblur.blur_file(SAMPLE, ours, 4.0, device="rust")
    assert report["method"] == "recursive"
    assert any(p["name"] == "decode" for p in report["passes"])
    cli = ROOT / "target" / "release" / "gblur"
    if cli.exists():
        subprocess.run([str(cli), str(SAMPLE), str(theirs), "--sigma", "4", "--device", "rust",
                        "--quiet"], check=True)
        assert ours.read_bytes() == theirs.read_bytes()
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    with pytest.raises(OSError, match="bad.png"):
        gblur.blur_file(bad, tmp_path / "x.png", 2.0)
    assert not (tmp_path / "x.png").exists()
    with pytest.raises(ValueError):
        gblur.blur_file(SAMPLE, tmp_path / "y.jpg", 2.0, quality=0)


def test_a_webp_is_lossy_by_default_and_lossless_when_asked(tmp_path):
    lossy, lossless = tmp_path / "lossy.webp", tmp_path / "lossless.webp"
    gblur.blur_file(SAMPLE, lossy, 2.0, device="rust")
    gblur.blur_file(SAMPLE, lossless, 2.0, device="rust", quality="lossless")
    assert lossy.read_bytes()[12:16] == b"VP8 "
    assert lossless.read_bytes()[12:16] == b"VP8L"
    with pytest.raises(ValueError, match="lossless"):
        gblur.blur_file(SAMPLE, tmp_path / "z.webp", 2.0, quality="best")
    # An option the output's format cannot take is the job's set-up error, as for the command.
    with pytest.raises(OSError, match="WebP's lossless coding"):
        gblur.blur_file(SAMPLE, tmp_path / "z.jpg", 2.0, quality="lossless")


def test_an_opencl_device_opened_once_gives_the_host_result():
    device = gblur.Device("cpu")
    assert device.is_opencl, device.name
    host = gblur.Device("rust")
    assert not host.is_opencl
    rng = np.random.default_rng(6)
    vol = rng.random((12, 40, 36)).astype(np.float32)
    for mode in ["reflect", "nearest", "mirror", "wrap", "constant"]:
        for sigma in [(1.5, 3.0, 2.5), (0, 0, 4.0), (2.0, 0, 0)]:
            on_device = gblur.gaussian_filter(vol, sigma, mode=mode, cval=0.5, device=device)
            on_host = gblur.gaussian_filter(vol, sigma, mode=mode, cval=0.5)
            assert np.abs(on_device - on_host).max() < 1e-4, (mode, sigma)
    u = (vol * 255).astype(np.uint8)
    on_device = gblur.gaussian_filter(u, 2.0, device="cpu")
    assert np.abs(on_device.astype(int) - gblur.gaussian_filter(u, 2.0)).max() <= 1
    f64 = gblur.gaussian_filter(vol.astype(np.float64), 2.0, output=np.float32, device=device)
    assert f64.dtype == np.float32 and np.abs(f64 - gblur.gaussian_filter(vol, 2.0)).max() < 1e-4
    img = (rng.random((50, 60, 3)) * 255).astype(np.uint8)
    assert np.abs(gblur.blur_image(img, 3.0, device=device).astype(int)
                  - gblur.blur_image(img, 3.0)).max() <= 1
    # In place on the device: the input is the output.
    same = vol.copy()
    assert gblur.gaussian_filter(same, 2.0, output=same, device=device) is same
    assert np.abs(same - gblur.gaussian_filter(vol, 2.0)).max() < 1e-4
    into = np.zeros_like(img)
    assert gblur.blur_image(img, 3.0, device=device, output=into) is into
    assert np.abs(into.astype(int) - gblur.blur_image(img, 3.0)).max() <= 1
    assert "Device" in repr(device)
    with pytest.raises(RuntimeError):
        gblur.Device("no such device")


def test_arrays_in_a_devices_pinned_memory_blur_as_any_other():
    device = gblur.Device("cpu")
    vol = np.random.default_rng(8).random((30, 40, 36)).astype(np.float32)
    a = device.zeros_pinned(vol.shape)
    assert a.dtype == np.float32 and a.shape == vol.shape and not a.any()
    a[...] = vol
    b = device.zeros_pinned(list(vol.shape))
    for mode in ["nearest", "reflect"]:
        want = gblur.gaussian_filter(vol, (1.5, 3.0, 2.5), mode=mode, device=device)
        got = gblur.gaussian_filter(a, (1.5, 3.0, 2.5), mode=mode, output=b, device=device)
        assert got is b and np.array_equal(b, want), mode
        assert np.array_equal(a, vol)
        # One side pinned, the other ordinary memory (a new array, or the caller's).
        assert np.array_equal(gblur.gaussian_filter(a, (1.5, 3.0, 2.5), mode=mode,
                                                    device=device), want), mode
        b[...] = 0
        gblur.gaussian_filter(vol, (1.5, 3.0, 2.5), mode=mode, output=b, device=device)
        assert np.array_equal(b, want), mode
    # In place, and a NaN (the usual route then, as for any array).
    a[5, 6, 7] = np.nan
    vol[5, 6, 7] = np.nan
    assert gblur.gaussian_filter(a, 2.0, mode="nearest", output=a, device=device) is a
    want = gblur.gaussian_filter(vol, 2.0, mode="nearest", device=device)
    assert np.array_equal(a, want, equal_nan=True) and np.isnan(a).sum() > 1
    # A NaN in a pinned input blurred into ordinary memory is seen on the device.
    a[...] = vol
    assert np.array_equal(gblur.gaussian_filter(a, 2.0, mode="nearest", device=device), want,
                          equal_nan=True)
    # The memory lives as long as any view of it.
    row, kept = got[3], got[3].copy()
    del b, got
    gc.collect()
    assert np.array_equal(row, kept)
    with pytest.raises(RuntimeError, match="OpenCL device"):
        gblur.Device("rust").zeros_pinned((4,))


SLABS = """
import numpy as np, gblur
device, host = gblur.Device("cpu"), gblur.Device("rust")
x = np.random.default_rng(9).random((600, 40, 36), dtype=np.float32)  # 3.3 MiB
for mode in ["nearest", "reflect"]:
    want = gblur.gaussian_filter(x, (3.0, 1.5, 2.0), mode=mode, device=host)
    got = gblur.gaussian_filter(x, (3.0, 1.5, 2.0), mode=mode, device=device)
    assert np.abs(got - want).max() < 1e-5 * np.ptp(want), mode
pinned = device.zeros_pinned(x.shape)
pinned[...] = x
want = gblur.gaussian_filter(x, 3.0, mode="nearest", device=host)
assert gblur.gaussian_filter(pinned, 3.0, mode="nearest", output=pinned, device=device) is pinned
assert np.abs(pinned - want).max() < 1e-5 * np.ptp(want)
try:
    gblur.gaussian_filter(np.zeros((4, 400, 400), np.float32), 2.0, device=device)
except RuntimeError as e:
    print(e)
"""


def test_an_array_over_the_devices_allocation_goes_through_in_slabs():
    # The allocation limit is read as the devices are first listed: a process of its own.
    env = dict(os.environ, GBLUR_MAX_ALLOC_MIB="1")
    run = subprocess.run([sys.executable, "-c", SLABS], env=env, capture_output=True,
                         text=True, cwd="/")
    assert run.returncode == 0, run.stderr
    # An array whose every slab would still be over the limit is refused in one line.
    refusal = run.stdout.strip()
    assert "\n" not in refusal and "cannot hold" in refusal and "1 MiB" in refusal, refusal


def _png_with_profile(path, profile):
    """A 4x4 mid-gray RGB PNG carrying `profile` in an iCCP chunk."""
    import struct
    import zlib

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\0" + bytes([128, 128, 128] * 4) for _ in range(4))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0))
    png += chunk(b"iCCP", b"test\0\0" + zlib.compress(profile))
    png += chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
    path.write_bytes(png)


def _gamma22_profile():
    """An RGB matrix-shaper ICC profile with Adobe RGB's primaries (D50) and gamma 2.2."""
    import struct

    def xyz(x, y, z):
        return b"XYZ \0\0\0\0" + b"".join(struct.pack(">i", round(v * 65536)) for v in (x, y, z))

    curve = b"curv\0\0\0\0" + struct.pack(">IH", 1, 0x0233) + b"\0\0"
    desc = b"gamma 2.2 test\0"
    tags = [(b"desc", b"desc\0\0\0\0" + struct.pack(">I", len(desc)) + desc + bytes(79)),
            (b"wtpt", xyz(0.9642, 1.0, 0.8249)), (b"rXYZ", xyz(0.6097, 0.3111, 0.0195)),
            (b"gXYZ", xyz(0.2053, 0.6257, 0.0609)), (b"bXYZ", xyz(0.1492, 0.0632, 0.7446)),
            (b"rTRC", curve), (b"gTRC", curve), (b"bTRC", curve)]
    at = 128 + 4 + 12 * len(tags)
    table, body = b"", b""
    for sig, data in tags:
        data += bytes(-len(data) % 4)
        table += sig + struct.pack(">II", at + len(body), len(data))
        body += data
    head = struct.pack(">I", at + len(body)) + bytes(4) + struct.pack(">I", 0x02100000)
    head += b"mntrRGB XYZ " + bytes(12) + b"acsp" + bytes(24) + struct.pack(">I", 0)
    head += xyz(0.9642, 1.0, 0.8249)[8:] + bytes(48)
    return head + struct.pack(">I", len(tags)) + table + body


def test_blur_file_converts_to_srgb_where_asked(tmp_path):
    tagged = tmp_path / "gamma22.png"
    _png_with_profile(tagged, _gamma22_profile())
    kept, converted = tmp_path / "kept.png", tmp_path / "srgb.png"
    report = gblur.blur_file(tagged, kept, 2.0, device="rust")
    assert b"iCCP" in kept.read_bytes()
    assert not any("--to-srgb" in n for n in report["notes"])
    report = gblur.blur_file(tagged, converted, 2.0, device="rust", to_srgb=True)
    assert b"iCCP" not in converted.read_bytes()
    assert any("--to-srgb: converted" in n for n in report["notes"]), report["notes"]


def _worker_threads():
    """How many of this process's threads are gblur's own worker pools' (Linux names them)."""
    tasks = pathlib.Path("/proc/self/task")
    return sum(1 for t in tasks.iterdir() if (t / "comm").read_text().startswith("gblur-"))


@pytest.mark.skipif(not pathlib.Path("/proc/self/task").exists(), reason="threads counted in /proc")
def test_workers_runs_on_that_many_threads_and_gives_the_same_result():
    rng = np.random.default_rng(9)
    volume = rng.random((20, 300, 260)).astype(np.float32)
    image = (rng.random((300, 400, 3)) * 255).astype(np.uint8)
    before = _worker_threads()
    want = gblur.gaussian_filter(volume, 3.0)
    want_image = gblur.blur_image(image, 5.0)
    assert _worker_threads() == before, "the default runs on the global pool"
    for workers in (1, 3, -1):
        np.testing.assert_array_equal(gblur.gaussian_filter(volume, 3.0, workers=workers), want)
        np.testing.assert_array_equal(gblur.gaussian_filter1d(volume, 3.0, workers=workers),
                                      gblur.gaussian_filter1d(volume, 3.0))
        np.testing.assert_array_equal(gblur.blur_image(image, 5.0, workers=workers), want_image)
    # A pool per count asked for (1, 3 and every core), kept for the next call.
    assert _worker_threads() == before + sum({1, 3, os.cpu_count() or 1})


def test_workers_is_checked_as_scipy_fft_checks_it():
    a = np.ones((8, 8), np.float32)
    cores = os.cpu_count() or 1
    with pytest.raises(ValueError, match="must not be zero"):
        gblur.gaussian_filter(a, 2.0, workers=0)
    with pytest.raises(ValueError, match="must not be less than"):
        gblur.gaussian_filter(a, 2.0, workers=-cores - 1)
    with pytest.raises(ValueError, match="at most"):
        gblur.blur_image(a, 2.0, workers=16 * cores + 1)
    with pytest.raises(TypeError):
        gblur.gaussian_filter(a, 2.0, workers=1.5)


def test_blur_image_takes_a_misaligned_array():
    raw = np.zeros(2 * 30 * 40 + 1, np.uint8)
    image = np.frombuffer(raw.tobytes(), np.uint16, offset=1).reshape(30, 40)
    assert not image.flags.aligned
    np.testing.assert_array_equal(gblur.blur_image(image, 2.0), np.zeros((30, 40), np.uint16))


def test_a_kept_scratch_gives_the_same_images_and_is_let_go_on_request():
    rng = np.random.default_rng(12)
    images = [(rng.random((700, 900, 3)) * 255).astype(np.uint8),
              (rng.random((301, 517, 4)) * 65535).astype(np.uint16),
              rng.random((259, 333)).astype(np.float32)]

    def blur_all():
        # The largest image first: the smaller ones then take its kept scratch; 8 workers
        # filter several bands at once, into two scratches.
        return [gblur.blur_image(im, 4.0, workers=w) for im in images for w in (1, 8)]

    try:
        gblur.keep_scratch(0)
        fresh = blur_all()
        gblur.keep_scratch(256 << 20)
        kept = blur_all()
    finally:
        gblur.keep_scratch(256 << 20)
    for a, b in zip(fresh, kept):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="must not be negative"):
        gblur.keep_scratch(-1)
    with pytest.raises(TypeError):
        gblur.keep_scratch(1.5)
