"""The Gaussian family against scipy.ndimage and scikit-image: derivatives of order 0, 1 and 2
per axis, gradient magnitude, Laplacian of Gaussian, difference of Gaussians and skimage's
``gaussian``, on random shapes, modes, sigmas and dtypes.

gblur's recursive derivatives (sigma 2 and up) follow the whole sampled derivative; scipy's
default ``truncate=4`` cuts the derivative kernels where they still weigh 1.3e-3 (first) and
5e-3 (second) of their peak. The reference is therefore scipy with each axis's kernel cut
where gblur cuts it: at scipy's own radius where gblur runs that FIR (sigma under 2), and at
10 sigma, where nothing of the kernel is left, where gblur runs the recursive filter.
"""

import numpy as np
import pytest
import scipy.ndimage as ndi
from hypothesis import given, settings, strategies as st

import gblur

MODES = ["reflect", "nearest", "mirror", "wrap", "constant"]


def reference_radius(sigmas, truncate=4.0):
    """Per axis, the radius of scipy's kernel that matches what gblur runs."""
    return [int(truncate * s + 0.5) if s < 2 else int(10 * s + 0.5) for s in sigmas]


def range_error(got, want, data, sigma=(), order=(), cval=None):
    """Largest difference relative to the result's range, less float32's arithmetic on the
    data's magnitude (1e-5 of it: the filter runs in float32).

    Where the result is nearly flat (a tiny array under a wide periodic blur, a derivative of a
    near-constant region), its own range is no scale at all: there the range counts as at
    least 5% of what such a filter can make of this data, the data's range divided by
    sigma^order along each axis with a derivative. A blur with no derivative keeps
    gaussian_filter's contract: the data's range (with ``cval``, the value beyond the edges
    in mode 'constant')."""
    data = data.astype(np.float64).ravel()
    if cval is not None:
        data = np.append(data, cval)
    worst = float(np.abs(got.astype(np.float64) - want).max())
    floor = 1e-5 * float(np.abs(data).max())
    natural = float(np.ptp(data)) * np.prod([s ** -o for s, o in zip(sigma, order) if s and o])
    smoothing = not any(o for s, o in zip(sigma, order) if s)
    span = (float(np.ptp(data)) if smoothing else max(float(np.ptp(want)), 0.05 * natural))
    span = span or 1.0
    return max(worst - floor, 0.0) / span


@st.composite
def cases(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 40), min_size=rank, max_size=rank)))
    sigma = draw(st.lists(st.sampled_from([0.0, 0.7, 1.5, 2.0, 3.3, 7.0, 18.0]),
                          min_size=rank, max_size=rank))
    order = draw(st.lists(st.integers(0, 2), min_size=rank, max_size=rank))
    mode = draw(st.sampled_from(MODES))
    dtype = draw(st.sampled_from([np.float32, np.float64, np.uint8, np.uint16, np.int16]))
    seed = draw(st.integers(0, 2**31))
    return shape, sigma, order, mode, dtype, seed


def random_data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.random(shape) * 200
    # A step and a slope across the first axis: edges and ramps for the derivatives.
    x += 50 * (np.indices(shape)[0] > shape[0] // 2) + 3 * np.indices(shape)[0]
    return x.astype(dtype)


@settings(max_examples=150, deadline=None)
@given(cases())
def test_derivatives_per_axis_follow_scipy(case):
    shape, sigma, order, mode, dtype, seed = case
    x = random_data(shape, dtype, seed)
    got = gblur.gaussian_filter(x, sigma, order, output=np.float64, mode=mode, cval=5.0)
    want = ndi.gaussian_filter(x.astype(np.float64), sigma, order, mode=mode, cval=5.0,
                               radius=reference_radius(sigma))
    cval = 5.0 if mode == "constant" else None
    assert range_error(got, want, x, sigma, order, cval) <= 1e-3, (shape, sigma, order, mode,
                                                                   dtype)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("order", [1, 2])
def test_gaussian_filter1d_orders(mode, order):
    x = random_data((3, 500), np.float32, 5)
    for sigma in (1.0, 2.5, 12.0, 60.0):
        got = gblur.gaussian_filter1d(x, sigma, axis=-1, order=order, mode=mode)
        assert got.dtype == np.float32
        want = ndi.gaussian_filter1d(x.astype(np.float64), sigma, axis=-1, order=order,
                                     mode=mode, radius=reference_radius([sigma])[0])
        assert range_error(got, want, x) <= 1e-3, (sigma, mode, order)


def test_a_ramp_has_its_slope_and_a_parabola_its_curvature():
    ramp = np.tile(np.arange(200, dtype=np.float64) * 0.25, (5, 1))
    d = gblur.gaussian_filter1d(ramp, 6.0, order=1, mode="nearest")
    np.testing.assert_allclose(d[:, 60:140], 0.25, rtol=1e-5)
    parabola = (np.arange(200.0) - 100) ** 2
    c = gblur.gaussian_filter1d(parabola, 6.0, order=2)
    np.testing.assert_allclose(c[60:140], 2.0, rtol=1e-4)


@pytest.mark.parametrize("mode", ["reflect", "nearest", ("wrap", "constant")])
@pytest.mark.parametrize("sigma", [1.0, 2.0, 5.0, 20.0])
def test_gradient_magnitude_and_laplace_follow_scipy(mode, sigma):
    x = random_data((70, 90), np.float32, 11)
    radius = reference_radius([sigma])[0]
    got = gblur.gaussian_gradient_magnitude(x, sigma, mode=mode)
    assert got.dtype == np.float32
    want = ndi.gaussian_gradient_magnitude(x.astype(np.float64), sigma, mode=mode,
                                           radius=radius)
    assert range_error(got, want, x) <= 1e-3
    got = gblur.gaussian_laplace(x, sigma, mode=mode)
    want = ndi.gaussian_laplace(x.astype(np.float64), sigma, mode=mode, radius=radius)
    assert range_error(got, want, x) <= 1e-3


def test_laplace_along_some_axes_and_integer_outputs():
    x = random_data((12, 30, 40), np.uint16, 3)
    got = gblur.gaussian_laplace(x, [3.0, 4.0], axes=(1, 2), output=np.float64)
    want = ndi.gaussian_laplace(x.astype(np.float64), [3.0, 4.0], axes=(1, 2),
                                radius=[0] + reference_radius([3.0, 4.0]))
    assert range_error(got, want, x) <= 1e-3
    # An integer output holds the float result rounded once and clipped.
    as_int = gblur.gaussian_gradient_magnitude(x, 3.0)
    assert as_int.dtype == np.uint16
    exact = gblur.gaussian_gradient_magnitude(x, 3.0, output=np.float64)
    assert np.abs(as_int - np.rint(exact)).max() <= 1


def test_gradient_magnitude_into_its_own_input():
    x = random_data((40, 50), np.float32, 8)
    want = gblur.gaussian_gradient_magnitude(x, 3.0)
    got = gblur.gaussian_gradient_magnitude(x, 3.0, output=x)
    assert got is x
    np.testing.assert_array_equal(got, want)


def test_difference_of_gaussians_and_gaussian_follow_skimage():
    skf = pytest.importorskip("skimage.filters")
    rng = np.random.default_rng(4)
    img = (rng.random((60, 80, 3)) * 255).astype(np.uint8)
    for low, high, axis in ((2.0, None, -1), (1.0, 4.0, -1), ([2.0, 3.0], [4.0, 6.0], 2)):
        got = gblur.difference_of_gaussians(img, low, high, channel_axis=axis)
        want = skf.difference_of_gaussians(img, low, high, channel_axis=axis)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.abs(got - want).max() <= 1e-3 * np.ptp(want)
    for image in (img, img.astype(np.int16), img.astype(np.float16), img.astype(np.float32)):
        for preserve in (False, True):
            got = gblur.gaussian(image, 3.0, channel_axis=-1, preserve_range=preserve)
            want = skf.gaussian(image, sigma=3.0, channel_axis=-1, preserve_range=preserve)
            assert got.dtype == want.dtype, image.dtype
            assert np.abs(got - want).max() <= 1e-3 * (np.ptp(want) or 1)


def test_a_kernel_of_one_sample_is_scipys_single_tap():
    # sigma under 0.001, or radius 0: the Gaussian is the identity there, its first
    # derivative 0 and its second -x / sigma**2, as scipy's one-tap kernels are.
    x = random_data((20, 30), np.float64, 1)
    for sigma, order, radius in (((1e-4, 2.0), (1, 0), None), ((1e-4, 2.0), (2, 1), None),
                                 ((3.0, 2.0), (2, 0), [0, 4]), ((3.0, 2.0), (1, 1), [0, 4])):
        got = gblur.gaussian_filter(x, sigma, order, radius=radius)
        want = ndi.gaussian_filter(x, sigma, order, radius=radius)
        assert np.abs(got - want).max() <= 1e-3 * (np.ptp(want) or 1), (sigma, order, radius)


def test_integer_and_complex_inputs_and_an_output_that_is_the_input():
    # An int16 saddle: its Laplacian is 0 and each axis's part +-3.9; rounded once, not per axis.
    saddle = np.add.outer(np.arange(30.0) ** 2, -np.arange(40.0) ** 2).astype(np.int16)
    assert gblur.gaussian_laplace(saddle, 3.0)[15, 20] == 0
    rng = np.random.default_rng(3)
    c = rng.random((30, 40)) + 1j * rng.random((30, 40))
    for fn in (gblur.gaussian_laplace, gblur.gaussian_gradient_magnitude):
        want = getattr(ndi, fn.__name__)(c, 3.0, truncate=10)
        assert np.abs(fn(c, 3.0) - want).max() <= 1e-3 * np.abs(want).max()
        x = rng.random((30, 40))
        want = getattr(ndi, fn.__name__)(x, 3.0, truncate=10)
        assert np.abs(fn(x, 3.0, output=x) - want).max() <= 1e-3 * np.ptp(want)


def test_orders_outside_0_to_2_are_refused():
    x = np.zeros((8, 8), np.float32)
    with pytest.raises(ValueError, match="order 0, 1 and 2"):
        gblur.gaussian_filter(x, 2.0, order=3)
    with pytest.raises(ValueError, match="non-negative"):
        gblur.gaussian_filter(x, 2.0, order=[0, -1])
    with pytest.raises(ValueError, match="skimage|high_sigma"):
        gblur.difference_of_gaussians(x, 3.0, 2.0)


def test_derivatives_through_dask(client):
    da = pytest.importorskip("dask.array")
    import gblur.dask

    x = random_data((90, 70), np.float32, 9)
    d = da.from_array(x, chunks=(25, 30))
    for sigma, order in ((3.0, (1, 0)), (6.0, (2, 1)), (1.5, (0, 2))):
        got = gblur.dask.gaussian_filter(d, sigma, order, mode="nearest").compute()
        want = gblur.gaussian_filter(x, sigma, order, mode="nearest")
        assert np.abs(got - want).max() <= 1e-4 * (np.ptp(want) + 1)
    got = gblur.dask.gaussian_gradient_magnitude(d, 4.0).compute()
    want = gblur.gaussian_gradient_magnitude(x, 4.0)
    assert np.abs(got - want).max() <= 1e-4 * np.ptp(want)
    got = gblur.dask.gaussian_laplace(d, 4.0).compute()
    want = gblur.gaussian_laplace(x, 4.0)
    assert np.abs(got - want).max() <= 1e-4 * np.ptp(want)
    # Along some axes, a mode per axis, and an integer input's own dtype.
    got = gblur.dask.gaussian_laplace(d, 4.0, axes=(0,)).compute()
    want = gblur.gaussian_laplace(x, 4.0, axes=(0,))
    assert np.abs(got - want).max() <= 1e-4 * np.ptp(want)
    u = (x * 100).astype(np.uint16)
    got = gblur.dask.gaussian_gradient_magnitude(da.from_array(u, chunks=(25, 30)), 3.0,
                                                 mode=("wrap", "nearest")).compute()
    assert got.dtype == np.uint16
    want = gblur.gaussian_gradient_magnitude(u, 3.0, mode=("wrap", "nearest"))
    assert np.abs(got.astype(int) - want).max() <= 1
    with pytest.raises(ValueError, match="unique"):
        gblur.dask.gaussian_laplace(d, 4.0, axes=(0, 0))


def test_derivatives_on_an_opencl_device_match_the_host():
    x = random_data((30, 40, 24), np.float32, 2)
    x[10, 20, 5] = np.nan
    for order, mode in [((1, 2, 0), "reflect"), ((0, 1, 1), "constant"), (2, "wrap")]:
        want = gblur.gaussian_filter(x, (1.5, 3.0, 2.5), order=order, mode=mode, cval=0.5)
        got = gblur.gaussian_filter(
            x, (1.5, 3.0, 2.5), order=order, mode=mode, cval=0.5, device="cpu"
        )
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        finite = np.isfinite(want)
        span = np.ptp(want[finite])
        assert np.abs(got[finite] - want[finite]).max() <= 1e-3 * span, order
    got = gblur.gaussian_laplace(x[..., 0], 3.0, device="cpu")
    want = gblur.gaussian_laplace(x[..., 0], 3.0)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
