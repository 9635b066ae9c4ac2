"""gblur.hessian_matrix and gblur.structure_tensor against scikit-image's: the same elements,
order and dtypes; with method='fir' (scikit-image's own cut kernels) the same values to float
rounding (gblur filters in float32: twice differenced for the Hessian by differences, 2e-4
of its range), in every mode, 2-D and 3-D; by default (the recursive filter, but scipy's kernel
for the Hessian by differences) within 1e-3 of each result's range."""

import warnings

import numpy as np
import pytest

skf = pytest.importorskip("skimage.feature")

import gblur

MODES = ["constant", "reflect", "nearest", "mirror", "wrap"]


def largest_error(got, want):
    assert len(got) == len(want)
    worst = 0.0
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        worst = max(worst, float(np.abs(g.astype(np.float64) - w).max() / max(np.ptp(w), 1e-12)))
    return worst


def skimage_hessian(image, sigma, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return skf.hessian_matrix(image, sigma, **kw)


@pytest.mark.parametrize("mode", MODES)
def test_scipys_kernels_give_scikit_images_values(mode):
    rng = np.random.default_rng(31)
    for shape in [(40, 50), (12, 20, 16)]:
        for dtype in (np.float32, np.float64, np.uint8):
            img = (rng.random(shape) * (255 if dtype == np.uint8 else 1)).astype(dtype)
            for sigma in (0.7, 1.5, 3.0):
                kw = dict(mode=mode, cval=0.3)
                got = gblur.structure_tensor(img, sigma, method="fir", **kw)
                assert largest_error(got, skf.structure_tensor(img, sigma, **kw)) < 1e-5
                for derivatives in (False, True):
                    kw["use_gaussian_derivatives"] = derivatives
                    got = gblur.hessian_matrix(img, sigma, method="fir", **kw)
                    want = skimage_hessian(img, sigma, **kw)
                    # gblur's float32 smoothing (scipy's is float64) differenced twice.
                    budget = 1e-5 if derivatives else 2e-4
                    assert largest_error(got, want) < budget, (shape, dtype, sigma, derivatives)


def photo(seed=32):
    y, x = np.mgrid[0:120, 0:150]
    noise = np.random.default_rng(seed).standard_normal((120, 150))
    return (0.5 + 0.3 * np.sin(x / 9.0) * np.cos(y / 7.0) + 0.05 * noise).astype(np.float32)


@pytest.mark.parametrize("mode", MODES)
def test_the_recursive_filter_is_within_the_accuracy_budget(mode):
    img = photo()
    for sigma in (1.5, 3.0, 6.0):
        got = gblur.structure_tensor(img, sigma, mode=mode)
        assert largest_error(got, skf.structure_tensor(img, sigma, mode=mode)) < 1e-3
        for derivatives, budget in ((True, 1e-3), (False, 2e-4)):
            kw = dict(mode=mode, use_gaussian_derivatives=derivatives)
            got = gblur.hessian_matrix(img, sigma, **kw)
            assert largest_error(got, skimage_hessian(img, sigma, **kw)) < budget, sigma


def test_the_hessian_by_differences_is_scikit_images_on_noise_at_large_sigma():
    # Differences of noise smoothed at sigma 8: where the recursive filter's error would show
    # (7e-3 of the Hessian's range), scipy's kernel runs. (A 3-D array of axes near 3 sigma
    # smooths so far that float32's own rounding, differenced twice, is 1e-3 of the Hessian.)
    rng = np.random.default_rng(33)
    for img in (rng.random((256, 256)), rng.random((256, 256)).astype(np.float32)):
        kw = dict(mode="reflect", use_gaussian_derivatives=False)
        got = gblur.hessian_matrix(img, 8.0, **kw)
        assert largest_error(got, skimage_hessian(img, 8.0, **kw)) < 2e-4


def test_axis_order_and_refusals():
    img = photo()
    for derivatives in (False, True):
        rc = gblur.hessian_matrix(img, 2.0, order="rc", use_gaussian_derivatives=derivatives)
        xy = gblur.hessian_matrix(img, 2.0, order="xy", use_gaussian_derivatives=derivatives)
        # Hxx is Hcc, Hyy is Hrr.
        np.testing.assert_allclose(xy[0], rc[2], atol=1e-6)
        np.testing.assert_allclose(xy[2], rc[0], atol=1e-6)
    assert len(gblur.structure_tensor(np.zeros((6, 7, 8)), 1.0)) == 6
    with pytest.raises(ValueError, match="xy"):
        gblur.hessian_matrix(np.zeros((6, 7, 8)), 1.0, order="xy")
    with pytest.raises(ValueError, match="order"):
        gblur.structure_tensor(img, 1.0, order="yx")
    with pytest.raises(ValueError, match="as many elements"):
        gblur.structure_tensor(img, (1.0, 2.0, 3.0))
    with pytest.raises(ValueError, match="2-, 3-, 4- or 5-dimensional"):
        gblur.structure_tensor(np.zeros(10), 1.0)
