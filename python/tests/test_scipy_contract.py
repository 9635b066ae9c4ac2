"""gblur.gaussian_filter keeps scipy.ndimage.gaussian_filter's contract.

The tests in the first part are adapted from scipy's own tests of gaussian_filter
(scipy/ndimage/tests/test_filters.py: test_gauss01-06, test_gauss_memory_overlap,
test_filter_axes, test_filter_axes_kwargs, test_filter_invalid_axes, test_gaussian_truncate,
test_gaussian_radius, test_gaussian_radius_invalid, TestThreading), rewritten for gblur: where
scipy's test checks a property of its own kernel that a recursive filter does not share (the
exact support of a kernel cut at truncate >= 4), the test says so and checks the cases where
gblur runs scipy's cut kernel. The second part compares results with scipy's on random
shapes, axes, modes, sigmas and dtypes (hypothesis).
"""

import itertools
import threading

import numpy as np
import pytest
import scipy.ndimage as ndi
from hypothesis import given, settings, strategies as st

import gblur


def sumsq(a, b):
    return np.sqrt(((a - b) ** 2).sum())


def rel_error(got, want, data=None, cval=None):
    """Largest difference relative to the signal's range: the input's (with the padding value
    `cval` where the edges are padded with it), else the result's."""
    values = np.ravel(want if data is None else data).astype(np.float64)
    if cval is not None:
        values = np.append(values, cval)
    span = float(np.ptp(values)) or 1.0
    return float(np.abs(got.astype(np.float64) - want).max()) / span


# --- scipy's own tests, adapted ---------------------------------------------------------

def test_gauss01_sigma_zero_is_the_identity():
    input = np.array([[1, 2, 3], [2, 4, 6]], np.float32)
    np.testing.assert_array_equal(gblur.gaussian_filter(input, 0), input)


def test_gauss02_keeps_dtype_and_shape():
    input = np.array([[1, 2, 3], [2, 4, 6]], np.float32)
    output = gblur.gaussian_filter(input, 1.0)
    assert output.dtype == input.dtype and output.shape == input.shape


def test_gauss03_keeps_the_sum():
    input = np.arange(100 * 100, dtype=np.float32).reshape(100, 100)
    output = gblur.gaussian_filter(input, [1.0, 1.0])
    assert output.dtype == input.dtype and output.shape == input.shape
    # With f32 data summing to 5e7, 8 digits is all there is (scipy's own comment).
    np.testing.assert_allclose(output.sum(dtype="d"), input.sum(dtype="d"), rtol=1e-6)
    assert sumsq(input, output) > 1.0


def test_gauss04_output_dtype():
    input = np.arange(100 * 100, dtype=np.float32).reshape(100, 100)
    output = gblur.gaussian_filter(input, [1.0, 1.0], output=np.float64)
    assert output.dtype.type == np.float64 and output.shape == input.shape
    assert sumsq(input, output) > 1.0


def test_an_output_that_is_the_input_is_filtered_in_place():
    rng = np.random.default_rng(11)
    for dtype, shape, sigma, order in ((np.float32, (40, 50), 3.0, 0),
                                       (np.float64, (12, 20, 30), (1.5, 2.0, 4.0), 0),
                                       (np.uint8, (40, 50), 2.5, 0),
                                       (np.uint16, (30, 40), 3.0, 0),
                                       (np.float32, (40, 50), 2.0, (1, 0))):
        x = (rng.random(shape) * 200).astype(dtype)
        want = gblur.gaussian_filter(x, sigma, order, mode="nearest")
        got = gblur.gaussian_filter(x, sigma, order, output=x, mode="nearest")
        assert got is x and np.array_equal(x, want), (dtype, shape, sigma, order)
    x = rng.random((30, 40)).astype(np.float32)
    want = gblur.gaussian_filter1d(x, 2.0, axis=0)
    assert gblur.gaussian_filter1d(x, 2.0, axis=0, output=x) is x and np.array_equal(x, want)
    # A view of the input's own elements elsewhere is not the input: filtered through a copy.
    flat = rng.random(30 * 40 + 20).astype(np.float32)
    x, out = flat[:1200].reshape(30, 40), flat[20:].reshape(30, 40)
    want = gblur.gaussian_filter(x.copy(), 2.0)
    assert gblur.gaussian_filter(x, 2.0, output=out) is out and np.array_equal(out, want)


def test_a_read_only_output_is_refused_as_scipy_refuses_it():
    input = np.arange(40 * 30, dtype=np.float32).reshape(40, 30)
    for dtype in (np.float32, np.float64, np.uint8):
        output = np.zeros(input.shape, dtype)
        output.setflags(write=False)
        with pytest.raises(ValueError, match="output array is read-only") as scipy_error:
            ndi.gaussian_filter(input, 2.0, output=output)
        with pytest.raises(ValueError, match="output array is read-only") as ours:
            gblur.gaussian_filter(input, 2.0, output=output)
        assert str(ours.value) == str(scipy_error.value)
        with pytest.raises(ValueError, match="output array is read-only"):
            gblur.gaussian_filter1d(input, 2.0, output=output)
        assert not output.any()


def test_arrays_without_numbers_are_refused_as_scipy_refuses_them():
    objects = np.array([[1.0, None, 3.0]] * 5, dtype=object)
    with pytest.raises(RuntimeError) as scipy_error:
        ndi.gaussian_filter(objects, 2.0)
    with pytest.raises(RuntimeError) as ours:
        gblur.gaussian_filter(objects, 2.0)
    assert str(ours.value) == str(scipy_error.value)
    with pytest.raises(RuntimeError, match="not supported"):
        gblur.gaussian_filter(np.array([["a", "b"]] * 3), 2.0)
    numbers = np.ones((5, 6))
    with pytest.raises(RuntimeError, match="not supported"):
        gblur.gaussian_filter(numbers, 2.0, output=np.empty((5, 6), dtype=object))


def test_booleans_come_back_as_scipy_writes_them():
    # scipy writes True where the blurred value's whole part is not 0: only where it reaches
    # 1, in a neighbourhood all True. Where the exact value is within the filter's error of 1,
    # the two may land either side; everywhere else they agree.
    rng = np.random.default_rng(7)
    for share in (0.3, 0.6, 0.97):
        data = rng.random((60, 70)) < share
        for sigma in (0.8, 2.0, 5.0):
            want = ndi.gaussian_filter(data, sigma)
            got = gblur.gaussian_filter(data, sigma)
            assert got.dtype == np.bool_
            exact = ndi.gaussian_filter(data.astype(np.float64), sigma)
            differ = got != want
            assert np.all(np.abs(exact[differ] - 1) < 1e-4), f"share {share}, sigma {sigma}"
            if share < 0.9:
                assert not differ.any() and not want.any()
    # Where the whole neighbourhood is True the blur is 1: True in both.
    block = np.zeros((40, 40), bool)
    block[5:35, 5:35] = True
    assert gblur.gaussian_filter(block, 2.0)[20, 20]


def test_gauss05_derivatives_as_scipy():
    # scipy's test_gauss05 (a derivative at sigma 1, scipy's own kernel here too).
    input = np.arange(100 * 100, dtype=np.float32).reshape(100, 100)
    output = gblur.gaussian_filter(input, [1.0, 1.0], order=1, output=np.float64)
    want = ndi.gaussian_filter(input, [1.0, 1.0], order=1, output=np.float64)
    np.testing.assert_allclose(output, want, rtol=1e-5, atol=1e-3)


def test_gauss06_scalar_and_sequence_sigma_agree():
    input = np.arange(100 * 100, dtype=np.float32).reshape(100, 100)
    a = gblur.gaussian_filter(input, [1.0, 1.0], output=np.float64)
    b = gblur.gaussian_filter(input, 1.0, output=np.float64)
    np.testing.assert_array_equal(a, b)


def test_gauss_memory_overlap():
    input = np.arange(100 * 100, dtype=np.float32).reshape(100, 100)
    output1 = gblur.gaussian_filter(input, 1.0)
    gblur.gaussian_filter(input, 1.0, output=input)
    np.testing.assert_array_equal(output1, input)


@pytest.mark.parametrize(
    "axes",
    tuple(itertools.combinations(range(-3, 3), 1))
    + tuple(itertools.combinations(range(-3, 3), 2))
    + ((0, 1, 2),),
)
def test_filter_axes(axes):
    array = np.arange(6 * 8 * 12, dtype=np.float64).reshape(6, 8, 12)
    if len(set(ax % array.ndim for ax in axes)) != len(axes):
        with pytest.raises(ValueError, match="axes must be unique"):
            gblur.gaussian_filter(array, 1.0, axes=axes)
        return
    output = gblur.gaussian_filter(array, 1.0, axes=axes)
    all_sizes = tuple(1.0 if ax in np.asarray(axes) % 3 else 0 for ax in range(3))
    np.testing.assert_allclose(output, gblur.gaussian_filter(array, all_sizes))
    np.testing.assert_allclose(output, ndi.gaussian_filter(array, 1.0, axes=axes), rtol=1e-5)


@pytest.mark.parametrize("axes", tuple(itertools.combinations(range(-3, 3), 2)))
def test_filter_axes_kwargs(axes):
    array = np.arange(6 * 8 * 12, dtype=np.float64).reshape(6, 8, 12)
    kwargs = dict(radius=np.array([4, 2, 3]), mode=np.array(["reflect", "nearest", "constant"]))
    axes = np.array(axes)
    reduced = {k: list(v[axes]) for k, v in kwargs.items()}
    if len(set(axes % 3)) != len(axes):
        with pytest.raises(ValueError, match="axes must be unique"):
            gblur.gaussian_filter(array, [1.0] * len(axes), axes=axes, **reduced)
        return
    output = gblur.gaussian_filter(array, [1.0] * len(axes), axes=axes, **reduced)
    sizes = np.zeros(3)
    sizes[axes] = 1.0
    expected = gblur.gaussian_filter(array, list(sizes), **{k: list(v) for k, v in kwargs.items()})
    np.testing.assert_allclose(output, expected)
    want = ndi.gaussian_filter(array, [1.0] * len(axes), axes=tuple(axes), **reduced)
    assert rel_error(output, want) < 1e-6


@pytest.mark.parametrize("axes", [(1.5,), (0, 1, 2, 3), (3,), (-4,)])
def test_filter_invalid_axes(axes):
    array = np.arange(6 * 8 * 12, dtype=np.float64).reshape(6, 8, 12)
    if any(isinstance(ax, float) for ax in axes):
        error, match = TypeError, "cannot be interpreted as an integer"
    else:
        error, match = ValueError, "out of range"
    with pytest.raises(error, match=match):
        gblur.gaussian_filter(array, 1.0, axes=axes)


def test_gaussian_truncate():
    # scipy checks its kernel's support: 2·int(truncate·σ + 0.5) + 1 samples. Where the kernel
    # is cut short of 4σ gblur runs scipy's cut kernel and has the same support; at 4σ and
    # beyond it runs the recursive filter, whose support is the whole array (its weights
    # decay below 5e-5 of the range beyond 5.5σ + 3 samples).
    arr = np.zeros((100, 100), float)
    arr[50, 50] = 1
    assert ((gblur.gaussian_filter(arr, 5, truncate=2) > 0).sum()) == 21 ** 2
    far = gblur.gaussian_filter(arr, 5, truncate=5)
    assert far[50, 50 + 31] < 5e-5 and far.sum() == pytest.approx(1.0, abs=1e-6)
    f = gblur.gaussian_filter(arr, [0.5, 2.5], truncate=3.5)
    fpos = f > 0
    assert fpos.any(axis=0).sum() == 2 * int(2.5 * 3.5 + 0.5) + 1
    assert fpos.any(axis=1).sum() == 2 * int(0.5 * 3.5 + 0.5) + 1
    x = np.zeros(51)
    x[25] = 1
    assert (gblur.gaussian_filter1d(x, sigma=2, truncate=3.5) > 0).sum() == 15


def test_gaussian_radius():
    x = np.zeros(7)
    x[3] = 1
    f1 = gblur.gaussian_filter1d(x, sigma=2, truncate=1.5)
    f2 = gblur.gaussian_filter1d(x, sigma=2, radius=3)
    np.testing.assert_array_equal(f1, f2)
    a = np.zeros((9, 9))
    a[4, 4] = 1
    f1 = gblur.gaussian_filter(a, sigma=0.5, truncate=3.5)
    f2 = gblur.gaussian_filter(a, sigma=0.5, radius=2)
    np.testing.assert_array_equal(f1, f2)
    a = np.zeros((50, 50))
    a[25, 25] = 1
    f1 = gblur.gaussian_filter(a, sigma=[0.5, 2.5], truncate=3.5)
    f2 = gblur.gaussian_filter(a, sigma=[0.5, 2.5], radius=[2, 9])
    np.testing.assert_array_equal(f1, f2)
    np.testing.assert_allclose(f2, ndi.gaussian_filter(a, sigma=[0.5, 2.5], radius=[2, 9]),
                               atol=1e-7)


def test_gaussian_radius_invalid():
    with pytest.raises(ValueError):
        gblur.gaussian_filter1d(np.zeros(8), sigma=1, radius=-1)
    with pytest.raises(ValueError):
        gblur.gaussian_filter1d(np.zeros(8), sigma=1, radius=1.1)


def test_threads_give_what_serial_calls_give():
    d = np.random.default_rng(1).standard_normal((4, 300, 400)).astype(np.float32)
    serial = np.stack([gblur.gaussian_filter(x, 3.0) for x in d])
    threaded = np.empty_like(serial)

    def run(i):
        gblur.gaussian_filter(d[i], 3.0, output=threaded[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    np.testing.assert_array_equal(serial, threaded)


def test_boundary_mode_names_and_errors():
    a = np.random.default_rng(2).random((20, 30))
    for alias, name in [("grid-mirror", "reflect"), ("grid-wrap", "wrap"),
                        ("grid-constant", "constant")]:
        np.testing.assert_array_equal(gblur.gaussian_filter(a, 2.5, mode=alias),
                                      gblur.gaussian_filter(a, 2.5, mode=name))
    with pytest.raises(RuntimeError, match="boundary mode not supported"):
        gblur.gaussian_filter(a, 2.0, mode="circular")
    with pytest.raises(RuntimeError, match="sequence argument must have length"):
        gblur.gaussian_filter(a, [1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="output shape not correct"):
        gblur.gaussian_filter(a, 1.0, output=np.zeros((3, 3)))


def test_multiple_modes_equal_sequential_one_axis_filters():
    a = np.random.default_rng(3).random((24, 31))
    modes = ["reflect", "wrap"]
    got = gblur.gaussian_filter(a, 3.0, mode=modes)
    seq = gblur.gaussian_filter1d(a, 3.0, axis=0, mode=modes[0])
    seq = gblur.gaussian_filter1d(seq, 3.0, axis=1, mode=modes[1])
    np.testing.assert_allclose(got, seq, atol=1e-6)
    assert rel_error(got, ndi.gaussian_filter(a, 3.0, mode=modes), a) < 1e-3


# --- results beside scipy's ---------------------------------------------------------------

MODES = ["reflect", "constant", "nearest", "mirror", "wrap"]


@settings(max_examples=150, deadline=None)
@given(
    shape=st.lists(st.integers(1, 40), min_size=1, max_size=4).filter(
        lambda s: int(np.prod(s)) <= 40000),
    data=st.data(),
)
def test_float_results_are_within_1e3_of_scipy(shape, data):
    ndim = len(shape)
    axes = data.draw(st.one_of(st.none(), st.lists(st.integers(0, ndim - 1), min_size=1,
                                                   max_size=ndim, unique=True)))
    n = ndim if axes is None else len(axes)
    sigma = data.draw(st.lists(st.one_of(st.just(0.0), st.floats(0.3, 20.0)), min_size=n,
                               max_size=n))
    mode = data.draw(st.lists(st.sampled_from(MODES), min_size=n, max_size=n))
    truncate = data.draw(st.sampled_from([4.0, 8.0, 12.0, 2.5]))
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    seed = data.draw(st.integers(0, 2 ** 32 - 1))
    x = np.random.default_rng(seed).random(shape).astype(dtype) * 100 - 30
    got = gblur.gaussian_filter(x, sigma, mode=mode, cval=7.5, truncate=truncate, axes=axes)
    want = ndi.gaussian_filter(x.astype(np.float64), sigma, mode=mode, cval=7.5,
                               truncate=truncate, axes=axes)
    assert got.dtype == x.dtype
    assert rel_error(got, want, x, cval=7.5 if 'constant' in mode else None) < 1e-3


@settings(max_examples=60, deadline=None)
@given(
    dtype=st.sampled_from([np.uint8, np.int8, np.uint16, np.int16, np.int32, np.uint32,
                           np.int64]),
    shape=st.lists(st.integers(2, 50), min_size=2, max_size=3).filter(
        lambda s: int(np.prod(s)) <= 30000),
    sigma=st.floats(0.5, 12.0),
    mode=st.sampled_from(MODES),
    seed=st.integers(0, 2 ** 32 - 1),
)
def test_integer_results_are_rounded_once_from_scipy_float_result(dtype, shape, sigma, mode,
                                                                  seed):
    # 8- and 16-bit outputs: within one level (16-bit ones run scipy's kernel up to sigma 50).
    # Wider types span enough levels for the recursive filter's own error to show (1.5e-4 of
    # the range); scipy's kernel (method='fir') is within one.
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -30000), min(info.max, 60000)
    x = np.random.default_rng(seed).integers(lo, hi, size=shape, endpoint=True).astype(dtype)
    want = np.clip(np.rint(ndi.gaussian_filter(x.astype(np.float64), sigma, mode=mode)),
                   info.min, info.max)
    got = gblur.gaussian_filter(x, sigma, mode=mode)
    assert got.dtype == x.dtype
    span = float(np.ptp(x.astype(np.float64)))
    allowed = 1 if info.bits <= 16 else 1 + 1.5e-4 * span
    assert np.abs(got.astype(np.float64) - want).max() <= allowed
    exact = gblur.gaussian_filter(x, sigma, mode=mode, method="fir")
    assert np.abs(exact.astype(np.float64) - want).max() <= 1


@pytest.mark.parametrize("dtype", [np.uint16, np.int16])
def test_sixteen_bit_results_are_within_a_level_of_scipy_at_sigma_half_to_fifty(dtype):
    # Sharp edges of the full range and noise: where the recursive filter is 10-17 levels off.
    info = np.iinfo(dtype)
    rng = np.random.default_rng(21)
    edges = np.full((160, 180), info.min, dtype)
    edges[:, 90:] = info.max
    edges[60:, :40] = info.max
    noise = rng.integers(info.min, info.max, (160, 180), endpoint=True).astype(dtype)
    for x in (edges, noise):
        for sigma in (0.5, 1.5, 2.0, 3.0, 7.5, 20.0, 50.0):
            for mode in ("reflect", "wrap", "constant"):
                want = np.clip(np.rint(ndi.gaussian_filter(x.astype(np.float64), sigma, mode=mode,
                                                           cval=100)), info.min, info.max)
                got = gblur.gaussian_filter(x, sigma, mode=mode, cval=100)
                assert np.abs(got.astype(np.float64) - want).max() <= 1, (sigma, mode)


def test_large_and_small_sigmas_and_output_types():
    rng = np.random.default_rng(4)
    x = rng.random((64, 80)).astype(np.float32)
    for sigma in [0.0005, 0.5, 1.9, 2.0, 50.0, 300.0]:
        for mode in MODES:
            want = ndi.gaussian_filter(x.astype(np.float64), sigma, mode=mode)
            assert rel_error(gblur.gaussian_filter(x, sigma, mode=mode), want, x) < 1e-3
    u = (x * 255).astype(np.uint8)
    out = gblur.gaussian_filter(u, 3.0, output=np.float32)
    want = ndi.gaussian_filter(u.astype(np.float64), 3.0)
    assert out.dtype == np.float32 and rel_error(out, want, u) < 1e-3
    out = gblur.gaussian_filter(x * 255, 3.0, output=np.uint8)
    assert np.abs(out.astype(float) - np.rint(ndi.gaussian_filter(x * 255.0, 3.0))).max() <= 1
    c = x + 1j * rng.random((64, 80))
    np.testing.assert_allclose(gblur.gaussian_filter(c, 2.5), ndi.gaussian_filter(c, 2.5),
                               atol=1e-3)
    big_endian = x.astype(">f4")
    np.testing.assert_allclose(gblur.gaussian_filter(big_endian, 2.5),
                               gblur.gaussian_filter(x, 2.5), atol=1e-6)
    strided = np.asfortranarray(x)[::2, ::3]
    np.testing.assert_allclose(gblur.gaussian_filter(strided, 2.5),
                               gblur.gaussian_filter(np.ascontiguousarray(strided), 2.5))
    assert gblur.gaussian_filter(np.zeros((0, 5), np.float32), 2.0).shape == (0, 5)


@pytest.mark.parametrize("sigma", [1.0, 3.0, 8.0])
@pytest.mark.parametrize("order", [0, 1])
def test_a_nan_spoils_its_kernels_footprint_as_in_scipy(sigma, order):
    # scipy: the outputs whose kernel holds the NaN (2r+1 squared of them), no others.
    x = np.random.default_rng(7).random((120, 150))
    x[60, 70] = np.nan
    for mode in ("reflect", "nearest", "wrap"):
        got = gblur.gaussian_filter(x, sigma, order, mode=mode)
        want = ndi.gaussian_filter(x, sigma, order, mode=mode)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        finite = ~np.isnan(want)
        scale = np.ptp(want[finite])
        # Beyond scipy's cut the recursive filter still weighs the NaN (taken as 0), by under
        # 1e-3 of the kernel, as it weighs any sample there.
        assert np.abs(got[finite] - want[finite]).max() <= 1e-3 * scale, mode
