"""The Gaussian family on :func:`gblur.gaussian_filter`'s derivatives: scipy.ndimage's
``gaussian_gradient_magnitude`` and ``gaussian_laplace``, scikit-image's ``gaussian`` and
``difference_of_gaussians``, with their signatures and dtype rules.

Each derivative is a recursive filter along its axis (sigma 2 and up; scipy's own sampled
kernel below), so the cost per sample does not grow with sigma.
"""

import numpy as np

from . import (_check_axes, _get_output, _gblur, _normalize_sequence, _round_into, _workers,
               gaussian_filter)


def _prepared(input, output, axes):
    """scipy's start of both: the array, its output, the axes to differentiate along, and the
    array the derivatives are summed in: the output itself where it is a C-contiguous float32
    or float64 array apart from the input, else a new one (float32 for a float32 output,
    complex128 for complex data, float64 otherwise), rounded once into an integer output at
    the end. With no axes the output is the input copied and the axes are None."""
    input = np.asarray(input)
    output = _get_output(output, input)
    axes = _check_axes(axes, input.ndim)
    if not axes:
        output[...] = input
        return input, output, None, None
    if np.iscomplexobj(input) or np.iscomplexobj(output):
        dtype = np.dtype(np.complex128)
    elif output.dtype == np.float32:
        dtype = np.dtype(np.float32)
    else:
        dtype = np.dtype(np.float64)
    direct = (output.dtype == dtype and output.flags.c_contiguous and output.flags.aligned
              and not np.shares_memory(output, input))
    total = output if direct else np.empty(input.shape, dtype)
    return input, output, axes, total


def _finish(output, values):
    if values is not output:
        _round_into(output, values)
    return output


def gaussian_gradient_magnitude(input, sigma, output=None, mode="reflect", cval=0.0, *,
                                axes=None, truncate=4.0, radius=None, device=None,
                                method="auto", workers=None):
    """Gradient magnitude with Gaussian derivatives, as
    ``scipy.ndimage.gaussian_gradient_magnitude``: the square root of the sum, over
    ``axes`` (default all), of the squared first derivative along each (smoothed along every
    other axis with the same ``sigma``).

    ``sigma``, ``mode``, ``cval``, ``truncate`` and ``radius`` are :func:`gaussian_filter`'s;
    ``mode`` may be one per entry of ``axes``. The derivatives are computed in the output's
    float type (float64 for an integer output, rounded once at the end, where scipy truncates
    each derivative to the integer type first). ``device``, ``method`` and ``workers`` as for
    :func:`gaussian_filter`.

    Examples
    --------
    >>> import numpy as np, gblur
    >>> ramp = np.tile(np.arange(64, dtype=np.float32) * 2, (32, 1))
    >>> m = gblur.gaussian_gradient_magnitude(ramp, sigma=3)
    >>> round(float(m[16, 32]), 3)
    2.0
    """
    input, output, axes, total = _prepared(input, output, axes)
    if axes is None:
        return output
    modes = _normalize_sequence(mode, len(axes))
    part = None
    threads = _workers(workers)
    for k, (axis, m) in enumerate(zip(axes, modes)):
        order = [0] * input.ndim
        order[axis] = 1
        part = gaussian_filter(input, sigma, order, total.dtype if part is None else part, m,
                               cval, truncate, radius=radius, device=device, method=method,
                               workers=workers)
        if total.dtype.kind == "c":
            # scipy squares complex derivatives as they are (no conjugate).
            total[...] = part * part if k == 0 else total + part * part
            if k == len(axes) - 1:
                np.sqrt(total, out=total)
        else:
            # The squares summed and the root taken on every worker thread, in place.
            _gblur.add_squares(total, part, k == 0, k == len(axes) - 1, threads)
    return _finish(output, total)


def gaussian_laplace(input, sigma, output=None, mode="reflect", cval=0.0, *, axes=None,
                     truncate=4.0, radius=None, device=None, method="auto", workers=None):
    """The Laplacian of Gaussian, as ``scipy.ndimage.gaussian_laplace``: the sum over ``axes``
    (default all) of the second derivative along each, smoothed along the other filtered
    axes (axes outside ``axes`` are left alone, as scipy leaves them).

    ``sigma`` is one value or one per entry of ``axes``; the other arguments as for
    :func:`gaussian_gradient_magnitude`. Multiply by ``-sigma**2`` for the scale-normalised
    LoG of blob detection.

    Examples
    --------
    >>> import numpy as np, gblur
    >>> bowl = np.add.outer(np.arange(48.0) ** 2, np.arange(40.0) ** 2)
    >>> float(np.round(gblur.gaussian_laplace(bowl, sigma=4)[24, 20], 3))  # d²/dy² + d²/dx²
    4.0
    """
    input, output, axes, total = _prepared(input, output, axes)
    if axes is None:
        return output
    sigmas = _normalize_sequence(sigma, len(axes))
    full_sigma = [0.0] * input.ndim
    for a, s in zip(axes, sigmas):
        full_sigma[a] = s
    modes = _normalize_sequence(mode, len(axes))
    scratch = None
    for k, (axis, m) in enumerate(zip(axes, modes)):
        order = [0] * input.ndim
        order[axis] = 2
        out = total if k == 0 else (total.dtype if scratch is None else scratch)
        part = gaussian_filter(input, full_sigma, order, out, m, cval, truncate, radius=radius,
                               device=device, method=method, workers=workers)
        if k > 0:
            scratch = part
            total += part
    return _finish(output, total)


def _as_float(image, preserve_range):
    """scikit-image's conversion to float (``img_as_float``, or a plain cast with
    ``preserve_range``), in the float type its filters return (float32 for float16 and
    float32, float64 otherwise)."""
    image = np.asarray(image)
    kind = image.dtype.kind
    if kind == "b":
        image = image.astype(np.float64)
    elif kind in "ui" and not preserve_range:
        info = np.iinfo(image.dtype)
        image = image.astype(np.float64) / info.max
        if kind == "i":
            np.maximum(image, -1.0, out=image)
    elif kind in "ui":
        image = image.astype(np.float64)
    elif kind != "f":
        raise TypeError(f"images of {image.dtype} are not supported")
    dtype = np.float32 if image.dtype in (np.float16, np.float32) else np.float64
    return image.astype(dtype, copy=False)


def _spatial_sigma(sigma, ndim, channel_axis, name):
    """``sigma`` per axis, 0 along the channel axis (scikit-image's rule)."""
    spatial = ndim - (channel_axis is not None)
    sigma = np.array(sigma, dtype=float, ndmin=1)
    if np.any(sigma < 0):
        raise ValueError("Sigma values less than zero are not valid")
    if len(sigma) not in (1, spatial):
        raise ValueError(f"{name} must have length equal to number of spatial dimensions "
                         "of input")
    sigma = list(sigma * np.ones(spatial))
    if channel_axis is not None:
        sigma.insert(channel_axis % ndim, 0.0)
    return sigma


def gaussian(image, sigma=1.0, *, mode="nearest", cval=0, preserve_range=False, truncate=4.0,
             channel_axis=None, out=None, device=None, method="auto", workers=None):
    """Multi-dimensional Gaussian filter, as ``skimage.filters.gaussian``: integer images are
    scaled to [0, 1] ([-1, 1] if signed) unless ``preserve_range``; the result is float32 for
    float16 and float32 images, float64 otherwise; ``channel_axis`` is not blurred; the
    default mode is 'nearest'.

    Examples
    --------
    >>> import numpy as np, gblur
    >>> img = np.full((32, 32, 3), 255, np.uint8)
    >>> out = gblur.gaussian(img, 2, channel_axis=-1)
    >>> out.dtype, float(out.max())
    (dtype('float64'), 1.0)
    """
    image = np.asarray(image)
    if np.any(np.asarray(sigma) < 0):
        raise ValueError("Sigma values less than zero are not valid")
    if channel_axis is not None:
        # scikit-image's rule: a sigma per spatial axis gets 0 inserted for the channels; a
        # sigma for every axis is taken as it is.
        if np.ndim(sigma) == 0:
            sigma = [sigma] * (image.ndim - 1)
        sigma = list(sigma)
        if len(sigma) == image.ndim - 1:
            sigma.insert(channel_axis % image.ndim, 0)
    image = _as_float(image, preserve_range)
    if out is not None and not np.issubdtype(out.dtype, np.floating):
        raise ValueError(f"dtype of `out` must be float; got {out.dtype!r}.")
    return gaussian_filter(image, sigma, 0, out, mode, cval, truncate, device=device,
                           method=method, workers=workers)


def difference_of_gaussians(image, low_sigma, high_sigma=None, *, mode="nearest", cval=0,
                            channel_axis=None, truncate=4.0, device=None, method="auto",
                            workers=None):
    """Band-pass by the difference of two Gaussians, as
    ``skimage.filters.difference_of_gaussians``: ``gaussian(image, low_sigma) -
    gaussian(image, high_sigma)`` (``high_sigma`` defaults to 1.6 times ``low_sigma``), the
    image converted to float as :func:`gaussian` converts it.

    Examples
    --------
    >>> import numpy as np, gblur
    >>> flat = np.full((40, 40), 0.5)
    >>> float(np.abs(gblur.difference_of_gaussians(flat, 2)).max())
    0.0
    """
    image = np.asarray(image)
    low = _spatial_sigma(low_sigma, image.ndim, channel_axis, "low_sigma")
    if high_sigma is None:
        high = [1.6 * s for s in low]
    else:
        high = _spatial_sigma(high_sigma, image.ndim, channel_axis, "high_sigma")
    if any(h < s for h, s in zip(high, low)):
        raise ValueError("high_sigma must be equal to or larger than low_sigma for all axes")
    image = _as_float(image, False)
    kw = dict(device=device, method=method, workers=workers)
    low_pass = gaussian_filter(image, low, 0, None, mode, cval, truncate, **kw)
    low_pass -= gaussian_filter(image, high, 0, None, mode, cval, truncate, **kw)
    return low_pass
