"""Hypothesis profiles: `ci` (what `.ci/run` uses) draws the same examples on every run, with no
time limit per example and no database of earlier failures, so a red CI is reproducible and
never the machine's load; the default draws new ones each time, which is how local runs keep
finding cases. `client`: the Dask cluster the Dask and OME-Zarr tests share."""
import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, database=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session")
def client():
    """A Dask LocalCluster of two single-threaded worker processes, as the tests' cluster."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()
