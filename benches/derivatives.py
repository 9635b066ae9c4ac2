#!/usr/bin/env python3
"""The Gaussian family against its peers, paired in one process: each tool once untimed, then
once a round in turn (the order reversed every other round), medians.

- ``gaussian_gradient_magnitude`` and ``gaussian_laplace`` on float32 4096 x 4096 (a noisy,
  photo-like image) at sigma 5 and 20, mode 'nearest': gblur against scipy.ndimage,
  SimpleITK's recursive filters (``GradientMagnitudeRecursiveGaussian``,
  ``LaplacianRecursiveGaussian``: Deriche's 4th-order filters, ITK's threads) and OpenCV
  (``Sobel`` of a ``GaussianBlur``, and ``Laplacian`` of it: not the Gaussian's derivative
  but what OpenCV users run, float32, OpenCV's threads).
- ``difference_of_gaussians`` (sigma 2 and 3.2), ``structure_tensor`` (sigma 1 and 5) and
  ``hessian_matrix`` (sigma 5, by differences and by Gaussian derivatives) against
  scikit-image's.

Each peer's result is compared with scipy's exact derivative (truncate 10) before timing.

With ``--gpu``, gblur also runs on the first OpenCL GPU (``device="gpu"``: the array up and the
result down through pinned memory, both within the time).

usage: derivatives.py [--size 4096] [--rounds 5] [--sigmas 5,20] [--no-scipy] [--gpu]
"""
import argparse
import os

import numpy as np
import scipy.ndimage as ndi

import gblur
from python_bench import pair, summary


def photo(n, seed=3):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:n, 0:n].astype(np.float32)
    base = 128 + 60 * np.sin(x / 97) + 40 * np.cos(y / 61)
    return (base + rng.normal(0, 18, (n, n))).astype(np.float32)


def report_error(name, got, want):
    if hasattr(got, "GetSize"):  # a SimpleITK image, whose pixels a view would outlive
        import SimpleITK as sitk

        got = sitk.GetArrayFromImage(got)
    err = float(np.abs(np.asarray(got, np.float64) - want).max()) / float(np.ptp(want))
    print(f"    {name:<12} max error {err:.2e} of the result's range")


def peers(kind, img, sigma, with_scipy, gpu):
    """name -> callable for one function at one sigma."""
    tools = {}
    ours = (gblur.gaussian_gradient_magnitude if kind == "gradient magnitude"
            else gblur.gaussian_laplace)
    tools["gblur"] = lambda: ours(img, sigma, mode="nearest")
    if gpu:
        tools["gblur GPU"] = lambda: ours(img, sigma, mode="nearest", device="gpu")
    if kind == "gradient magnitude":
        if with_scipy:
            tools["scipy"] = lambda: ndi.gaussian_gradient_magnitude(img, sigma, mode="nearest")
    else:
        if with_scipy:
            tools["scipy"] = lambda: ndi.gaussian_laplace(img, sigma, mode="nearest")
    try:
        import SimpleITK as sitk

        image = sitk.GetImageFromArray(img)
        f = (sitk.GradientMagnitudeRecursiveGaussianImageFilter() if kind == "gradient magnitude"
             else sitk.LaplacianRecursiveGaussianImageFilter())
        f.SetSigma(sigma)
        f.SetNormalizeAcrossScale(False)
        tools["SimpleITK"] = lambda: f.Execute(image)
    except ImportError:
        print("    (SimpleITK not installed)")
    try:
        import cv2

        k = int(2 * round(4 * sigma) + 1)

        def opencv():
            smooth = cv2.GaussianBlur(img, (k, k), sigma, borderType=cv2.BORDER_REPLICATE)
            if kind == "gradient magnitude":
                gx = cv2.Sobel(smooth, cv2.CV_32F, 1, 0, ksize=1, scale=0.5,
                               borderType=cv2.BORDER_REPLICATE)
                gy = cv2.Sobel(smooth, cv2.CV_32F, 0, 1, ksize=1, scale=0.5,
                               borderType=cv2.BORDER_REPLICATE)
                return cv2.magnitude(gx, gy)
            return cv2.Laplacian(smooth, cv2.CV_32F, ksize=1, borderType=cv2.BORDER_REPLICATE)

        tools["OpenCV"] = opencv
    except ImportError:
        print("    (OpenCV not installed)")
    return tools


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--sigmas", default="5,20")
    p.add_argument("--no-scipy", action="store_true")
    p.add_argument("--gpu", action="store_true")
    a = p.parse_args()
    img = photo(a.size)
    print(f"{os.cpu_count()} CPUs; float32 {a.size}x{a.size}; medians of {a.rounds} paired rounds")
    for kind in ("gradient magnitude", "laplace"):
        for sigma in (float(s) for s in a.sigmas.split(",")):
            title = f"{kind} sigma {sigma:g}"
            print(title)
            exact = (ndi.gaussian_gradient_magnitude if kind == "gradient magnitude"
                     else ndi.gaussian_laplace)(img.astype(np.float64), sigma, mode="nearest",
                                                truncate=10)
            tools = peers(kind, img, sigma, not a.no_scipy, a.gpu)
            for name, fn in tools.items():
                report_error(name, fn(), exact)
            summary(title, pair(tools, a.rounds))
    try:
        import skimage.filters as skf

        tools = {"gblur": lambda: gblur.difference_of_gaussians(img, 2.0, 3.2),
                 "scikit-image": lambda: skf.difference_of_gaussians(img, 2.0, 3.2)}
        print("difference of Gaussians 2 / 3.2")
        summary("difference of Gaussians", pair(tools, a.rounds))
        features(img, a.rounds)
    except ImportError:
        print("(scikit-image not installed)")


def features(img, rounds):
    """scikit-image's second-order features against gblur's."""
    import warnings

    import skimage.feature as skf

    warnings.simplefilter("ignore", FutureWarning)
    for sigma in (1.0, 5.0):
        tools = {"gblur": lambda: gblur.structure_tensor(img, sigma),
                 "scikit-image": lambda: skf.structure_tensor(img, sigma)}
        title = f"structure tensor sigma {sigma:g}"
        print(title)
        summary(title, pair(tools, rounds))
    for derivatives in (False, True):
        kw = dict(use_gaussian_derivatives=derivatives)
        tools = {"gblur": lambda: gblur.hessian_matrix(img, 5.0, **kw),
                 "scikit-image": lambda: skf.hessian_matrix(img, 5.0, **kw)}
        title = f"Hessian sigma 5, {'Gaussian derivatives' if derivatives else 'differences'}"
        print(title)
        summary(title, pair(tools, rounds))


if __name__ == "__main__":
    main()
