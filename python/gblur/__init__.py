"""gblur: a fast, accurate Gaussian filter for numpy arrays.

``gblur.gaussian_filter`` takes ``scipy.ndimage.gaussian_filter``'s arguments and returns its
result to within 1e-3 of the data's range, on arrays of any rank, at a cost per sample that
does not grow with sigma: it runs Deriche's 4th-order recursive Gaussian (two parallel
2nd-order sections in float32) along each axis, on every core, with the GIL released.

- :func:`gaussian_filter`: scipy's N-D filter (images, stacks, volumes), and the Gaussian's
  first and second derivatives (``order``).
- :func:`gaussian_gradient_magnitude`, :func:`gaussian_laplace`: scipy's, on those
  derivatives; :func:`difference_of_gaussians` and :func:`gaussian`: scikit-image's.
- :func:`blur_image`: an (H, W) or (H, W, C) image, colour premultiplied by alpha.
- :func:`blur_file`: what the ``gblur`` command does to one file (streamed, metadata kept).
- :class:`Device`: an OpenCL device (or the host's cores) opened once and reused.
- :mod:`gblur.dask`: the same filter over Dask arrays larger than one machine's memory.
- :func:`keep_scratch`: how much of the host blur's scratch stays allocated between calls.
"""

import json
import numbers
import operator
import os

import numpy as np

from . import _gblur
from ._gblur import Device

__all__ = ["gaussian_filter", "gaussian_filter1d", "gaussian_gradient_magnitude",
           "gaussian_laplace", "difference_of_gaussians", "gaussian", "hessian_matrix",
           "structure_tensor", "blur_image", "blur_file", "Device", "keep_scratch"]

# scipy.ndimage's names for the edge modes of filters, and gblur's for the same extension.
_MODES = {
    "reflect": "reflect",
    "grid-mirror": "reflect",
    "mirror": "mirror",
    "nearest": "nearest",
    "wrap": "wrap",
    "grid-wrap": "wrap",
    "constant": "constant",
    "grid-constant": "constant",
}

# The element types the library filters as they are; any other goes through float64.
_NATIVE = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.int16, np.float32, np.float64))

# Sigmas below this are the identity (the sampled Gaussian's neighbour taps are e^-500000),
# as is an axis whose scipy radius is 0; a derivative there is scipy's single tap
# (`_single_tap_scale`).
_IDENTITY_SIGMA = 1e-3

_devices = {}


def _device(device):
    """The Device that ``device`` names (opened once per name), or None for the host."""
    if device is None:
        return None
    if isinstance(device, Device):
        return device
    if not isinstance(device, str):
        raise TypeError("device must be None, a gblur.Device or a name such as 'gpu' or 'auto'")
    if device not in _devices:
        _devices[device] = Device(device)
    return _devices[device]


# At most this many worker threads per core (as the gblur command bounds --threads): more only
# slow a filter down, and each costs a thread's stack.
_WORKERS_PER_CORE = 16


def _workers(workers):
    """The thread count ``workers`` asks for, by scipy.fft's rule: None (every core), a
    positive count, or a negative one counted back from ``os.cpu_count()`` (-1: every core)."""
    if workers is None:
        return None
    n = operator.index(workers)
    cores = os.cpu_count() or 1
    if n == 0:
        raise ValueError("workers must not be zero")
    if n < 0:
        if n < -cores:
            raise ValueError(f"workers value out of range; got {n}, must not be less than {-cores}")
        n += cores + 1
    if n > _WORKERS_PER_CORE * cores:
        raise ValueError(f"workers value out of range; got {n}, at most {_WORKERS_PER_CORE * cores} "
                         f"({_WORKERS_PER_CORE} for each of this machine's {cores} cores)")
    return n


def _normalize_sequence(value, rank):
    """One value per axis, as scipy.ndimage expands its arguments."""
    if isinstance(value, str) or not hasattr(value, "__len__"):
        return [value] * rank
    value = list(value)
    if len(value) != rank:
        raise RuntimeError("sequence argument must have length equal to input rank")
    return value


def _check_axes(axes, ndim):
    """scipy's rules: integers (a float is a TypeError), each in range, none twice."""
    if axes is None:
        return tuple(range(ndim))
    if not hasattr(axes, "__len__"):
        axes = (axes,)
    axes = tuple(operator.index(a) for a in axes)
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of range for an array of {ndim} dimensions")
    axes = tuple(a % ndim if ndim else a for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError("axes must be unique")
    return axes


def _mode_name(mode):
    if not isinstance(mode, str) or mode not in _MODES:
        raise RuntimeError("boundary mode not supported")
    return _MODES[mode]


def _numeric(array):
    """Refuses what scipy.ndimage refuses, in its words: arrays of objects, strings, dates and
    other types that hold no numbers."""
    if array.dtype.kind not in "biufc":
        raise RuntimeError(f"array type {array.dtype!r} not supported")


def _get_output(output, input):
    _numeric(input)
    if output is None:
        # Every element is written, so no zeroing (it would touch every page twice).
        return np.empty_like(input, order="C")
    if isinstance(output, (type, np.dtype, str)):
        return np.zeros(input.shape, dtype=output)
    if not isinstance(output, np.ndarray):
        raise TypeError("output must be None, a dtype or a numpy array")
    if output.shape != input.shape:
        raise RuntimeError("output shape not correct")
    _numeric(output)
    return output


def _per_axis(input, sigma, mode, truncate, radius, axes):
    """sigma, modes and radii for every axis of ``input`` (sigma 0 where untouched)."""
    ndim = input.ndim
    axes = _check_axes(axes, ndim)
    n = len(axes)
    sigmas = _normalize_sequence(sigma, n)
    modes = _normalize_sequence(mode, n)
    radii = _normalize_sequence(radius, n)
    full_sigma = [0.0] * ndim
    full_mode = ["reflect"] * ndim
    full_radius = [0] * ndim
    any_radius = radius is not None
    if not np.isfinite(truncate) or truncate <= 0:
        raise ValueError(f"truncate must be a number above 0, not {truncate}")
    for a, s, m, r in zip(axes, sigmas, modes, radii):
        s = float(s)
        if not np.isfinite(s) or s < 0:
            raise ValueError(f"sigma must be a finite number of at least 0, not {s}")
        if r is not None and (not isinstance(r, numbers.Integral) or r < 0):
            raise ValueError("Radius must be a nonnegative integer.")
        full_mode[a] = _mode_name(m)
        if _single_tap(s, r, truncate):
            continue
        full_sigma[a] = s
        full_radius[a] = int(r) if r is not None else int(float(truncate) * s + 0.5)
    # Where no radius was given, the library takes scipy's own rule from truncate.
    return full_sigma, full_mode, (full_radius if any_radius else None)


def _orders(order, ndim, axes):
    """One derivative order per axis of the array (0 where untouched), as scipy expands
    ``order``: 0, 1 or 2 (gblur's filters stop at the second derivative)."""
    axes = _check_axes(axes, ndim)
    full = [0] * ndim
    for a, o in zip(axes, _normalize_sequence(order, len(axes))):
        o = operator.index(o)
        if o < 0:
            raise ValueError("order must be non-negative")
        if o > 2:
            raise ValueError(f"gblur takes derivatives of order 0, 1 and 2, not {o}")
        full[a] = o
    return full


def _single_tap(sigma, radius, truncate):
    """Whether scipy's kernel along an axis is one sample: sigma at most 0.001, a radius of 0,
    or, with no radius given, ``truncate * sigma`` under 0.5 (scipy's radius ``int(truncate
    * sigma + 0.5)`` is then 0)."""
    if radius is not None:
        return sigma <= _IDENTITY_SIGMA or radius == 0
    return sigma <= _IDENTITY_SIGMA or int(float(truncate) * sigma + 0.5) == 0


def _single_tap_scale(ndim, sigma, orders, radius, axes, truncate):
    """The factor a derivative contributes along an axis whose kernel is a single sample
    (sigma at most 0.001, or radius 0), which gblur leaves out of the filter: scipy's single tap,
    0 for the first derivative and -1/sigma**2 for the second (1 for no derivative; scipy
    skips an axis of sigma under 1e-15 whatever its order)."""
    axes = _check_axes(axes, ndim)
    sigmas = _normalize_sequence(sigma, len(axes))
    radii = _normalize_sequence(radius, len(axes))
    scale = 1.0
    for a, s, r in zip(axes, sigmas, radii):
        s = float(s)
        if orders[a] and _single_tap(s, r, truncate) and s > 1e-15:
            scale *= 0.0 if orders[a] == 1 else -1.0 / (s * s)
    return scale


def _round_into(output, values):
    """``values`` (float) written into ``output``, rounded once and clipped where it holds
    integers; into booleans as scipy writes them, True where the value's whole part is not 0
    (for a blurred boolean array: where it is 1, the middle of a region all True)."""
    if np.issubdtype(output.dtype, np.integer):
        info = np.iinfo(output.dtype)
        output[...] = np.clip(np.rint(values), info.min, info.max)
    elif output.dtype == np.bool_:
        output[...] = np.trunc(values) != 0
    else:
        output[...] = values


def gaussian_filter(input, sigma, order=0, output=None, mode="reflect", cval=0.0,
                    truncate=4.0, *, radius=None, axes=None, device=None, method="auto",
                    workers=None):
    """Multidimensional Gaussian filter, as ``scipy.ndimage.gaussian_filter``.

    Parameters
    ----------
    input : array_like
        The input array: any rank; uint8, uint16, int16, float32 and float64 are filtered as
        they are, other real types through float64, complex types as their real and
        imaginary parts. A boolean result is True where the blurred value reaches 1, as
        scipy writes it (where that value is within the filter's error of 1, either way).
        Arrays that hold no numbers (objects, strings) are refused with scipy's
        ``RuntimeError``.
    sigma : scalar or sequence of scalars
        Standard deviation of the Gaussian, in samples, for all axes or one per axis (of
        ``axes``). An axis of sigma 0 is left as it is (scipy's rule), and so is one below
        0.001, where the sampled Gaussian is already the identity.
    order : int or sequence of ints, optional
        The derivative to take along each axis, as scipy's: 0 smooths, 1 is the first
        derivative of the Gaussian, 2 the second (scipy also takes 3 and up; gblur refuses
        them with a ``ValueError``). Derivatives are of the sampled, normalised Gaussian, with
        scipy's sign: a slope of 1 along an axis gives 1.
    output : array or dtype, optional
        Where to place the result, or its dtype; by default an array of the input's dtype.
    mode : {'reflect', 'constant', 'nearest', 'mirror', 'wrap'} or sequence, optional
        How the input is extended beyond its edges, per axis if a sequence, with scipy's
        aliases ('grid-mirror', 'grid-constant', 'grid-wrap'). Default 'reflect'.
    cval : scalar, optional
        The value beyond the edges for mode 'constant'. Default 0.0.
    truncate : float, optional
        Where scipy cuts its kernel, in standard deviations. Default 4.0.
    radius : None or int or sequence of ints, optional
        The kernel's radius per axis, overriding ``truncate`` (scipy's rule).
    axes : tuple of int or None, optional
        The axes to filter; default all. ``sigma``, ``order``, ``mode`` and ``radius``
        sequences then have one value per entry of ``axes``.
    device : None, str or gblur.Device, optional
        None: the host's cores. 'gpu', 'cpu' (an OpenCL CPU device), 'auto' (a GPU where one
        is installed, used where the cost model predicts it faster for this array), or a
        :class:`Device` opened once. A named device is opened once per program.
    method : {'auto', 'fir', 'recursive'}, optional
        'auto' (the default) chooses as the notes say; 'fir' runs scipy's own cut kernel at
        every sigma (exact to float32 rounding, at a cost that grows with sigma);
        'recursive' runs the recursive filter wherever sigma is above 0.
    workers : int, optional
        How many threads filter on the host, as ``scipy.fft`` takes it: by default one per
        core (``RAYON_NUM_THREADS`` sets that default for the whole program); a negative
        count is counted back from ``os.cpu_count()`` (-1 is every core). At most 16 per
        core.

    Returns
    -------
    gaussian_filter : ndarray
        The filtered array, of ``output``'s dtype.

    Notes
    -----
    Accuracy: wherever scipy's kernel reaches at least 4 sigma (its default ``truncate``
    and beyond) and sigma is at least 2, gblur runs the recursive filter, whose result is
    within 1e-3 of scipy's (relative to the data's range; 5.7e-4 against the exact
    Gaussian), at the same cost for any sigma. A derivative's recursive filter is an
    8th-order fit to the whole sampled derivative, within 7e-6 (first) and 3e-5 (second) of
    its kernel's range, at twice the smoothing filter's cost along that axis, for any sigma.
    scipy's default ``truncate=4`` cuts the derivative kernels where they still weigh
    1.3e-3 (first) and 5e-3 (second) of their peak, so scipy's own result is that far from
    the exact derivative; pass ``truncate=6`` or more to scipy to compare. Below sigma 2,
    and wherever ``truncate`` or ``radius`` cut the kernel shorter than 4 sigma (a kernel cut
    that short is no longer close to a Gaussian), gblur runs scipy's own kernel, cut and
    normalised the same way, exactly (to float32 rounding), whose cost grows with its radius.

    NaN and infinity: as in scipy, one spoils only the outputs within the kernel's radius of
    it (``truncate`` sigma, or ``radius``) along each axis: a square (a cube, ...) around it.
    Outputs near it take it as 0 beyond scipy's radius, where the recursive filter's weights
    are under 1e-3 of its peak. An infinity gives its own sign to a blur, NaN to a
    derivative (and infinities of both signs NaN), on the host, on an OpenCL device and in
    :mod:`gblur.dask`'s chunks.

    Integer results are rounded once, from the filtered values, to the nearest integer and
    clipped to the type's range. scipy instead truncates to the integer type after every
    axis, so its own integer output runs up to about one level per filtered axis low. gblur's
    8- and 16-bit results are within one level of scipy's float64 result rounded: a 16-bit
    output takes scipy's sampled kernel (``method='auto'``) up to sigma 50, at a cost that
    grows with sigma (8.8 times the recursive filter's at sigma 50), where the recursive
    filter would be up to 10-17 levels of 65535 off at a sharp edge; above sigma 50 the
    recursive filter runs (within 1.5e-4 of the data's range).

    Memory: float arrays take the input, the output and a few kilobytes of scratch per thread;
    on the host, with the input as ``output``, they are filtered where they lie, with no second
    array.
    Integer arrays filtered along more than one axis also take a float32 copy, so that they
    are rounded once.

    Examples
    --------
    >>> import numpy as np, gblur
    >>> a = np.zeros((64, 64), np.float32); a[32, 32] = 1
    >>> b = gblur.gaussian_filter(a, sigma=3)
    >>> round(float(b.sum()), 4)
    1.0
    """
    input = np.asarray(input)
    orders = _orders(order, input.ndim, axes)
    output = _get_output(output, input)
    if np.iscomplexobj(input) or np.iscomplexobj(output):
        if not np.iscomplexobj(output):
            raise RuntimeError("output must be complex for a complex input")
        for part in ("real", "imag"):
            src = np.ascontiguousarray(getattr(input, part), dtype=np.float64)
            res = gaussian_filter(src, sigma, order, np.float64, mode, cval, truncate,
                                  radius=radius, axes=axes, device=device, method=method,
                                  workers=workers)
            setattr(output, part, res)
        return output
    sigmas, modes, radii = _per_axis(input, sigma, mode, truncate, radius, axes)
    scale = _single_tap_scale(input.ndim, sigma, orders, radius, axes, truncate)
    threads = _workers(workers)
    if input.size == 0:
        return output
    if scale == 0.0:
        output[...] = 0
        return output
    if not any(sigmas):
        if scale == 1.0:
            output[...] = input
        else:
            _round_into(output, input * scale)
        return output
    dev = _device(device)
    args = (sigmas, modes, float(cval), float(truncate), radii, method)
    if method not in ("auto", "fir", "recursive"):
        raise ValueError(f"method must be 'auto', 'fir' or 'recursive', not {method!r}")
    native_out = output.dtype in _NATIVE and (scale == 1.0 or output.dtype.kind == "f")
    # The extension reads whole elements: an unaligned array (a view into a byte buffer, a
    # block unpickled from a network message) is copied once, as a non-contiguous one is.
    src = np.require(input if input.dtype in _NATIVE else input.astype(np.float64), None,
                     ["C_CONTIGUOUS", "ALIGNED"])
    orders = orders if any(orders) else None
    if native_out and _same_array(src, output):
        # The input is the output: filtered where it lies, no second array.
        dst = output
        _gblur.gaussian_filter_into(output, None, *args, dev, threads, orders)
    else:
        direct = (native_out and output.flags.c_contiguous and output.flags.aligned
                  and not np.shares_memory(src, output))
        dst = output if direct else np.empty(input.shape,
                                             output.dtype if native_out else np.float64)
        _gblur.gaussian_filter_into(src, dst, *args, dev, threads, orders)
    if scale != 1.0:
        dst *= scale
    if dst is not output:
        if native_out:
            output[...] = dst
        else:
            _round_into(output, dst)
    return output


def _same_array(a, b):
    """Whether ``b`` is ``a`` itself (the same elements at the same places, C-contiguous and
    writable): the array a filter may run in place on."""
    return (a.dtype == b.dtype and a.shape == b.shape and a.strides == b.strides
            and a.ctypes.data == b.ctypes.data and b.flags.c_contiguous and b.flags.aligned
            and b.flags.writeable)


def gaussian_filter1d(input, sigma, axis=-1, order=0, output=None, mode="reflect", cval=0.0,
                      truncate=4.0, *, radius=None, device=None, method="auto", workers=None):
    """One-dimensional Gaussian filter, as ``scipy.ndimage.gaussian_filter1d``: along
    ``axis`` alone, the derivative of ``order`` (0, 1 or 2), with :func:`gaussian_filter`'s
    rules for everything else."""
    return gaussian_filter(input, sigma, order, output, mode, cval, truncate, radius=radius,
                           axes=(axis,), device=device, method=method, workers=workers)


def blur_image(image, sigma, *, sigma_y=None, mode="nearest", linear=False, alpha=None,
               truncate=None, device=None, workers=None, output=None):
    """Blurs an image with the ``gblur`` command's own filter.

    Parameters
    ----------
    image : ndarray
        (H, W) or (H, W, C), uint8, uint16 or float32 (other types go through float32).
    sigma : float
        Standard deviation in pixels along x (and y, unless ``sigma_y`` is given); 0 leaves
        that axis alone.
    sigma_y : float, optional
        Standard deviation along y (down the columns).
    mode : str or (str, str), optional
        Edge mode for both axes or (y, x): 'nearest' (the default: the edge pixel repeated),
        'reflect', 'mirror', 'wrap', or 'constant' (with 'constant=V', V a fraction of full
        scale; alpha stays opaque).
    linear : bool, optional
        Blur 8- and 16-bit colour in linear light (decoded from sRGB, encoded back).
    alpha : bool, optional
        Whether the last channel is alpha; by default it is for 2 and 4 channels. Colour is
        blurred premultiplied by alpha, so transparent pixels leave no dark halos.
    truncate : float, optional
        The FIR's radius in sigmas where the FIR runs (below sigma 2); default 5.
    device : None, str or gblur.Device, optional
        Where to blur; see :func:`gaussian_filter`.
    workers : int, optional
        How many threads blur on the host; see :func:`gaussian_filter`.
    output : ndarray, optional
        Where to write the blurred image: an array of the image's shape and dtype (the image
        itself blurs it in place). A caller blurring many images of one size saves the new
        array's first touch of its pages (on 16 cores, 12 MP RGB8: about an eighth of the time).

    Returns
    -------
    ndarray
        A new image of the same shape and dtype, or ``output``.
    """
    image = np.asarray(image)
    threads = _workers(workers)
    if image.ndim not in (2, 3):
        raise ValueError(f"an image is (H, W) or (H, W, C), not {image.shape}")
    channels = 1 if image.ndim == 2 else image.shape[2]
    if alpha is None:
        alpha = channels in (2, 4)
    if isinstance(mode, str):
        mode = (mode, mode)
    edge_y, edge_x = (_MODES.get(m, m) for m in mode)
    dtype = image.dtype if image.dtype in (np.uint8, np.uint16, np.float32) else np.float32
    work, source = _image_work(image, dtype, _image_output(output, image))
    sy = sigma if sigma_y is None else sigma_y
    _gblur.blur_image(work, float(sigma), float(sy), edge_x, edge_y, bool(linear), bool(alpha),
                      "auto", truncate, _device(device), threads, source)
    if output is None:
        return work if dtype == image.dtype else work.astype(image.dtype)
    if work is not output:
        np.copyto(output, work, casting="unsafe")
    return output


def _image_output(output, image):
    """``blur_image``'s ``output``, checked: None or a writable array like the image."""
    if output is None:
        return None
    if not isinstance(output, np.ndarray):
        raise TypeError("output must be None or a numpy array")
    if output.shape != image.shape or output.dtype != image.dtype:
        raise ValueError(f"output must be an array of the image's shape {image.shape} and "
                         f"dtype {image.dtype}, not {output.shape} {output.dtype}")
    if not output.flags.writeable:
        raise ValueError("output array is read-only.")
    return output


def _image_work(image, dtype, output):
    """The array the library blurs (``output`` where it can take it as it is, else a new one)
    and the source it reads (None where the work array already holds the image)."""
    direct = image.dtype == dtype and image.flags.c_contiguous and image.flags.aligned
    takes = (output is not None and output.dtype == dtype and output.flags.c_contiguous
             and output.flags.aligned)
    if takes and _same_array(image, output):
        return output, None  # in place
    if takes:
        # An image that overlaps `output`, or is strided, is read from a contiguous copy (not
        # copied into `output` first: `output` stays as it was where the library refuses the
        # call).
        if direct and not np.shares_memory(output, image):
            return output, image
        return output, np.array(image, dtype=dtype, order="C", copy=True)
    if direct:
        # The library blurs from the image into the new array (no copy on the host path).
        return np.empty(image.shape, dtype), image
    return np.array(image, dtype=dtype, order="C", copy=True), None


def blur_file(input, output, sigma, *, sigma_y=None, mode="nearest", linear=False,
              device="auto", quality=None, strip_metadata=False, max_memory_mib=None,
              format=None, to_srgb=False):
    """Blurs an image file into another, as the ``gblur`` command does.

    The input's format is read from its content, the output's from its extension (or
    ``format``); the bit depth, ICC profile, EXIF and XMP are kept where the format allows;
    images over the memory budget are streamed through the strip engine; the output is
    written to a temporary file and renamed into place, so nothing is left half-written.

    Parameters
    ----------
    input, output : str or os.PathLike
        The files.
    sigma, sigma_y, mode, linear
        As for :func:`blur_image`.
    device : str, optional
        Where to blur, as ``gblur --device`` takes it (default 'auto').
    quality : int or 'lossless', optional
        The quality of a lossy output, 1 to 100: a JPEG's (default 90), an AVIF's (default
        50), a WebP's (default 75; lossless from a lossless WebP input), or 'lossless' for a
        lossless WebP; refused for other outputs.
    strip_metadata : bool, optional
        Write no ICC profile, EXIF, XMP or IPTC.
    max_memory_mib : int, optional
        The job's memory budget in MiB (default 512).
    format : str, optional
        The output format by its extension ('png', 'jpg', 'tiff', ...).
    to_srgb : bool, optional
        Convert an input with an RGB ICC profile (Adobe RGB, Display P3, ...) to sRGB before
        the blur and write no profile, as ``gblur --to-srgb`` does.

    Returns
    -------
    dict
        The report ``gblur --json`` prints: the device, the method, and every pass's time.

    Raises
    ------
    OSError
        The input cannot be read or decoded, or the output cannot be written.
    """
    if isinstance(mode, str):
        mode = (mode, mode)
    edge_y, edge_x = (_MODES.get(m, m) for m in mode)
    sy = sigma if sigma_y is None else sigma_y
    if not isinstance(device, str):
        raise TypeError("blur_file's device is a name such as 'auto', 'gpu' or 'rust'")
    lossless = isinstance(quality, str) and quality == "lossless"
    if isinstance(quality, str) and not lossless:
        raise ValueError(f"quality is 1 to 100 or 'lossless', not {quality!r}")
    report = _gblur.blur_file(str(input), str(output), float(sigma), float(sy), edge_x, edge_y,
                              bool(linear), "auto", device, None if lossless else quality,
                              lossless, bool(strip_metadata),
                              max_memory_mib, format, bool(to_srgb))
    return json.loads(report)


def keep_scratch(max_bytes):
    """Sets how many bytes of the host blur's scratch stay allocated from one call to the next.

    The package keeps the largest scratch buffer of an image's blur (``blur_image`` on the
    host), up to 256 MiB by default, so that the next call does not wait for fresh memory's
    pages to be faulted in and zeroed: on a 16-vCPU host, faulting in the 47 MiB of a 12 MP
    RGB8 image's scratch cost about 2 of its 9 ms. ``blur_file`` never keeps any.
    ``keep_scratch(0)`` frees the buffer kept and keeps none from then on.

    Parameters
    ----------
    max_bytes : int
        The largest buffer kept, in bytes; 0 keeps none.
    """
    n = operator.index(max_bytes)
    if n < 0:
        raise ValueError(f"max_bytes must not be negative, not {n}")
    _gblur.keep_scratch(n)


from .derivatives import (  # noqa: E402  (they build on gaussian_filter above)
    difference_of_gaussians,
    gaussian,
    gaussian_gradient_magnitude,
    gaussian_laplace,
)
from .features import hessian_matrix, structure_tensor  # noqa: E402
