"""The randomized eigensolver on worker processes: inputs sent once per fit, results equal to the in-process path."""

import cloudpickle
import numpy as np
import pytest

from dkernel import KernelGram, RBFKernel
from dkernel.alignment import top_eigenpairs
from dkernel.alignment._spectrum import gram_product
from dkernel.gram import source_dask

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        yield client


def _graph_bytes(array):
    """The size of the pickled task graph that computing ``array`` sends to the scheduler."""
    return len(cloudpickle.dumps(dict(array.__dask_graph__())))


@pytest.mark.parametrize("in_memory", [False, True], ids=["lazy-kernel-gram", "ndarray"])
def test_a_pass_at_n_20000_sends_only_its_random_matrix(client, in_memory):
    X = np.random.default_rng(0).normal(size=(20000, 10))
    source = KernelGram(X, "rbf", gamma=0.1, chunk=5000)
    if in_memory:  # an in-memory Gram, 20000 × 20000 would not fit here: the same size of blocks from 4000 rows
        X = X[:4000]
        source = RBFKernel(gamma=0.1).block(X, X, symmetric=True).astype(np.float64)
    K = source_dask(source, client)
    Q = np.random.default_rng(1).normal(size=(len(X), 30))
    # Each pass sends Q (queued on the workers, see gram_product) and nothing of the Gram's inputs.
    assert _graph_bytes(gram_product(K, Q, client)) < Q.nbytes + 100_000
    assert _graph_bytes(gram_product(K, 2 * Q, client)) < Q.nbytes + 100_000  # a second pass: the same


@pytest.mark.parametrize("kind", ["lazy-kernel-gram", "ndarray", "zarr-store"])
def test_randomized_passes_on_workers_equal_the_in_process_path(client, kind, tmp_path):
    from dkernel import GramMatrix

    X = np.random.default_rng(2).normal(size=(1500, 5))
    source = KernelGram(X, "rbf", gamma=0.2, chunk=400)
    if kind == "ndarray":
        source = source.to_numpy()
    elif kind == "zarr-store":
        source = GramMatrix.compute(X, kernel="rbf", gamma=0.2, store=tmp_path / "K.zarr", chunk=400, progress=False)
    local = top_eigenpairs(source, 12, method="randomized", random_state=3, client=False)
    remote = top_eigenpairs(source, 12, method="randomized", random_state=3, client=client)
    np.testing.assert_allclose(remote.values, local.values, rtol=0, atol=1e-10 * local.values[0])
    np.testing.assert_allclose(np.abs(np.sum(remote.vectors * local.vectors, axis=0)), 1.0, atol=1e-10)
