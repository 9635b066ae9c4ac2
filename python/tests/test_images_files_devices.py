"""blur_image, blur_file and Device: the command's own filter on images, its job on files,
and an OpenCL device (PoCL's CPU device in CI) opened once and reused."""

import json
import pathlib
import subprocess

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
    assert "Device" in repr(device)
    with pytest.raises(RuntimeError):
        gblur.Device("no such device")
