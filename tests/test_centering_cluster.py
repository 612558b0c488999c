"""Origin products and alignments on a cluster: the local numbers, small tasks, bounded worker memory."""

import os

import cloudpickle
import numpy as np
import pytest

from dkernel import GramMatrix, KernelGram
from dkernel._runtime.memory import peak_memory, reset_peak_memory
from dkernel._runtime.client import start_local_cluster
from dkernel.alignment import sampled_target_alignment, target_alignment
from dkernel.centering import Centering, origin_products

GAMMA = 0.2


@pytest.fixture(scope="module")
def cluster_client():
    """Two one-thread worker processes limited to 1 GB each, bound to 127.0.0.1."""
    cluster, client = start_local_cluster(n_workers=2, threads_per_worker=1, memory_limit="1GB")
    with cluster, client:
        yield client


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 5))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=1500) > 0.3, 1, -1)
    return X, y


@pytest.fixture(scope="module")
def sources(problem, tmp_path_factory):
    X, _ = problem
    store = tmp_path_factory.mktemp("gram") / "K.zarr"
    gram = GramMatrix.compute(X, kernel="rbf", gamma=GAMMA, chunk=400, store=store, client=False, progress=False)
    return {"kernel": KernelGram(X, "rbf", gamma=GAMMA, chunk=400), "store": gram}


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)


@pytest.mark.parametrize("kind", ["kernel", "store"])
@pytest.mark.parametrize("sampled", [True, False], ids=["sampled", "exact"])
def test_origin_products_on_the_cluster_equal_the_local_ones(problem, sources, cluster_client, kind, sampled):
    _, y = problem
    centering = Centering.sampled(y, 300, random_state=1) if sampled else Centering.class_balanced(y)
    h_local, h0_local = origin_products(sources[kind], centering, client=False)
    h, h0 = origin_products(sources[kind], centering, client=cluster_client)
    _close(h, h_local)
    _close(h0, h0_local)
    # And the local path still agrees with the dense definition (eqs. 17-18).
    K = sources["kernel"].to_numpy()
    gamma = centering.dense()
    _close(h_local, K @ gamma)


@pytest.mark.parametrize("kind", ["kernel", "store"])
def test_alignments_on_the_cluster_equal_the_local_ones(problem, sources, cluster_client, kind):
    _, y = problem
    source = sources[kind]
    _close(target_alignment(source, y, client=cluster_client), target_alignment(source, y, client=False))
    local = sampled_target_alignment(source, y, 200, n_repeats=3, random_state=2, client=False)
    remote = sampled_target_alignment(source, y, 200, n_repeats=3, random_state=2, client=cluster_client)
    _close([remote.value, remote.stderr], [local.value, local.stderr])


def test_a_default_client_is_used_when_none_is_given(problem, sources, cluster_client):
    from distributed import get_task_stream

    _, y = problem
    centering = Centering.sampled(y, 100, random_state=0)
    with cluster_client.as_current(), get_task_stream(cluster_client) as stream:
        origin_products(sources["kernel"], centering)
    assert any("block_products" in str(task["key"]) for task in stream.data)
    with cluster_client.as_current(), get_task_stream(cluster_client) as stream:
        origin_products(sources["kernel"], centering, client=False)
    assert not stream.data


class _GraphRecorder:
    """Wraps ``client.compute`` to record the size of every task it is given, pickled."""

    def __init__(self, client):
        self.client, self.compute, self.sizes = client, client.compute, {}

    def __call__(self, collections, *args, **kwargs):
        for collection in collections:
            for key, task in dict(collection.__dask_graph__()).items():
                self.sizes[key] = len(cloudpickle.dumps(task))
        return self.compute(collections, *args, **kwargs)


@pytest.mark.parametrize("kind", ["kernel", "store"])
def test_tasks_carry_small_arguments(problem, sources, cluster_client, kind, monkeypatch):
    """X, X_S, γ and t are scattered once, for the sampled and the exact passes; no task carries more than its block bounds and sample indices."""
    _, y = problem
    source = sources[kind]
    recorder = _GraphRecorder(cluster_client)
    monkeypatch.setattr(cluster_client, "compute", recorder)
    centering = Centering.sampled(y, 600, random_state=1)  # 600 weights, X_S of 24 kB
    origin_products(source, centering, client=cluster_client)
    sampled_target_alignment(source, y, 600, n_repeats=2, random_state=2, client=cluster_client)
    origin_products(source, Centering.standard(len(y)), client=cluster_client)  # exact: one pass over all columns
    target_alignment(source, y, client=cluster_client)
    assert recorder.sizes
    largest = max(recorder.sizes, key=recorder.sizes.get)
    assert recorder.sizes[largest] < 4096, f"task {largest} pickles to {recorder.sizes[largest]} bytes"


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux /proc")
def test_sampled_h_at_scale_keeps_worker_memory_bounded(cluster_client):
    """n = 200000, n' = 1000: K(X, X_S) would take 1.6 GB, more than a worker's 1 GB limit."""
    n, d, n_sample = 200_000, 8, 1000
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.3, 1, -1)
    source = KernelGram(X, "rbf", gamma=0.1)
    centering = Centering.sampled(y, n_sample, random_state=4)
    origin_products(KernelGram(X[:4096], "rbf", gamma=0.1),  # warm up the workers: imports, numba
                    Centering.sampled(y[:4096], 10, random_state=0), client=cluster_client)
    baseline = cluster_client.run(reset_peak_memory)
    h, h0 = origin_products(source, centering, client=cluster_client)
    peaks = cluster_client.run(peak_memory)
    block_bytes = source.chunks[0] * n_sample * 8  # 16 MB
    cross_bytes = n * n_sample * 8  # 1.6 GB: K(X, X_S) held whole
    for worker, peak in peaks.items():
        assert peak < 600e6, f"{worker}: peak RSS {peak / 1e6:.0f} MB with a 1 GB limit"
        growth = peak - baseline[worker]
        # X arrives once; a few blocks per thread are in flight (kernel, distances, the
        # allocator's slack): far below the 1.6 GB of the whole cross kernel.
        bound = X.nbytes + 15 * block_bytes  # 253 MB (219 MB seen beside the rest of the suite)
        assert bound < cross_bytes / 6
        assert growth < bound, f"{worker}: peak RSS grew by {growth / 1e6:.0f} MB"
    rows = rng.choice(n, 50, replace=False)
    expected = source.cross(X[rows], columns=centering.indices) @ centering.weights
    _close(h[rows], expected)
    _close(h0, centering.weights @ source.principal_submatrix(centering.indices) @ centering.weights)
