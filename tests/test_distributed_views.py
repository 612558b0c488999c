"""Centered, normalized and subset views solved on Dask workers (Meilă eq. 14, Graf & Borer eq. 2)."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification

from dkernel import SVC
from dkernel.gram._sources import DenseGram, KernelGram, SubsetGram
from dkernel.centering import Centering
from dkernel.gram import GramMatrix
from dkernel.views import CenteredGram, NormalizedGram

distributed = pytest.importorskip("distributed")

VIEWS = {
    "centered+normalized": dict(centering="standard", normalize=True),
    "centered": dict(centering="standard"),
    "normalized": dict(normalize=True),
    "class-balanced": dict(centering="class-balanced"),
    "sampled": dict(centering="class-balanced", centering_sample=60, random_state=3),
}


@pytest.fixture(scope="module")
def cluster():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                      dashboard_address=None) as local, distributed.Client(local) as client:
            yield client


@pytest.fixture
def client_reads(monkeypatch):
    """Counts the kernel rows read in this process (the workers are other processes)."""
    calls = []
    for cls in (KernelGram, GramMatrix):
        for name in ("rows", "submatrix"):
            original = getattr(cls, name)

            def counted(self, *args, _original=original, **kwargs):
                calls.append(type(self).__name__)
                return _original(self, *args, **kwargs)

            monkeypatch.setattr(cls, name, counted)
    return calls


def _partitions_on_workers(task_stream):
    return {t["worker"] for t in task_stream.data if "GradientPartition" in str(t["key"])}


def _fit_on_cluster(client, X, y, **params):
    with distributed.get_task_stream(client) as stream:
        model = SVC(client=client, **params).fit(X, y)
    return model, _partitions_on_workers(stream)


@pytest.mark.slow
@pytest.mark.parametrize("held", ["store", "kernel"])
@pytest.mark.parametrize("view", list(VIEWS))
def test_views_solve_on_the_workers_as_in_one_process(cluster, client_reads, tmp_path, held, view):
    X, y = make_classification(n_samples=400, n_features=8, flip_y=0.1, random_state=5)
    params = dict(kernel="rbf", gamma=0.05, C=1.0, tol=1e-6, **VIEWS[view])
    single = SVC(client=False, **params).fit(X, y)
    store = None
    if held == "store":
        store = tmp_path / "K.zarr"
        GramMatrix.compute(X, kernel="rbf", gamma=0.05, store=store, client=cluster, progress=False)
    del client_reads[:]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no fallback to this process
        model, workers = _fit_on_cluster(cluster, X, y, store=store, **params)
    assert model.gram_dtype_ == ("store" if store else "on-the-fly")
    assert len(workers) == 2 and client_reads == []
    np.testing.assert_allclose(model.decision_function(X), single.decision_function(X), atol=1e-6)
    np.testing.assert_array_equal(model.support_, single.support_)


@pytest.mark.slow
@pytest.mark.parametrize("held", ["kernel", "dense"])
def test_one_vs_one_subsets_solve_on_the_workers(cluster, client_reads, held):
    X, y = make_classification(n_samples=450, n_features=8, n_informative=5, n_classes=3, random_state=6)
    if held == "kernel":
        params = dict(kernel="rbf", gamma=0.05, centering="class-balanced", normalize=True)
        data = X
    else:  # SubsetGram over an in-memory Gram: each worker gets its column slab
        params = dict(kernel="precomputed", centering="class-balanced")
        data = DenseGram(KernelGram(X, "rbf", gamma=0.05).to_numpy())
    params.update(C=1.0, tol=1e-6)
    single = SVC(client=False, **params).fit(data, y)
    del client_reads[:]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        model, workers = _fit_on_cluster(cluster, data, y, **params)
    assert len(workers) == 2 and client_reads == []
    np.testing.assert_allclose(model.decision_function(data), single.decision_function(data), atol=1e-6)
    np.testing.assert_array_equal(model.support_, single.support_)


@pytest.mark.slow
def test_a_gram_held_by_the_cluster_is_solved_here_with_a_warning(cluster):
    X, y = make_classification(n_samples=200, n_features=6, random_state=7)
    gram = GramMatrix.compute(X, kernel="rbf", gamma=0.1, client=cluster, progress=False)
    single = SVC(kernel="precomputed", centering="standard", client=False).fit(gram.to_numpy(), y)
    with pytest.warns(UserWarning, match="cannot be sent to a worker"):
        model = SVC(kernel="precomputed", centering="standard", client=cluster).fit(gram, y)
    np.testing.assert_allclose(model.decision_function(gram.to_numpy()), single.decision_function(gram.to_numpy()),
                               atol=1e-6)


# ----------------------------------------------------------------- what travels to a worker
def _pickled_size(obj):
    return len(pickle.dumps(obj))


def test_column_slab_of_a_view_over_memory_carries_its_columns_and_n_vectors():
    rng = np.random.default_rng(0)
    n = 600
    X = rng.normal(size=(n, 5))
    K = KernelGram(X, "rbf", gamma=0.2).to_numpy()
    view = CenteredGram(NormalizedGram(K), Centering.standard(n))
    whole = _pickled_size(view)
    slab = view.column_slab(200, 300)
    assert _pickled_size(slab) < 100 * n * 8 + 4 * n * 8 + 10_000 < whole / 3
    idx = np.array([5, 599, 0, 250])
    np.testing.assert_allclose(slab.submatrix(idx, 200, 300), view.rows(idx)[:, 200:300], atol=1e-12)
    np.testing.assert_allclose(pickle.loads(pickle.dumps(slab)).submatrix(idx, 210, 290),
                               view.rows(idx)[:, 210:290], atol=1e-12)


def test_views_over_a_store_or_a_kernel_pickle_in_linear_size(tmp_path):
    rng = np.random.default_rng(1)
    n, d = 1500, 4
    X = rng.normal(size=(n, d))
    stored = GramMatrix.compute(X, kernel="rbf", gamma=0.2, store=tmp_path / "K.zarr", chunk=500, progress=False)
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    for base in (stored, KernelGram(X, "rbf", gamma=0.2)):
        view = CenteredGram(NormalizedGram(base), Centering.class_balanced(y))
        view.rows(np.arange(50))  # fills a KernelGram's row cache, which stays behind
        slab = view.column_slab(0, 700)
        if base is stored:  # a store is read by its path: the view travels as is
            assert slab is view
        else:  # a kernel: a slab of columns with a row cache of its own (empty when it travels)
            assert type(slab.base.base).__name__ == "KernelColumnSlab"
        # The base's spec (X, or the store's path and checksums) and the n-vectors h, γ, diag, 1/sqrt(diag).
        assert _pickled_size(view) < 8 * n * (d + 6) + 50_000
        assert _pickled_size(slab) < 8 * n * (d + 6) + 50_000
        copy = pickle.loads(pickle.dumps(view))
        np.testing.assert_allclose(copy.submatrix([3, 1400], 600, 900), view.rows([3, 1400])[:, 600:900])


def test_subset_reads_only_the_base_columns_of_its_slab():
    rng = np.random.default_rng(2)
    n = 300
    K = KernelGram(rng.normal(size=(n, 3)), "rbf").to_numpy()
    index = np.sort(rng.choice(n, size=120, replace=False))
    subset = SubsetGram(NormalizedGram(DenseGram(K)), index)
    expected = NormalizedGram(K).to_numpy()[np.ix_(index, index)]
    slab = subset.column_slab(40, 80)
    assert slab.base.base.K_cols.shape == (n, index[79] - index[40] + 1)
    idx = np.array([0, 119, 60])
    np.testing.assert_allclose(slab.submatrix(idx, 40, 80), expected[idx, 40:80], atol=1e-12)
    np.testing.assert_allclose(subset.submatrix(idx, 0, 120), expected[idx], atol=1e-12)
