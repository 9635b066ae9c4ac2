"""gblur's Gaussian over Dask arrays: arrays larger than one machine's memory, blurred chunk
by chunk on a Dask cluster, at a cost that does not grow with sigma.

Along an axis where the recursive Gaussian runs (sigma 2 and up, unless ``truncate`` or
``radius`` cut the kernel short), no chunk reads its neighbours' samples. The filter is
linear and its state is four numbers per line, so each chunk is summarised on its own (the
state its samples leave at each end), the summaries of each column of chunks along the axis
are walked once (a few numbers per line and chunk) to give the state entering every chunk,
and each chunk is then filtered from those states: block-parallel recursive filtering
(Nehab, Maximo, Lima and Hoppe) with Dask's chunks as the blocks. The work and the memory are
the same at sigma 2 and at sigma 2000, and sigma may reach far beyond a chunk or the whole
axis. The array's own ends are extended by the mode exactly (for 'reflect', 'mirror' and
'wrap', the state of the endlessly repeated array).

Axes that every chunk holds whole, and axes where the filter's reach on both sides adds at
most an eighth to a chunk (small sigma on large chunks), are filtered in one pass instead: one
task per chunk, in memory, with the neighbours' samples as far as the filter reaches
(``dask.array.map_overlap``). So is an axis where scipy's cut kernel runs (sigma under 2, or
a short ``truncate`` or ``radius``) and an axis where a derivative is taken (``order`` 1 or
2, whose reach is about 8 sigma); where the reach is the whole axis, along the axis in one
piece.

A result of 16-bit integers takes scipy's own kernel up to sigma 50 along the axes filtered
in one task per chunk, as :func:`gblur.gaussian_filter` does (within one level of scipy's
result rounded); along a carried axis it keeps the recursive filter (within 1.5e-4 of the
range), whose cost does not grow with sigma.

A NaN or an infinity spoils the outputs within scipy's radius of it, as in scipy, across
chunks too: each chunk's summary also says where its non-finite samples lie (found only where
they left the summary non-finite), the walk hands each chunk the distances to the nearest
ones beyond it, and a chunk near one is filtered with them as 0 and its spoilt outputs set.

The result is within 1e-4 of the data's range of :func:`gblur.gaussian_filter` on the whole
array (which cuts the periodic extensions where their weights fall under 5e-5), and within
1e-3 of scipy's, for every mode, chunking and sigma.
"""

import numpy as np

from . import (_NATIVE, _check_axes, _gblur, _normalize_sequence, _numeric, _orders,
               _per_axis, _round_into)
from . import gaussian_filter as _gaussian_filter

__all__ = ["gaussian_filter", "gaussian_gradient_magnitude", "gaussian_laplace"]

# Values per line of a chunk's summary and of its incoming states (gblur::nd::carry), and of
# where its non-finite samples lie: per kind (NaN, +inf, -inf), the first and the last in a
# chunk's summary; the distances to the nearest before and after it, and whether it holds
# any itself, in its incoming states.
_STATES_OUT = 10
_STATES_IN = 8
_SUMMARY = _STATES_OUT + 6
_INCOMING = _STATES_IN + 7
# "None of this kind" among the positions and distances: beyond any radius (float32 holds the
# integers up to 2**24 exactly, and scipy's radius stays under it).
_FAR = float(2 ** 24)


def _float32(block):
    # A block that came over the network may sit unaligned in its message's buffer.
    return np.require(block, np.float32, ["C_CONTIGUOUS", "ALIGNED"])


def _kinds(block):
    return (np.isnan(block), block == np.inf, block == -np.inf)


def _zeroed(block):
    return np.nan_to_num(block, nan=0.0, posinf=0.0, neginf=0.0)


def _take(x, axis, index):
    return x[tuple(index if a == axis else slice(None) for a in range(x.ndim))]


def _summarize(block, axis, sigma, mode, cval):
    """The chunk's carry summary and, per kind of non-finite sample, the index of the first
    and of the last along each line (``_FAR`` and ``-_FAR`` where there is none). A
    non-finite sample leaves its line's summary non-finite (a recursive filter's state never
    recovers from one), so a finite summary needs no search; else the chunk is summarised
    again with them as 0."""
    block = _float32(block)
    states = _gblur.carry_summarize(block, axis, sigma, mode, cval)
    n = block.shape[axis]
    shape = [-1 if a == axis else 1 for a in range(block.ndim)]
    if np.isfinite(states).all():
        ends = np.array([_FAR, -_FAR] * 3, np.float32).reshape(shape)
        ends = np.broadcast_to(ends, _take(states, axis, slice(0, 6)).shape)
    else:
        index = np.arange(n, dtype=np.float32).reshape(shape)
        ends = []
        for mask in _kinds(block):
            ends.append(np.where(mask, index, _FAR).min(axis=axis, keepdims=True))
            ends.append(np.where(mask, index, -_FAR).max(axis=axis, keepdims=True))
        ends = np.concatenate(ends, axis=axis)
        states = _gblur.carry_summarize(_zeroed(block), axis, sigma, mode, cval)
    return np.concatenate([states, ends], axis=axis)


def _incoming(column, axis, lengths, sigma, mode, cval):
    """Every chunk's incoming states (the walk over its column's summaries) and, per kind of
    non-finite sample, the distances from its first sample to the nearest such sample
    before it and from its last to the nearest after (``_FAR`` where none is near), then
    whether it holds any itself."""
    chunks = len(lengths)
    per_chunk = np.moveaxis(_float32(column), axis, 0)
    rest = per_chunk.shape[1:]
    per_chunk = per_chunk.reshape((chunks, _SUMMARY) + rest)
    states = np.ascontiguousarray(np.moveaxis(
        per_chunk[:, :_STATES_OUT].reshape((chunks * _STATES_OUT,) + rest), 0, axis))
    incoming = np.moveaxis(_gblur.carry_incoming(states, axis, list(lengths), sigma, mode, cval),
                           axis, 0).reshape((chunks, _STATES_IN) + rest)
    distances = np.empty((chunks, 7) + rest, np.float32)
    if (per_chunk[:, _STATES_OUT::2] >= _FAR).all():
        # No non-finite sample in the column.
        distances[:, :6] = _FAR
        distances[:, 6] = 0.0
        return _joined(incoming, distances, axis)
    # The array's positions in float64: an axis may pass float32's integers.
    starts = np.cumsum([0] + list(lengths[:-1])).astype(np.float64)
    at = starts.reshape((chunks,) + (1,) * (len(rest) + 1))
    first = per_chunk[:, _STATES_OUT::2].astype(np.float64) + at
    last = per_chunk[:, _STATES_OUT + 1::2].astype(np.float64) + at
    none_before = np.full_like(last[:1], -np.inf)
    before = np.maximum.accumulate(np.concatenate([none_before, last[:-1]]), axis=0)
    after = np.minimum.accumulate(np.concatenate([first[1:], -none_before])[::-1], axis=0)[::-1]
    if mode == "wrap":
        # The samples beyond one end are the other end's.
        total = float(sum(lengths))
        before = np.maximum(before, last.max(axis=0) - total)
        after = np.minimum(after, first.min(axis=0) + total)
    last_sample = at + np.array(lengths, np.float64).reshape(at.shape) - 1
    distances[:, 0:6:2] = np.minimum(at - before, _FAR)
    distances[:, 1:6:2] = np.minimum(after - last_sample, _FAR)
    distances[:, 6] = (per_chunk[:, _STATES_OUT::2] < _FAR).any(axis=1)
    return _joined(incoming, distances, axis)


def _joined(incoming, distances, axis):
    """Each chunk's states then its distances, chunk after chunk along ``axis``."""
    out = np.concatenate([incoming, distances], axis=1)
    return np.moveaxis(out.reshape((-1,) + out.shape[2:]), 0, axis)


def _spoil(y, block, spoilers, axis, radius):
    """Sets the outputs in ``y`` within ``radius`` along ``axis`` of a non-finite input (in the
    block itself, or at the distances ``spoilers`` gives before and after it) as scipy's sum
    leaves them: NaN near a NaN or near infinities of both signs, else the infinity."""
    n = block.shape[axis]
    shape = [-1 if a == axis else 1 for a in range(block.ndim)]
    index = np.arange(n, dtype=np.float64).reshape(shape)
    near = []
    for k, mask in enumerate(_kinds(block)):
        before = -_take(spoilers, axis, slice(2 * k, 2 * k + 1)).astype(np.float64)
        after = (n - 1) + _take(spoilers, axis, slice(2 * k + 1, 2 * k + 2)).astype(np.float64)
        previous = np.maximum.accumulate(np.where(mask, index, -np.inf), axis=axis)
        following = np.flip(np.minimum.accumulate(np.flip(np.where(mask, index, np.inf), axis),
                                                  axis=axis), axis)
        previous = np.maximum(previous, before)
        following = np.minimum(following, after)
        near.append((index - previous <= radius) | (following - index <= radius))
    nan, positive, negative = near
    y[nan | (positive & negative)] = np.nan
    y[positive & ~negative & ~nan] = np.inf
    y[negative & ~positive & ~nan] = -np.inf
    return y


def _filter_from(block, incoming, axis, sigma, mode, cval, radius):
    block, incoming = _float32(block), _float32(incoming)
    states = np.ascontiguousarray(_take(incoming, axis, slice(0, _STATES_IN)))
    spoilers = _take(incoming, axis, slice(_STATES_IN, _INCOMING - 1))
    own = _take(incoming, axis, slice(_INCOMING - 1, _INCOMING)).any()
    if not own and bool((spoilers > radius).all()):
        return _gblur.carry_filter(block, states, axis, sigma, mode, cval)
    y = _gblur.carry_filter(_zeroed(block) if own else block, states, axis, sigma, mode, cval)
    return _spoil(y, block, spoilers, axis, radius)


def _with_extent(chunks, axis, extent):
    return tuple(extent if a == axis else c for a, c in enumerate(chunks))


def _incoming_states(x, axis, sigma, mode, cval):
    """The states entering every chunk of ``x`` along ``axis`` (steps 1 and 2 of the carries:
    summaries, and one walk per column of chunks), with the distances to the non-finite
    samples nearest before and after it, as a float32 array of ``x``'s chunks with the axis's
    extent ``_INCOMING`` per chunk."""
    lengths = x.chunks[axis]
    meta = np.empty((0,) * x.ndim, dtype=np.float32)
    args = dict(axis=axis, sigma=sigma, mode=mode, cval=cval)
    summaries = x.map_blocks(
        _summarize, chunks=_with_extent(x.chunks, axis, (_SUMMARY,) * len(lengths)),
        dtype=np.float32, meta=meta, **args)
    column = summaries.rechunk({axis: -1})
    incoming = column.map_blocks(
        _incoming, lengths=tuple(lengths),
        chunks=_with_extent(column.chunks, axis, (_INCOMING * len(lengths),)),
        dtype=np.float32, meta=meta, **args)
    return incoming.rechunk({axis: _INCOMING})


def _filtered_from(x, incoming, axis, sigma, mode, cval, radius):
    """Step 3 of the carries: every chunk of ``x`` filtered along ``axis`` from ``incoming``,
    the outputs within scipy's ``radius`` of a NaN or an infinity set as scipy's sum leaves
    them (the chunk filtered with those as 0)."""
    import dask.array as da

    meta = np.empty((0,) * x.ndim, dtype=np.float32)
    return da.map_blocks(_filter_from, x, incoming, chunks=x.chunks, dtype=np.float32,
                         meta=meta, axis=axis, sigma=sigma, mode=mode, cval=cval,
                         radius=radius)


def _carried(x, axis, sigma, mode, cval, radius):
    """The recursive filter along ``axis``: summaries, one walk per column of chunks, and
    every chunk filtered from the states entering it."""
    return _filtered_from(x, _incoming_states(x, axis, sigma, mode, cval), axis, sigma, mode,
                          cval, radius)


def _filter_block(block, sigma, order, mode, cval, truncate, radius, method, dtype_out):
    return _gaussian_filter(block, sigma, order,
                            None if block.dtype == dtype_out else dtype_out, mode, cval,
                            truncate, radius=radius, method=method)


def _overlapped(x, axis, sigmas, orders, modes, cval, truncate, radius, method, reach):
    """scipy's cut kernel, or a derivative, along ``axis``: each chunk with its neighbours'
    samples as far as the kernel reaches, or the whole axis in one chunk where it reaches that
    far."""
    if reach[axis] >= x.shape[axis]:
        x = x.rechunk({axis: -1})
    return _filtered_in_place(x, [axis], sigmas, orders, modes, cval, truncate, radius, method,
                              reach)


def _overlap_pays(chunks, reach):
    """Whether an axis is held whole by every chunk, or its overlap (the reach on both
    sides) adds at most an eighth to its smallest chunk (the last one aside)."""
    inner = chunks[:-1] if len(chunks) > 1 else chunks
    return len(chunks) == 1 or 16 * reach <= min(inner)


def _filtered_in_place(x, axes, sigmas, orders, modes, cval, truncate, radius, method, reach,
                       dtype=np.float32):
    """``x`` filtered along ``axes`` in one task per chunk, each chunk with its neighbours'
    samples as far as the filter reaches along an axis that has more than one chunk, into
    ``dtype`` (float32 where other axes follow; the result's own type where none does)."""
    rank = x.ndim
    args = dict(sigma=[s if a in axes else 0.0 for a, s in enumerate(sigmas)],
                order=[o if a in axes else 0 for a, o in enumerate(orders)], mode=modes,
                cval=cval, truncate=truncate,
                radius=None if radius is None else [r if a in axes else 0
                                                    for a, r in enumerate(radius)],
                method=method, dtype_out=np.dtype(dtype))
    meta = np.empty((0,) * rank, dtype=dtype)
    depth = {a: int(reach[a]) if a in axes and len(x.chunks[a]) > 1 else 0 for a in range(rank)}
    if not any(depth.values()):
        return x.map_blocks(_filter_block, dtype=dtype, meta=meta, **args)
    # The array's own edges: a chunk there extends itself by the mode, except for 'wrap',
    # whose samples beyond one end are the other end's, which Dask's periodic boundary brings.
    boundary = {a: "periodic" if depth[a] and modes[a] == "wrap" else "none"
                for a in range(rank)}
    return x.map_overlap(_filter_block, depth=depth, boundary=boundary, dtype=dtype,
                         meta=meta, **args)


# gblur::nd::EXACT_16_BIT_SIGMA: up to it, a 16-bit result takes scipy's own kernel.
_EXACT_16_BIT_SIGMA = 50.0


def _plan(sigmas, truncate, radii, method, orders, dtype, chunks):
    """Each axis's filter ('recursive', 'fir r=R' or None), reach and method for an array of
    ``chunks`` filtered into ``dtype``. Where that holds 16-bit integers, an axis filtered in
    one task per chunk (``_overlap_pays`` with scipy's radius) takes scipy's kernel up to
    sigma 50, as :func:`gblur.gaussian_filter` does (within a level of scipy's result
    rounded); an axis carried between chunks keeps the recursive filter, whose cost does not
    grow with sigma."""
    names, reach = _gblur.plan(sigmas, float(truncate), radii, method, orders)
    names, reach, methods = list(names), list(reach), [method] * len(sigmas)
    if method == "auto" and np.dtype(dtype) in (np.dtype(np.uint16), np.dtype(np.int16)):
        exact = [s if s <= _EXACT_16_BIT_SIGMA else 0.0 for s in sigmas]
        fir_names, fir_reach = _gblur.plan(exact, float(truncate), radii, "fir", orders)
        for a, s in enumerate(exact):
            if s > 0 and _overlap_pays(chunks[a], int(fir_reach[a])):
                names[a], reach[a], methods[a] = fir_names[a], fir_reach[a], "fir"
    return names, reach, methods


def _scipy_radius(sigma, truncate, radii, axis):
    """scipy's kernel radius along ``axis``: ``radius``'s, else ``int(truncate * sigma +
    0.5)``."""
    if radii is not None and radii[axis] is not None:
        return int(radii[axis])
    return int(float(truncate) * float(sigma) + 0.5)


def _to_dtype(block, dtype_out):
    out = np.empty(block.shape, dtype_out)
    _round_into(out, block)
    return out


def gaussian_filter(image, sigma, order=0, mode="reflect", cval=0.0, truncate=4.0, *,
                    radius=None, axes=None, method="auto"):
    """Multidimensional Gaussian filter over a Dask array, as
    ``dask_image.ndfilters.gaussian_filter`` (and ``scipy.ndimage.gaussian_filter``).

    Parameters
    ----------
    image : dask.array.Array or array_like
        The array to filter (any rank and dtype :func:`gblur.gaussian_filter` takes).
    sigma, order, mode, cval, truncate, radius, axes, method
        As for :func:`gblur.gaussian_filter`. Any sigma on any chunking: the recursive
        filter's reach may exceed a chunk or the whole axis. Along an axis where a derivative
        is taken (``order`` 1 or 2), each chunk is filtered with its neighbours' samples as far
        as the derivative's filter reaches (about 8 sigma), as for scipy's cut kernel.

    Returns
    -------
    dask.array.Array
        The filtered array, lazily: of the input's shape, chunks and dtype.

    Notes
    -----
    Along an axis where the recursive filter runs, each chunk is read twice (summarised, then
    filtered from the states its neighbours hand on) and nothing else: the cost per sample and
    the memory do not grow with sigma. Between axes the data is float32. Integer results are
    rounded once, at the end, as :func:`gblur.gaussian_filter` rounds them.

    Examples
    --------
    >>> import dask.array as da, gblur.dask
    >>> x = da.ones((256, 256), chunks=64, dtype="f4")
    >>> float(gblur.dask.gaussian_filter(x, 4).mean().compute())
    1.0
    >>> # sigma 200 on chunks of 64: no overlap, no rechunking.
    >>> gblur.dask.gaussian_filter(x, 200).chunks == x.chunks
    True
    """
    import dask.array as da

    image = da.asarray(image)
    _numeric(image)
    if method not in ("auto", "fir", "recursive"):
        raise ValueError(f"method must be 'auto', 'fir' or 'recursive', not {method!r}")
    if np.iscomplexobj(image):
        parts = [gaussian_filter(part.astype(np.float64), sigma, order, mode, cval, truncate,
                                 radius=radius, axes=axes, method=method)
                 for part in (image.real, image.imag)]
        return (parts[0] + 1j * parts[1]).astype(image.dtype)
    sigmas, modes, radii = _per_axis(np.empty((1,) * image.ndim), sigma, mode, truncate,
                                     radius, axes)
    orders = _orders(order, image.ndim, axes)
    if image.size == 0 or not any(sigmas):
        return image
    names, reach, methods = _plan(sigmas, truncate, radii, method,
                                  orders if any(orders) else None, image.dtype, image.chunks)
    work = image
    # Axes that every chunk holds whole, and axes whose reach adds at most an eighth to a
    # chunk, are filtered together in one task per chunk, in memory, as gblur.gaussian_filter
    # filters them, with the neighbours' samples as far as the filter reaches: there one pass
    # costs less than the carries' two.
    local = [a for a, name in enumerate(names)
             if name is not None and _overlap_pays(image.chunks[a], int(reach[a]))]
    # One task per chunk for each method among them (a 16-bit result's scipy kernels apart).
    groups = [[a for a in local if methods[a] == m] for m in dict.fromkeys(methods[a]
                                                                             for a in local)]
    for i, group in enumerate(groups):
        last = i == len(groups) - 1 and len(local) == sum(name is not None for name in names)
        work = _filtered_in_place(work, group, sigmas, orders, modes, float(cval),
                                  float(truncate), radii, methods[group[0]], reach,
                                  image.dtype if last and image.dtype in _NATIVE else np.float32)
    for axis, name in enumerate(names):
        if name is None or axis in local:
            continue
        if name == "recursive":
            work = _carried(work, axis, sigmas[axis], modes[axis], float(cval),
                            _scipy_radius(sigmas[axis], truncate, radii, axis))
        else:
            work = _overlapped(work, axis, sigmas, orders, modes, float(cval), float(truncate),
                               radii, methods[axis], reach)
    if work.dtype != image.dtype:
        work = work.map_blocks(_to_dtype, dtype=image.dtype, dtype_out=image.dtype)
    if work.chunks != image.chunks:
        work = work.rechunk(image.chunks)
    return work


def _derivatives(image, sigma, order, mode, axes, per_axis_sigma, **kw):
    """The derivative of ``order`` along each of ``axes`` (default all), one lazy array per
    axis, as ``gblur.derivatives`` takes them: in float32 for float32 input, complex128 for
    complex, float64 otherwise; ``mode`` one or one per entry of ``axes``. With
    ``per_axis_sigma`` (the Laplacian's rule) ``sigma`` is one value or one per entry of
    ``axes`` and the other axes are left alone; else it is ``gaussian_filter``'s."""
    import dask.array as da

    image = da.asarray(image)
    _numeric(image)
    if np.iscomplexobj(image):
        dtype = np.complex128
    else:
        dtype = np.float32 if image.dtype == np.float32 else np.float64
    axes = _check_axes(axes, image.ndim)
    modes = _normalize_sequence(mode, len(axes))
    if per_axis_sigma:
        full = [0.0] * image.ndim
        for a, s in zip(axes, _normalize_sequence(sigma, len(axes))):
            full[a] = s
        sigma = full
    work = image.astype(dtype)
    out = []
    for axis, m in zip(axes, modes):
        orders = [0] * image.ndim
        orders[axis] = order
        out.append(gaussian_filter(work, sigma, orders, m, **kw))
    return image, out


def _in_dtype_of(image, result):
    """The result in the input's type, rounded once where that holds integers."""
    if result.dtype == image.dtype:
        return result
    if np.issubdtype(image.dtype, np.integer) or image.dtype == np.bool_:
        return result.map_blocks(_to_dtype, dtype=image.dtype, dtype_out=image.dtype)
    return result.astype(image.dtype)


def gaussian_gradient_magnitude(image, sigma, mode="reflect", cval=0.0, truncate=4.0, *,
                                radius=None, axes=None, method="auto"):
    """:func:`gblur.gaussian_gradient_magnitude` over a Dask array, as
    ``dask_image.ndfilters.gaussian_gradient_magnitude``: of the input's dtype (an integer
    result rounded once); computed in float32 for float32 input, else float64.

    Examples
    --------
    >>> import dask.array as da, numpy as np, gblur.dask
    >>> ramp = da.from_array(np.tile(np.arange(64.0), (64, 1)), chunks=32)
    >>> round(float(gblur.dask.gaussian_gradient_magnitude(ramp, 3)[32, 32].compute()), 3)
    1.0
    """
    image, parts = _derivatives(image, sigma, 1, mode, axes, False, cval=cval,
                                truncate=truncate, radius=radius, method=method)
    if not parts:
        return image
    total = parts[0] * parts[0]
    for p in parts[1:]:
        total = total + p * p
    return _in_dtype_of(image, total ** 0.5)


def gaussian_laplace(image, sigma, mode="reflect", cval=0.0, truncate=4.0, *, radius=None,
                     axes=None, method="auto"):
    """:func:`gblur.gaussian_laplace` over a Dask array, as
    ``dask_image.ndfilters.gaussian_laplace``: of the input's dtype (an integer result
    rounded once); ``sigma`` one value or one per entry of ``axes``, the other axes left
    alone.

    Examples
    --------
    >>> import dask.array as da, numpy as np, gblur.dask
    >>> bowl = da.from_array(np.add.outer(np.arange(48.0) ** 2, np.arange(40.0) ** 2), chunks=16)
    >>> round(float(gblur.dask.gaussian_laplace(bowl, 4)[24, 20].compute()), 3)
    4.0
    """
    image, parts = _derivatives(image, sigma, 2, mode, axes, True, cval=cval,
                                truncate=truncate, radius=radius, method=method)
    if not parts:
        return image
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    return _in_dtype_of(image, total)
