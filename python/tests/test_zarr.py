"""gblur.zarr: OME-Zarr 0.4 (Zarr v2) and 0.5 (Zarr v3) images blurred and given pyramids, on a
two-worker LocalCluster, checked against scipy and read back by ome-zarr-py."""

import os

import numpy as np
import pytest
import scipy.ndimage as ndi

zarr = pytest.importorskip("zarr")
ome_io = pytest.importorskip("ome_zarr.io")
ome_reader = pytest.importorskip("ome_zarr.reader")
ome_writer = pytest.importorskip("ome_zarr.writer")
ome_format = pytest.importorskip("ome_zarr.format")
distributed = pytest.importorskip("distributed")

import gblur
import gblur.zarr

FORMATS = {"0.4": ome_format.FormatV04, "0.5": ome_format.FormatV05}


@pytest.fixture(scope="module")
def volume():
    rng = np.random.default_rng(3)
    c, z, y, x = np.meshgrid(*[np.arange(n) for n in (2, 20, 64, 40)], indexing="ij")
    smooth = 30000 + 15000 * np.sin(x / 7.0) * np.cos(y / 5.0) + 5000 * c
    return (smooth + rng.normal(0, 3000, smooth.shape)).clip(0, 65535).astype(np.uint16)


def write_ome(path, data, version):
    """An OME-Zarr image of ``data`` (c, z, y, x) as ome-zarr-py writes it, with a pyramid."""
    fmt = FORMATS[version]()
    store = ome_io.parse_url(str(path), mode="w", fmt=fmt).store
    root = zarr.group(store=store, zarr_format=fmt.zarr_format)
    ome_writer.write_image(data, root, axes="czyx", fmt=fmt,
                           storage_options=dict(chunks=(1, 8, 24, 16)))
    return str(path)


def read_back(path):
    node = list(ome_reader.Reader(ome_io.parse_url(str(path)))())[0]
    return [np.asarray(d) for d in node.data], node.metadata


@pytest.mark.parametrize("version", ["0.4", "0.5"])
def test_blur_keeps_the_format_and_agrees_with_scipy(client, tmp_path, volume, version):
    source = write_ome(tmp_path / "in.zarr", volume, version)
    target = str(tmp_path / "out.zarr")
    sigma = {"z": 2.0, "y": 12.0, "x": 30.0}
    gblur.zarr.blur(source, target, sigma, levels=3)
    levels, meta = read_back(target)
    assert [lv.shape for lv in levels] == [(2, 20, 64, 40), (2, 20, 32, 20), (2, 20, 16, 10)]
    assert [a["name"] for a in meta["axes"]] == ["c", "z", "y", "x"]
    group = zarr.open_group(target, mode="r")
    assert group.metadata.zarr_format == (2 if version == "0.4" else 3)
    attrs = group.attrs.asdict()
    ms = attrs["ome"]["multiscales"][0] if version == "0.5" else attrs["multiscales"][0]
    assert ms["datasets"][1]["coordinateTransformations"][0]["scale"] == [1.0, 1.0, 2.0, 2.0]
    assert levels[0].dtype == np.uint16
    # The channels left alone, every spatial axis blurred: within 1e-3 of the range of scipy.
    want = ndi.gaussian_filter(volume.astype(np.float64), (0, 2, 12, 30), mode="reflect")
    assert np.abs(levels[0] - want).max() <= 1e-3 * 65535
    whole = gblur.gaussian_filter(volume, (0, 2, 12, 30))
    assert np.abs(levels[0].astype(int) - whole).max() <= 1 + 1e-4 * 65535
    # Each level the one above smoothed (sigma 2/3 on y and x) and sampled every second row.
    above = levels[0].astype(np.float64)
    below = ndi.gaussian_filter(above, (0, 0, 2 / 3, 2 / 3), mode="reflect")[..., ::2, ::2]
    assert np.abs(levels[1] - below).max() <= 1.0
    assert not [p for p in os.listdir(tmp_path) if "partial" in p]


def test_pyramid_and_the_command(client, tmp_path, volume):
    source = write_ome(tmp_path / "in.zarr", volume[:, :4], "0.5")
    target = str(tmp_path / "pyramid.zarr")
    assert gblur.zarr.main(["pyramid", source, target, "--levels", "4"]) == 0
    levels, _ = read_back(target)
    assert [lv.shape[-2:] for lv in levels] == [(64, 40), (32, 20), (16, 10), (8, 5)]
    assert np.array_equal(levels[0], volume[:, :4])
    assert gblur.zarr.main(["blur", source, str(tmp_path / "b.zarr"), "--sigma", "y=3,x=3",
                            "--levels", "1"]) == 0
    got, _ = read_back(tmp_path / "b.zarr")
    # Its chunks carry the recursive filter along y and x: the in-memory recursive filter's
    # result (which a 16-bit result in memory leaves for scipy's kernel below sigma 50).
    want = gblur.gaussian_filter(volume[:, :4], (0, 0, 3, 3), method="recursive")
    assert len(got) == 1 and np.abs(got[0].astype(int) - want).max() <= 1


def test_bad_input_and_existing_output(tmp_path, capsys, volume):
    source = write_ome(tmp_path / "in.zarr", volume[:1, :2], "0.4")
    plain = zarr.open_group(str(tmp_path / "plain.zarr"), mode="w")
    plain.create_array("0", shape=(4, 4), dtype="u1")
    with pytest.raises(ValueError, match="plain.zarr: not an OME-Zarr image"):
        gblur.zarr.blur(str(tmp_path / "plain.zarr"), str(tmp_path / "o.zarr"), 2)
    with pytest.raises(ValueError, match="would replace the input"):
        gblur.zarr.blur(source, source, 2)
    os.mkdir(tmp_path / "taken.zarr")
    assert gblur.zarr.main(["blur", source, str(tmp_path / "taken.zarr"), "-s", "2"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "taken.zarr: already exists" in err[0]
    assert gblur.zarr.main(["blur", str(tmp_path / "missing.zarr"), str(tmp_path / "m.zarr"),
                            "-s", "2"]) == 1
    assert "missing.zarr" in capsys.readouterr().err
    with pytest.raises(ValueError, match="no axis 'q'"):
        gblur.zarr.blur(source, str(tmp_path / "q.zarr"), {"q": 2})
    assert not [p for p in os.listdir(tmp_path) if "partial" in p or p in ("o.zarr", "q.zarr")]


def test_a_failure_midway_leaves_nothing(tmp_path, volume):
    # The mode is checked as the first level is blurred, after the output has been started.
    source = write_ome(tmp_path / "in.zarr", volume[:1, :2], "0.5")
    with pytest.raises(RuntimeError):
        gblur.zarr.blur(source, str(tmp_path / "out.zarr"), 2, mode="sideways")
    assert sorted(os.listdir(tmp_path)) == ["in.zarr"]
