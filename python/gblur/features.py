"""Second-order image features on gblur's Gaussian: scikit-image's ``hessian_matrix`` and
``structure_tensor`` (``skimage.feature``), with their signatures, element order and dtype
rules. The Gaussians are gblur's (a recursive filter from sigma 2, whose cost does not grow
with sigma; scipy's own sampled kernel below), the finite differences numpy's.
"""

from itertools import combinations_with_replacement

import numpy as np

from . import _mode_name, gaussian_filter
from .derivatives import _as_float, gaussian

# gblur::filter::FIR_MAX_SIGMA: the widest sigma scipy's kernel runs at.
_FIR_MAX_SIGMA = 1000.0

# The sample beyond each end of an axis, per edge mode, as scipy.ndimage extends it:
# (index before the first, index after the last) for an axis of n samples; None: cval.
_BEYOND = {
    "reflect": lambda n: (0, n - 1),
    "mirror": lambda n: (min(1, n - 1), max(n - 2, 0)),
    "nearest": lambda n: (0, n - 1),
    "wrap": lambda n: (n - 1, 0),
    "constant": lambda n: (None, None),
}


def _three_taps(x, weights, axis, mode, cval):
    """scipy's ``correlate1d(x, weights, axis, mode=mode, cval=cval)`` for three taps:
    ``out[i] = w0 x[i-1] + w1 x[i] + w2 x[i+1]``, the ends extended by the mode."""
    n = x.shape[axis]
    w0, w1, w2 = weights

    def at(i):
        return x[(slice(None),) * axis + (i,)]

    before, after = _BEYOND[mode](n)
    outside = np.full_like(at(slice(0, 1)), cval)
    prev = np.concatenate([outside if before is None else at(slice(before, before + 1)),
                           at(slice(0, n - 1))], axis=axis)
    nxt = np.concatenate([at(slice(1, n)),
                          outside if after is None else at(slice(after, after + 1))], axis=axis)
    out = w1 * x if w1 else np.zeros_like(x)
    if w0:
        out += w0 * prev
    if w2:
        out += w2 * nxt
    return out


def _sobel(image, axis, mode, cval):
    """scipy.ndimage's ``sobel(image, axis, mode=mode, cval=cval)``: the central difference
    along ``axis``, smoothed by (1, 2, 1) along every other axis, each pass extended by the
    mode afresh."""
    out = _three_taps(image, (-1, 0, 1), axis, mode, cval)
    for other in range(image.ndim):
        if other != axis:
            out = _three_taps(out, (1, 2, 1), other, mode, cval)
    return out


def _axis_order(order, ndim):
    if order not in ("rc", "xy"):
        raise ValueError(f"order {order} is invalid. Must be either \"rc\" or \"xy\"")
    if order == "xy" and ndim > 2:
        raise ValueError("order='xy' is only supported for 2D images.")
    return list(range(ndim))[::-1] if order == "xy" else list(range(ndim))


def structure_tensor(image, sigma=1, mode="constant", cval=0, order="rc", *, device=None,
                     method="auto", workers=None):
    """The structure tensor, as ``skimage.feature.structure_tensor``: each pair of the
    image's Sobel derivatives, multiplied and smoothed by a Gaussian of ``sigma`` (the
    weighting window). Integer images are scaled to [0, 1] ([-1, 1] if signed) first.

    Returns
    -------
    list of ndarray
        The upper-diagonal elements (``Arr, Arc, Acc`` in 2-D; ``(n**2 + n) / 2`` arrays in
        n-D; ``Axx, Axy, Ayy`` with ``order='xy'``), float32 for float16 and float32 images,
        float64 otherwise.

    Examples
    --------
    >>> import numpy as np, gblur
    >>> square = np.zeros((5, 5)); square[2, 2] = 1
    >>> Arr, Arc, Acc = gblur.structure_tensor(square, sigma=0.1, order="rc")
    >>> Acc
    array([[0., 0., 0., 0., 0.],
           [0., 1., 0., 1., 0.],
           [0., 4., 0., 4., 0.],
           [0., 1., 0., 1., 0.],
           [0., 0., 0., 0., 0.]])
    """
    image = _as_float(np.squeeze(np.asarray(image)), False)
    if not 2 <= image.ndim <= 5:
        raise ValueError(f"The parameter `image` must be a 2-, 3-, 4- or 5-dimensional array, "
                         f"got {image.ndim} dimensions")
    if not np.isscalar(sigma) and len(tuple(sigma)) != image.ndim:
        raise ValueError("sigma must have as many elements as image has axes")
    axes = _axis_order(order, image.ndim)
    mode = _mode_name(mode)
    derivatives = [_sobel(image, a, mode, cval) for a in range(image.ndim)]
    derivatives = [derivatives[a] for a in axes]
    kw = dict(mode=mode, cval=cval, device=device, method=method, workers=workers)
    return [gaussian(d0 * d1, sigma, **kw)
            for d0, d1 in combinations_with_replacement(derivatives, 2)]


def hessian_matrix(image, sigma=1, mode="constant", cval=0, order="rc",
                   use_gaussian_derivatives=None, *, device=None, method="auto",
                   workers=None):
    """The Hessian matrix, as ``skimage.feature.hessian_matrix``: the image smoothed by a
    Gaussian of ``sigma``, then differenced twice (``np.gradient``; the smoothing is scipy's
    cut kernel under ``method='auto'``, since two differences would amplify the recursive
    filter's 1e-4 of the image's range to up to 1e-2 of the Hessian's; its cost grows with
    sigma, below scikit-image's own. gblur filters in float32, whose rounding, differenced
    twice, reaches 1e-3 of the Hessian's range where the smoothing flattens the image almost
    whole, as noise in a 3-D array of axes near 3 sigma); or, with
    ``use_gaussian_derivatives=True``, two first derivatives of Gaussians of ``sigma / √2``
    one after the other (scikit-image's ``truncate`` of 8, or 100 where a sigma is 1 or less,
    which gblur cuts at 20 where the kernel's weight is already under exp(-200); from sigma 2
    gblur's recursive derivative filters reach their whole kernel either way).
    ``None`` is scikit-image's present default, ``False``. Integer images are scaled to
    [0, 1] ([-1, 1] if signed) first.

    Returns
    -------
    list of ndarray
        The upper-diagonal elements (``Hrr, Hrc, Hcc`` in 2-D; ``(n**2 + n) / 2`` arrays in
        n-D; ``Hxx, Hxy, Hyy`` with ``order='xy'``), float32 for float16 and float32 images,
        float64 otherwise.

    Examples
    --------
    >>> import numpy as np, gblur
    >>> square = np.zeros((5, 5)); square[2, 2] = 4
    >>> Hrr, Hrc, Hcc = gblur.hessian_matrix(square, sigma=0.1, order="rc",
    ...                                      use_gaussian_derivatives=False)
    >>> Hrc
    array([[ 0.,  0.,  0.,  0.,  0.],
           [ 0.,  1.,  0., -1.,  0.],
           [ 0.,  0.,  0.,  0.,  0.],
           [ 0., -1.,  0.,  1.,  0.],
           [ 0.,  0.,  0.,  0.,  0.]])
    """
    image = _as_float(image, False)
    axes = _axis_order(order, image.ndim)
    mode = _mode_name(mode)
    kw = dict(device=device, method=method, workers=workers)
    if not use_gaussian_derivatives:
        if method == "auto" and np.max(sigma) <= _FIR_MAX_SIGMA:
            kw["method"] = "fir"
        smooth = gaussian(image, sigma, mode=mode, cval=cval, **kw)
        gradients = np.gradient(smooth)
        if image.ndim == 1:
            gradients = [gradients]
        return [np.gradient(gradients[a0], axis=a1)
                for a0, a1 in combinations_with_replacement(axes, 2)]
    sigmas = (sigma,) * image.ndim if np.isscalar(sigma) else tuple(sigma)
    # scikit-image's 100 for small sigma: past 20 sigma (gblur's longest cut) the kernel
    # weighs under exp(-200), nothing in float64.
    truncate = 8 if all(s > 1 for s in sigmas) else 20
    scaled = [s / np.sqrt(2) for s in sigmas]

    def first(x, axis):
        orders = [int(a == axis) for a in range(image.ndim)]
        return gaussian_filter(x, scaled, orders, None, mode, cval, truncate, **kw)

    gradients = [first(image, a) for a in range(image.ndim)]
    return [first(gradients[a0], a1) for a0, a1 in combinations_with_replacement(axes, 2)]
