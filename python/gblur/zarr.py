"""OME-Zarr images blurred out of core, and multiscale pyramids built from them.

Reads an OME-Zarr image (NGFF 0.4 on Zarr v2, NGFF 0.5 on Zarr v3), blurs its full-resolution
level with gblur's Gaussian on whatever Dask scheduler is active (a ``distributed`` cluster, or
Dask's threads), and writes a new OME-Zarr image of the same NGFF version with its axes, units,
transformations and other metadata kept, and a multiscale pyramid below the blurred level:
each level the previous one smoothed against aliasing (sigma 2/3 along each downsampled axis,
``skimage.transform.pyramid_reduce``'s default for a factor of 2) and sampled every second
sample.

The work is out of core and bounded per worker: each axis of the blur is a pass of its own
that reads the array chunk by chunk and writes float32 scratch beside the output (removed
after), and along an axis where the recursive filter runs, only the states entering each chunk
(8 numbers per line and chunk) are held between reading a chunk's summary and filtering it.
Nothing depends on sigma. The output is written under a temporary name and renamed into place
when complete: a failed run leaves no half-written image.

- :func:`blur`: blur an image and write it with its pyramid.
- :func:`pyramid`: write an image's multiscale pyramid, rebuilt from its full resolution.
- The command ``gblur-zarr`` (or ``python -m gblur.zarr``) does both for users who do not write
  Python: ``gblur-zarr blur in.zarr out.zarr --sigma 20``.
"""

import argparse
import os
import shutil
import sys
import uuid

import numpy as np

__all__ = ["blur", "pyramid", "main"]

# skimage.transform.pyramid_reduce's sigma for a downscale of 2: 2 * 2 / 6.
DOWNSCALE_SIGMA = 2.0 / 3.0

_VERSIONS = ("0.4", "0.5")


class _Image:
    """An OME-Zarr image as read: its first multiscale's metadata and its arrays."""

    def __init__(self, path):
        import zarr

        self.path = path
        try:
            self.group = zarr.open_group(path, mode="r")
        except Exception as e:
            raise ValueError(f"{path}: not a Zarr group ({type(e).__name__}: {e})") from None
        self.attrs = self.group.attrs.asdict()
        self.zarr_format = self.group.metadata.zarr_format
        if "ome" in self.attrs:
            ome = self.attrs["ome"]
            self.version = str(ome.get("version"))
            multiscales = ome.get("multiscales")
        elif "multiscales" in self.attrs:
            multiscales = self.attrs["multiscales"]
            self.version = str((multiscales or [{}])[0].get("version"))
        else:
            raise ValueError(f"{path}: not an OME-Zarr image (no 'multiscales' in its attributes)")
        if self.version not in _VERSIONS:
            raise ValueError(f"{path}: OME-Zarr version {self.version}; gblur reads 0.4 and 0.5")
        if not multiscales or "datasets" not in multiscales[0] or "axes" not in multiscales[0]:
            raise ValueError(f"{path}: its 'multiscales' names no datasets or axes")
        self.multiscale = multiscales[0]
        self.axes = self.multiscale["axes"]
        self.datasets = self.multiscale["datasets"]
        try:
            self.arrays = [self.group[d["path"]] for d in self.datasets]
        except KeyError as e:
            raise ValueError(f"{path}: its level {e} is missing") from None
        if len(self.axes) != self.arrays[0].ndim:
            raise ValueError(f"{path}: {len(self.axes)} axes for an array of "
                             f"{self.arrays[0].ndim} dimensions")
        self.names = [a["name"] for a in self.axes]

    def axis_index(self, name):
        if name not in self.names:
            raise ValueError(f"{self.path}: no axis '{name}' (its axes: {', '.join(self.names)})")
        return self.names.index(name)

    def spatial(self):
        """Indices of the axes of type 'space' (all axes where none is typed)."""
        typed = [i for i, a in enumerate(self.axes) if a.get("type") == "space"]
        return typed or list(range(len(self.axes)))

    def downscaled_axes(self):
        """The axes whose scale doubles from level 0 to level 1 (the last two spatial axes
        where the image has one level)."""
        if len(self.datasets) > 1:
            s0, s1 = _scale(self.datasets[0]), _scale(self.datasets[1])
            if s0 and s1:
                axes = [i for i, (a, b) in enumerate(zip(s0, s1)) if b > a * 1.5]
                if axes:
                    return axes
        return self.spatial()[-2:]


def _scale(dataset):
    for t in dataset.get("coordinateTransformations", []):
        if t.get("type") == "scale":
            return list(t["scale"])
    return None


def _level_transforms(transforms, axes, level):
    """A level's coordinate transformations: the full resolution's scale doubled ``level``
    times along the downscaled axes; a translation as it was (the samples kept are the full
    resolution's every 2^level-th, from the first)."""
    out = []
    for t in transforms:
        t = dict(t)
        if t.get("type") == "scale":
            t["scale"] = [s * (2 ** level if i in axes else 1) for i, s in enumerate(t["scale"])]
        out.append(t)
    return out


def _read(array):
    """A Dask array over a Zarr array, under a name of its own: a second read is read again
    from the store, not held in memory from the first."""
    import dask.array as da

    return da.from_array(array, chunks=array.chunks, name=f"gblur-read-{uuid.uuid4().hex}",
                         lock=False, asarray=True)


def _store(x, target):
    import dask.array as da

    if x.chunks != da.core.normalize_chunks(target.chunks, target.shape):
        x = x.rechunk(target.chunks)
    da.store(x, target, lock=False)


def _sigmas(image, sigma):
    """One sigma per axis: a scalar for each spatial axis, a sequence for every axis, or a
    mapping from axis names."""
    rank = len(image.axes)
    if isinstance(sigma, dict):
        out = [0.0] * rank
        for name, s in sigma.items():
            out[image.axis_index(name)] = float(s)
        return out
    if np.ndim(sigma) == 0:
        spatial = image.spatial()
        return [float(sigma) if i in spatial else 0.0 for i in range(rank)]
    sigma = [float(s) for s in sigma]
    if len(sigma) != rank:
        raise ValueError(f"{image.path}: {len(sigma)} sigmas for {rank} axes "
                         f"({', '.join(image.names)})")
    return sigma


def _blur_array(source, target, scratch, sigmas, mode, cval, truncate, method):
    """``source`` blurred into ``target`` (Zarr arrays of one shape), one pass per axis through
    float32 scratch arrays (``scratch.array(shape, chunks)``, dropped by ``scratch.drop``)."""
    from . import _per_axis
    from .dask import (_filtered_from, _incoming_states, _overlapped, _plan, _scipy_radius,
                       _to_dtype)

    rank = source.ndim
    sigmas, modes, radii = _per_axis(np.empty((1,) * rank), sigmas, mode, truncate, None, None)
    names, reach, methods = _plan(sigmas, truncate, radii, method, None, target.dtype,
                                  _read(source).chunks)
    active = [a for a in range(rank) if names[a] is not None]
    current = source
    if not active:
        _store(_read(source), target)
        return
    for i, axis in enumerate(active):
        last = i == len(active) - 1
        out = target if last else scratch.array(source.shape, source.chunks)
        held = None
        if names[axis] == "recursive":
            # The states entering each chunk (8 numbers per line and chunk) go to the store,
            # and every chunk is then read again with its own.
            states = _incoming_states(_read(current), axis, sigmas[axis], modes[axis],
                                      float(cval))
            held = scratch.array(states.shape, tuple(c[0] for c in states.chunks))
            _store(states, held)
            y = _filtered_from(_read(current), _read(held), axis, sigmas[axis], modes[axis],
                               float(cval), _scipy_radius(sigmas[axis], truncate, radii, axis))
        else:
            y = _overlapped(_read(current), axis, sigmas, [0] * len(sigmas), modes, float(cval),
                            float(truncate), radii, methods[axis], reach)
        if out.dtype != np.float32:
            y = y.map_blocks(_to_dtype, dtype=out.dtype, dtype_out=out.dtype)
        _store(y, out)
        for done in (held, current):
            if done is not None and done is not source:
                scratch.drop(done)
        current = out


def _downscale(source, target, axes):
    """``source`` smoothed against aliasing along ``axes`` and sampled every second sample
    there, into ``target``."""
    from .dask import gaussian_filter

    sigma = [DOWNSCALE_SIGMA if a in axes else 0.0 for a in range(source.ndim)]
    smooth = gaussian_filter(_read(source), sigma, mode="reflect")
    _store(smooth[tuple(slice(None, None, 2) if a in axes else slice(None)
                        for a in range(source.ndim))], target)


class _Writer:
    """A new OME-Zarr image beside ``path``, renamed into place by ``commit``."""

    def __init__(self, image, path, overwrite):
        import zarr

        self.image, self.path, self.overwrite = image, path, overwrite
        if os.path.abspath(path) == os.path.abspath(image.path):
            raise ValueError(f"{path}: the output would replace the input; write elsewhere")
        if os.path.exists(path) and not overwrite:
            raise ValueError(f"{path}: already exists (overwrite=True, or --overwrite, "
                             f"replaces it)")
        parent = os.path.dirname(os.path.abspath(path))
        self.partial = os.path.join(parent, f".{os.path.basename(path)}.partial-{uuid.uuid4().hex}")
        self.group = zarr.open_group(self.partial, mode="w-", zarr_format=image.zarr_format)
        self.scratch_group = None
        self.scratch_count = 0

    def array(self, name, shape, dtype, chunks):
        kwargs = {}
        if self.image.zarr_format == 2:
            # NGFF 0.4 asks for nested chunk keys ("/"), as its readers expect.
            kwargs["chunk_key_encoding"] = {"name": "v2", "separator": "/"}
        else:
            kwargs["dimension_names"] = list(self.image.names)
        chunks = tuple(min(c, n) or 1 for c, n in zip(chunks, shape))
        return self.group.create_array(name=name, shape=shape, dtype=dtype, chunks=chunks,
                                       **kwargs)

    def scratch_dir(self):
        return os.path.join(self.partial, ".gblur-scratch")

    def array_of_scratch(self, shape, chunks):
        """A float32 array beside the output, removed when the image is committed."""
        import zarr

        if self.scratch_group is None:
            self.scratch_group = zarr.open_group(self.scratch_dir(), mode="w-", zarr_format=3)
        self.scratch_count += 1
        return self.scratch_group.create_array(name=str(self.scratch_count), shape=shape,
                                               dtype=np.float32, chunks=chunks)

    def drop_scratch(self, array):
        """A scratch array no later pass reads: its disk space back at once."""
        shutil.rmtree(os.path.join(self.scratch_dir(), array.name.rsplit("/", 1)[-1]),
                      ignore_errors=True)

    def commit(self, levels, axes, about):
        image = self.image
        transforms = image.datasets[0].get("coordinateTransformations", [])
        multiscale = {k: v for k, v in image.multiscale.items() if k != "datasets"}
        multiscale["datasets"] = [
            {"path": str(k), "coordinateTransformations": _level_transforms(transforms, axes, k)}
            for k in range(levels)]
        multiscale["type"] = "gaussian"
        multiscale["metadata"] = about
        attrs = dict(image.attrs)
        if image.version == "0.5":
            multiscale.pop("version", None)
            ome = dict(attrs.get("ome", {}))
            ome["version"] = "0.5"
            ome["multiscales"] = [multiscale]
            attrs["ome"] = ome
        else:
            multiscale["version"] = "0.4"
            attrs["multiscales"] = [multiscale]
        self.group.attrs.update(attrs)
        shutil.rmtree(self.scratch_dir(), ignore_errors=True)
        if os.path.exists(self.path):
            shutil.rmtree(self.path)
        os.replace(self.partial, self.path)

    def abandon(self):
        shutil.rmtree(self.partial, ignore_errors=True)


class _Scratch:
    """A writer's scratch arrays, as ``_blur_array`` asks for them."""

    def __init__(self, writer):
        self.array = writer.array_of_scratch
        self.drop = writer.drop_scratch


def _write(image, target, levels, axes, overwrite, first_level, about):
    """Writes level 0 with ``first_level(writer, array)`` and the pyramid below it."""
    if levels is None:
        levels = len(image.arrays)
    if not isinstance(levels, (int, np.integer)) or levels < 1:
        raise ValueError(f"levels must be a whole number of at least 1, not {levels!r}")
    axes = image.downscaled_axes() if axes is None else [image.axis_index(a) for a in axes]
    full = image.arrays[0]
    writer = _Writer(image, target, overwrite)
    try:
        level = writer.array("0", full.shape, full.dtype, full.chunks)
        first_level(writer, level)
        for k in range(1, levels):
            shape = tuple((n + 1) // 2 if a in axes else n for a, n in enumerate(level.shape))
            below = writer.array(str(k), shape, full.dtype, full.chunks)
            _downscale(level, below, axes)
            level = below
        about = dict(about, downscale_axes=[image.names[a] for a in axes],
                     downscale_sigma=DOWNSCALE_SIGMA)
        writer.commit(levels, axes, about)
    except BaseException:
        writer.abandon()
        raise


def blur(source, target, sigma, *, mode="reflect", cval=0.0, truncate=4.0, method="auto",
         levels=None, downscale_axes=None, overwrite=False):
    """Blurs the OME-Zarr image at ``source`` and writes it, with a multiscale pyramid, to
    ``target`` (the same NGFF version and Zarr format, dtype and chunks).

    Parameters
    ----------
    source, target : str
        Paths of the input image and of the image to write (refused if it exists, unless
        ``overwrite``; never the input).
    sigma : float, sequence or dict
        In samples of the full resolution: a scalar for every spatial axis (type 'space';
        time and channels are left alone), one value per axis, or ``{"z": 2, "y": 8, ...}``.
    mode, cval, truncate, method
        As for :func:`gblur.gaussian_filter` (any mode, per axis as a sequence).
    levels : int, optional
        Levels to write: by default as many as the input has.
    downscale_axes : sequence of str, optional
        The axes each level halves: by default those the input's pyramid halves (its scale
        doubles from level 0 to 1), else its last two spatial axes.

    Examples
    --------
    >>> import gblur.zarr
    >>> gblur.zarr.blur("cells.ome.zarr", "background.ome.zarr", {"z": 10, "y": 40, "x": 40})  # doctest: +SKIP
    """
    image = _Image(source)
    sigmas = _sigmas(image, sigma)

    def first_level(writer, level):
        _blur_array(image.arrays[0], level, _Scratch(writer), sigmas, mode, cval, truncate,
                    method)

    about = {"method": "gblur.zarr.blur", "sigma": dict(zip(image.names, sigmas)),
             "mode": mode, "source": os.path.abspath(source)}
    _write(image, target, levels, downscale_axes, overwrite, first_level, about)


def pyramid(source, target, levels=4, *, downscale_axes=None, overwrite=False):
    """Writes the OME-Zarr image at ``source`` to ``target`` with a multiscale pyramid of
    ``levels`` levels rebuilt from its full resolution: each level the previous one smoothed
    with a Gaussian of sigma 2/3 along ``downscale_axes`` (by default as the input's pyramid
    halves them, else its last two spatial axes) and sampled every second sample there."""
    image = _Image(source)

    def first_level(writer, level):
        _store(_read(image.arrays[0]), level)

    about = {"method": "gblur.zarr.pyramid", "source": os.path.abspath(source)}
    _write(image, target, levels, downscale_axes, overwrite, first_level, about)


def _parse_sigma(text):
    """``20`` or ``z=2,y=8,x=8``."""
    if "=" not in text:
        return float(text)
    out = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        out[name.strip()] = float(value)
    return out


def _parse_memory(text):
    units = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
    t = text.strip().lower().removesuffix("ib").removesuffix("b")
    return int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(float(t))


def main(argv=None):
    """The ``gblur-zarr`` command."""
    parser = argparse.ArgumentParser(
        prog="gblur-zarr",
        description="Blur OME-Zarr images out of core and build their multiscale pyramids.")
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("blur", help="blur an image and write it with its pyramid")
    b.add_argument("input")
    b.add_argument("output")
    b.add_argument("--sigma", "-s", required=True, type=_parse_sigma,
                   help="in full-resolution samples: one value for every spatial axis, or "
                        "per axis as z=2,y=8,x=8")
    b.add_argument("--mode", default="reflect",
                   help="edge mode: reflect, mirror, nearest, wrap or constant (default reflect)")
    b.add_argument("--cval", type=float, default=0.0, help="the value beyond the edges for "
                                                           "--mode constant")
    p = sub.add_parser("pyramid", help="write an image with its pyramid rebuilt")
    p.add_argument("input")
    p.add_argument("output")
    for s in (b, p):
        s.add_argument("--levels", type=int, default=None if s is b else 4,
                       help="levels to write (blur: as many as the input has; pyramid: 4)")
        s.add_argument("--downscale-axes", default=None,
                       help="axes each level halves, e.g. y,x (default: as the input's "
                            "pyramid, else its last two spatial axes)")
        s.add_argument("--overwrite", action="store_true", help="replace an existing output")
        s.add_argument("--workers", type=int, default=None,
                       help="run on a local Dask cluster of this many worker processes")
        s.add_argument("--memory-limit", default="auto",
                       help="each local worker's memory limit, e.g. 1GiB (default: Dask's)")
        s.add_argument("--scheduler", default=None,
                       help="address of a running Dask scheduler to run on")
    args = parser.parse_args(argv)
    axes = args.downscale_axes.split(",") if args.downscale_axes else None
    client = cluster = None
    try:
        if args.scheduler or args.workers:
            from distributed import Client, LocalCluster

            if args.scheduler:
                client = Client(args.scheduler)
            else:
                limit = "auto" if args.memory_limit == "auto" else _parse_memory(args.memory_limit)
                cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                       memory_limit=limit, dashboard_address=None)
                client = Client(cluster)
        if args.command == "blur":
            blur(args.input, args.output, args.sigma, mode=args.mode, cval=args.cval,
                 levels=args.levels, downscale_axes=axes, overwrite=args.overwrite)
        else:
            pyramid(args.input, args.output, args.levels, downscale_axes=axes,
                    overwrite=args.overwrite)
    except Exception as e:  # one line naming the input, never a traceback
        text = " ".join(str(e).split()) or type(e).__name__
        text = text if args.input in text else f"{args.input}: {text}"
        print(f"gblur-zarr: {text}", file=sys.stderr)
        return 1
    finally:
        for running in (client, cluster):
            try:
                if running is not None:
                    running.close()
            except Exception:  # the work is done or has failed already; closing adds nothing
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
