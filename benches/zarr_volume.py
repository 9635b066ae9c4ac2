#!/usr/bin/env python3
"""An OME-Zarr volume blurred out of core and given a pyramid, on a Dask LocalCluster of
worker processes each held to a memory limit: `gblur.zarr.blur` then `gblur.zarr.pyramid`,
timed, with the largest worker's peak resident memory; a crop of the result checked against
scipy (float64, the same mode) and the output read back by ome-zarr-py.

The input (a uint16 volume of smooth structures plus noise, OME-Zarr 0.4 on Zarr v2, or 0.5 on
Zarr v3) is written first under --dir if it is not there.

usage: zarr_volume.py [--dir /tmp/gblur-ome] [--shape 256,2048,2048] [--chunks 64,256,256]
                   [--sigma 20] [--levels 4] [--workers 2] [--memory-limit 1GiB] [--version 0.4]
"""
import argparse
import os
import resource
import shutil
import time

import numpy as np


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_input(path, shape, chunks, version):
    import dask.array as da
    import zarr

    fmt = 2 if version == "0.4" else 3
    group = zarr.open_group(path, mode="w", zarr_format=fmt)
    kwargs = ({"chunk_key_encoding": {"name": "v2", "separator": "/"}} if fmt == 2
              else {"dimension_names": ["z", "y", "x"]})
    array = group.create_array("0", shape=shape, chunks=chunks, dtype=np.uint16, **kwargs)

    def block(b, block_info=None):
        # Smooth waves over the whole volume plus noise: a microscope volume's background and
        # structure, with its shot noise.
        loc = block_info[None]["array-location"]
        z, y, x = np.meshgrid(*[np.arange(a, b) for a, b in loc], indexing="ij")
        smooth = 20000 + 12000 * np.sin(x / 97.0) * np.cos(y / 61.0) + 8000 * np.sin(z / 23.0)
        rng = np.random.default_rng(loc[0][0] * 7919 + loc[1][0] * 31 + loc[2][0])
        return (smooth + rng.normal(0, 2000, b.shape)).clip(0, 65535).astype(np.uint16)

    da.map_blocks(block, da.zeros(shape, chunks=chunks, dtype=np.uint16),
                  dtype=np.uint16).store(array, lock=False)
    axes = [{"name": n, "type": "space", "unit": "micrometer"} for n in "zyx"]
    multiscale = {"name": "synthetic", "axes": axes, "datasets": [
        {"path": "0", "coordinateTransformations": [{"type": "scale", "scale": [2.0, 0.5, 0.5]}]}]}
    if version == "0.4":
        multiscale["version"] = "0.4"
        group.attrs.update({"multiscales": [multiscale]})
    else:
        group.attrs.update({"ome": {"version": "0.5", "multiscales": [multiscale]}})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/tmp/gblur-ome")
    ap.add_argument("--shape", default="256,2048,2048")
    ap.add_argument("--chunks", default="64,256,256")
    ap.add_argument("--sigma", type=float, default=20.0)
    ap.add_argument("--levels", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-limit", default="1GiB")
    ap.add_argument("--version", default="0.4", choices=["0.4", "0.5"])
    args = ap.parse_args()
    shape = tuple(int(v) for v in args.shape.split(","))
    chunks = tuple(int(v) for v in args.chunks.split(","))
    os.makedirs(args.dir, exist_ok=True)
    source = os.path.join(args.dir, f"input-{args.version}-{'x'.join(map(str, shape))}.zarr")
    blurred = os.path.join(args.dir, "blurred.zarr")
    pyramid = os.path.join(args.dir, "pyramid.zarr")

    from distributed import Client, LocalCluster

    import gblur.zarr

    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      memory_limit=args.memory_limit, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        if not os.path.exists(source):
            t = time.perf_counter()
            make_input(source, shape, chunks, args.version)
            print(f"input written in {time.perf_counter() - t:.1f} s: {source}", flush=True)
        before = max(client.run(peak_rss_mib).values())
        t = time.perf_counter()
        gblur.zarr.blur(source, blurred, args.sigma, levels=1, overwrite=True)
        blur_s = time.perf_counter() - t
        t = time.perf_counter()
        gblur.zarr.pyramid(blurred, pyramid, args.levels, downscale_axes=["y", "x"],
                           overwrite=True)
        pyramid_s = time.perf_counter() - t
        peak = max(client.run(peak_rss_mib).values())
    gib = np.prod(shape) * 2 / 2**30
    print(f"{'x'.join(map(str, shape))} uint16 ({gib:.1f} GiB) in {chunks} chunks, OME-Zarr "
          f"{args.version}, {args.workers} workers of 1 thread at {args.memory_limit} each")
    print(f"blur sigma {args.sigma:g}: {blur_s:.1f} s; pyramid of {args.levels} levels: "
          f"{pyramid_s:.1f} s; largest worker peak {peak:.0f} MiB (after writing the input: "
          f"{before:.0f} MiB)")

    import scipy.ndimage as ndi
    import zarr

    # A crop checked against scipy: the crop with a margin past the filter's reach to 1e-7,
    # where the reach fits, else the whole axis.
    src = zarr.open_group(source, mode="r")["0"]
    out = zarr.open_group(blurred, mode="r")["0"]
    margin = int(9.5 * args.sigma) + 3
    box = [(n // 2 - 16, n // 2 + 16) for n in shape]
    lo = [max(a - margin, 0) for a, _ in box]
    hi = [min(b + margin, n) for (_, b), n in zip(box, shape)]
    region = src[tuple(slice(a, b) for a, b in zip(lo, hi))].astype(np.float64)
    want = ndi.gaussian_filter(region, args.sigma, mode="reflect")
    want = want[tuple(slice(a - l, b - l) for (a, b), l in zip(box, lo))]
    got = out[tuple(slice(a, b) for a, b in box)].astype(np.float64)
    print(f"32³ crop at the middle against scipy (float64, mode reflect): largest difference "
          f"{np.abs(got - want).max():.2f} levels of 65535")

    from ome_zarr.io import parse_url
    from ome_zarr.reader import Reader

    node = list(Reader(parse_url(pyramid))())[0]
    print("ome-zarr-py reads the pyramid:", [tuple(d.shape) for d in node.data],
          [a["name"] for a in node.metadata["axes"]])
    shutil.rmtree(blurred, ignore_errors=True)


if __name__ == "__main__":
    main()
