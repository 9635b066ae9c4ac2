"""gblur.dask on a Dask LocalCluster of several worker processes: chunked results agree with
the in-memory filter within its accuracy budget, and with scipy within 1e-3."""

import numpy as np
import pytest
import scipy.ndimage as ndi

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import gblur
import gblur.dask


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.mark.parametrize("mode", ["reflect", "nearest", "mirror", "wrap", "constant"])
def test_chunks_agree_with_the_whole_array(client, mode):
    rng = np.random.default_rng(7)
    x = rng.random((96, 80, 24)).astype(np.float32)
    darr = da.from_array(x, chunks=(32, 40, 12))
    sigma = (3.0, 5.0, 1.5)
    got = gblur.dask.gaussian_filter(darr, sigma, mode=mode, cval=0.25).compute()
    whole = gblur.gaussian_filter(x, sigma, mode=mode, cval=0.25)
    assert got.dtype == x.dtype and got.shape == x.shape
    assert np.abs(got - whole).max() < 2e-4
    want = ndi.gaussian_filter(x.astype(np.float64), sigma, mode=mode, cval=0.25)
    assert np.abs(got - want).max() < 1e-3


def test_small_chunks_large_sigma_and_integers(client):
    rng = np.random.default_rng(8)
    x = (rng.random((120, 90)) * 255).astype(np.uint8)
    darr = da.from_array(x, chunks=(30, 30))
    got = gblur.dask.gaussian_filter(darr, 9.0).compute()
    assert got.dtype == np.uint8
    assert np.abs(got.astype(int) - gblur.gaussian_filter(x, 9.0)).max() <= 1
    one_axis = gblur.dask.gaussian_filter(darr, (0, 4.0)).compute()
    assert np.abs(one_axis.astype(int) - gblur.gaussian_filter(x, (0, 4.0))).max() <= 1
    with pytest.raises(NotImplementedError):
        gblur.dask.gaussian_filter(darr, 2.0, order=1)
