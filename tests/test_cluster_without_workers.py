"""A fit on a cluster that cannot take its data (no workers, or a worker dying as the data are sent) ends in
dkernel's words, not in Dask's ``TimeoutError: No valid workers found`` or ``CommClosedError``."""

import time

import dask
import numpy as np
import pytest
from distributed import Client, LocalCluster
from distributed.comm.core import CommClosedError

import dkernel
from dkernel._runtime.client import scatter
from dkernel.exceptions import ClusterStalledError


def test_a_fit_on_a_cluster_scaled_to_no_workers_says_so():
    X = np.random.default_rng(0).normal(size=(200, 4))
    y = (X[:, 0] > 0).astype(int)
    with dask.config.set({"dkernel.stall-timeout": "3s"}), \
            LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                         host="127.0.0.1") as cluster, Client(cluster) as client:
        cluster.scale(0)
        deadline = time.monotonic() + 30
        while client.scheduler_info(n_workers=-1)["workers"] and time.monotonic() < deadline:
            time.sleep(0.1)
        start = time.monotonic()
        with pytest.raises(ClusterStalledError, match="no worker accepted the data in 3.00 s and the cluster has "
                                                      "no workers now"):
            dkernel.SVC(client=client).fit(X, y)
        assert time.monotonic() - start < 25  # the stall timeout, not distributed's 30 s and its TimeoutError


class _DyingWorkerClient:
    """A client whose one worker is running, and whose connection closes as data are sent."""

    def scatter(self, data, **options):
        raise CommClosedError("in <TCP (closed) ConnectionPool.scatter>: Stream is closed")

    def scheduler_info(self, n_workers=-1):
        return {"workers": {"tcp://127.0.0.1:1": {"status": "running"}}}


def test_a_connection_closed_while_the_data_are_sent_is_said_in_words():
    with pytest.raises(RuntimeError, match=r"a worker's connection closed while the data were sent to it "
                                           r"\(CommClosedError\): a worker restarted for going over its "
                                           r"memory_limit dies this way") as raised:
        scatter(_DyingWorkerClient(), [np.zeros(3)])
    assert isinstance(raised.value.__cause__, CommClosedError)
