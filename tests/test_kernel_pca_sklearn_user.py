"""KernelPCA used as scikit-learn's: a kernel function on pairs of samples, ``kernel="cosine"``, ``y`` ignored, the
solver ``"auto"`` picks, ``gamma=0`` and a real ``degree``, ``gamma_``, ARPACK asked for every component, rounding
taken for components, and the saving of models of a kernel function and of a precomputed Gram."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.decomposition import KernelPCA as SklearnKernelPCA
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.utils._param_validation import InvalidParameterError

from dkernel.decomposition import KernelPCA
import dkernel.decomposition._steps as _steps
from dkernel.kernels import RBFKernel


def _data(n=80, d=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) * np.linspace(2.0, 0.5, d)


def _pair_rbf(x, y):
    """scikit-learn's callable kernel: two samples (1-D rows) in, one number out."""
    return np.exp(-0.5 * np.sum((x - y) ** 2))


def _same_up_to_sign(a, b, atol):
    signs = np.sign(np.sum(a * b, axis=0))
    np.testing.assert_allclose(a * signs, b, rtol=0, atol=atol)


# --------------------------------------------------------------------------- a kernel function
def test_a_kernel_function_is_called_on_pairs_of_samples_as_by_scikit_learn():
    X = _data()
    ours = KernelPCA(3, kernel=_pair_rbf, fit_inverse_transform=True, client=False).fit(X)
    theirs = SklearnKernelPCA(3, kernel=_pair_rbf, fit_inverse_transform=True).fit(X)
    np.testing.assert_allclose(ours.eigenvalues_, theirs.eigenvalues_, rtol=1e-10)
    _same_up_to_sign(ours.transform(X[:10]), theirs.transform(X[:10]), 1e-10)
    Z = theirs.transform(X[:6])
    signs = np.sign(np.sum(ours.eigenvectors_ * theirs.eigenvectors_, axis=0))
    np.testing.assert_allclose(ours.inverse_transform(Z * signs), theirs.inverse_transform(Z), rtol=0, atol=1e-10)
    # The same numbers as the kernel object of this function.
    by_object = KernelPCA(3, kernel=RBFKernel(gamma=0.5), client=False).fit(X)
    np.testing.assert_allclose(ours.transform(X[:10]), by_object.transform(X[:10]), rtol=0, atol=1e-10)


def test_kernel_params_reach_a_kernel_function_of_pairs():
    X = _data()
    params = {"width": 2.0}
    kernel = lambda x, y, width=1.0: np.exp(-np.sum((x - y) ** 2) / width)  # noqa: E731
    ours = KernelPCA(3, kernel=kernel, kernel_params=params, eigen_solver="arpack", random_state=0,
                     client=False).fit(X)
    theirs = SklearnKernelPCA(3, kernel=kernel, kernel_params=params, eigen_solver="arpack", random_state=0).fit(X)
    _same_up_to_sign(ours.transform(X[:10]), theirs.transform(X[:10]), 1e-8)


def test_a_kernel_function_of_pairs_is_evaluated_on_the_workers():
    distributed = pytest.importorskip("distributed")
    X = _data(300)
    kernel = lambda x, y: np.exp(-0.5 * np.sum((x - y) ** 2))  # noqa: E731  (sent to the workers by value)
    settings = dict(n_components=3, kernel=kernel, eigen_solver="randomized", random_state=0)
    local = KernelPCA(**settings, client=False).fit(X)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        remote = KernelPCA(**settings, client=client).fit(X)
    np.testing.assert_allclose(remote.eigenvalues_, local.eigenvalues_, rtol=1e-10)
    np.testing.assert_allclose(remote.transform(X[:5]), local.transform(X[:5]), rtol=0, atol=1e-8)


def test_a_model_of_a_kernel_function_is_refused_once_without_a_warning(tmp_path):
    model = KernelPCA(2, kernel=_pair_rbf, client=False).fit(_data(30))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"Python function .* cannot be saved") as refusal:
            model.save(tmp_path / "k.zarr")
    assert "stored as None" not in str(refusal.value)
    assert not (tmp_path / "k.zarr").exists()


# --------------------------------------------------------------------------- cosine
@pytest.mark.parametrize("solver", ["dense", "arpack"])
def test_the_cosine_kernel_equals_scikit_learns(solver):
    X = np.abs(_data(250)) + 0.1
    ours = KernelPCA(4, kernel="cosine", eigen_solver=solver, random_state=0, client=False)
    theirs = SklearnKernelPCA(4, kernel="cosine", eigen_solver=solver, random_state=0)
    np.testing.assert_allclose(ours.fit_transform(X), theirs.fit_transform(X), rtol=0, atol=1e-10)
    np.testing.assert_allclose(ours.transform(X[:7] * 3), theirs.transform(X[:7] * 3), rtol=0, atol=1e-10)


def test_the_cosine_kernel_takes_sparse_data_and_is_saved(tmp_path):
    X = sp.random(60, 20, density=0.3, random_state=0, format="csr")
    ours = KernelPCA(3, kernel="cosine", client=False).fit(X)
    theirs = SklearnKernelPCA(3, kernel="cosine").fit(X)
    np.testing.assert_allclose(ours.transform(X[:5]), theirs.transform(X[:5]), rtol=0, atol=1e-10)
    loaded = KernelPCA.load(ours.save(tmp_path / "k.zarr"))
    np.testing.assert_allclose(loaded.transform(X[:5]), ours.transform(X[:5]), rtol=0, atol=1e-12)


def test_svc_keeps_its_kernel_names():
    from dkernel import SVC

    X = _data(20)
    with pytest.raises(InvalidParameterError, match="kernel"):
        SVC(kernel="cosine").fit(X, np.arange(20) % 2)


# --------------------------------------------------------------------------- y
def test_y_is_ignored_unless_the_origin_needs_labels():
    X = _data(60)
    y = X[:, 0] + 0.1 * X[:, 1]
    expected = KernelPCA(2, kernel="rbf", client=False).fit_transform(X)
    for labels in (np.c_[y, y], np.full(60, np.nan), np.zeros(10), ["a"] * 60):
        np.testing.assert_array_equal(KernelPCA(2, kernel="rbf", client=False).fit_transform(X, labels), expected)
    pipe = make_pipeline(KernelPCA(2, kernel="rbf", client=False), Ridge()).fit(X, np.c_[y, y])
    assert pipe.predict(X[:3]).shape == (3, 2)
    # An origin of the classes still reads them, and refuses labels that do not fit.
    with pytest.raises(ValueError, match=r"y has 10 labels"):
        KernelPCA(2, center="class-balanced", client=False).fit(X, np.arange(10) % 2)


# --------------------------------------------------------------------------- the solver of "auto"
def test_auto_holds_the_gram_in_memory_above_5000_samples_while_it_fits(monkeypatch):
    X = np.random.default_rng(0).normal(size=(5001, 2))
    kpca = KernelPCA(2, kernel="rbf", gamma=0.5, client=False).fit(X)
    assert kpca.eigen_solver_ == "arpack"
    reference = KernelPCA(2, kernel="rbf", gamma=0.5, eigen_solver="dense", client=False).fit(X)
    np.testing.assert_allclose(kpca.eigenvalues_, reference.eigenvalues_, rtol=1e-8)
    # Beyond a quarter of the memory available: the out-of-core randomized solver.
    monkeypatch.setattr(_steps, "_available_memory", lambda: 4 * 8 * 5001**2 - 1)
    small = KernelPCA(2, kernel="rbf", gamma=0.5, iterated_power=1, client=False).fit(X[:5001])
    assert small.eigen_solver_ == "randomized"
    assert KernelPCA(2, kernel="rbf", client=False).fit(X[:5000]).eigen_solver_ == "arpack"


@pytest.mark.parametrize("solver", ["dense", "arpack"])
def test_the_in_memory_solvers_evaluate_the_kernel_once(monkeypatch, solver):
    X = _data(300)
    evaluated = []
    real = RBFKernel.block

    def counting(self, A, B, **kwargs):
        evaluated.append(A.shape[0] * B.shape[0])
        return real(self, A, B, **kwargs)

    monkeypatch.setattr(RBFKernel, "block", counting)
    kpca = KernelPCA(4, kernel="rbf", gamma=0.1, eigen_solver=solver, random_state=0, client=False).fit(X)
    assert sum(evaluated) == 300 * 300
    monkeypatch.setattr(RBFKernel, "block", real)
    theirs = SklearnKernelPCA(4, kernel="rbf", gamma=0.1, eigen_solver=solver, random_state=0).fit(X)
    np.testing.assert_allclose(kpca.transform(X[:5]), theirs.transform(X[:5]), rtol=0, atol=1e-10)


# --------------------------------------------------------------------------- parameters
@pytest.mark.parametrize("params", [{"kernel": "rbf", "gamma": 0}, {"kernel": "poly", "gamma": 0},
                                    {"kernel": "sigmoid", "gamma": 0}, {"kernel": "poly", "degree": 2.5},
                                    {"kernel": "poly", "degree": 2.0}, {"kernel": "poly", "degree": 0}])
def test_gamma_zero_and_a_real_degree_are_scikit_learns(params):
    X = np.abs(_data(50))  # positive inner products: a real power of them is defined
    ours = KernelPCA(3, client=False, **params).fit(X)
    theirs = SklearnKernelPCA(3, **params).fit(X)
    assert ours.gamma_ == theirs.gamma_
    scale = max(1.0, float(np.max(theirs.eigenvalues_)))
    np.testing.assert_allclose(ours.eigenvalues_, theirs.eigenvalues_, rtol=0, atol=1e-10 * scale)
    if theirs.eigenvalues_[-1] > 1e-6 * scale:  # projections are defined (no eigenvalue of rounding)
        _same_up_to_sign(ours.transform(X[:5]), theirs.transform(X[:5]), 1e-8)


def test_a_model_of_a_real_degree_round_trips(tmp_path):
    X = np.abs(_data(50))
    model = KernelPCA(3, kernel="poly", degree=2.5, client=False).fit(X)
    loaded = KernelPCA.load(model.save(tmp_path / "k.zarr"))
    np.testing.assert_array_equal(loaded.transform(X[:5]), model.transform(X[:5]))


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly", "sigmoid", "cosine", _pair_rbf])
def test_gamma_is_one_over_the_features_for_every_kernel(kernel):
    X = np.abs(_data(30, d=4)) + 0.1
    assert KernelPCA(2, kernel=kernel, client=False).fit(X).gamma_ == SklearnKernelPCA(2, kernel=kernel).fit(X).gamma_
    assert KernelPCA(2, kernel="precomputed", client=False).fit(X @ X.T).gamma_ == 1 / 30
    assert KernelPCA(2, kernel=kernel, gamma=0.3, client=False).fit(X).gamma_ == 0.3


def test_arpack_asked_for_every_component_uses_lapack_as_scikit_learn():
    X = _data(5)
    with pytest.warns(RuntimeWarning, match=r"n_components=10 asks for 5"):
        ours = KernelPCA(10, eigen_solver="arpack", client=False).fit(X)
    with pytest.warns(RuntimeWarning):
        theirs = SklearnKernelPCA(10, eigen_solver="arpack").fit(X)
    np.testing.assert_allclose(ours.eigenvalues_, theirs.eigenvalues_, rtol=1e-10)
    with pytest.warns(RuntimeWarning, match=r"n_components=None"):
        KernelPCA(eigen_solver="arpack", client=False).fit(X)


@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly", "cosine"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_constant_data_have_no_component(kernel, dtype):
    X = np.full((40, 3), 0.7, dtype=dtype)
    kpca = KernelPCA(kernel=kernel, client=False).fit(X)
    assert kpca.eigenvalues_.shape == (0,)
    assert KernelPCA(kernel=kernel, eigen_solver="randomized", n_components=2, remove_zero_eig=True,
                     client=False).fit(X).eigenvalues_.shape == (0,)


# --------------------------------------------------------------------------- a precomputed Gram
@pytest.mark.parametrize("center", ["standard", None, "class-balanced"])
def test_a_model_of_a_precomputed_gram_keeps_what_transform_needs(tmp_path, center):
    X = _data(60)
    y = np.where(X[:, 0] > 0, 1, -1)
    K = RBFKernel(gamma=0.2)(X)
    model = KernelPCA(3, kernel="precomputed", center=center, client=False).fit(K, y)
    loaded = KernelPCA.load(model.save(tmp_path / "k.zarr"))
    K_new = RBFKernel(gamma=0.2)(_data(7, seed=1), X)
    np.testing.assert_array_equal(loaded.transform(K_new), model.transform(K_new))
    assert loaded.X_fit_ is None
    assert not any(name.startswith("X_fit") for name in _saved_arrays(tmp_path / "k.zarr"))


def _saved_arrays(path):
    import zarr

    return list(zarr.open_group(str(path), mode="r").array_keys())


@pytest.mark.parametrize("solver", ["dense", "arpack"])
def test_a_solver_that_holds_the_gram_is_refused_beyond_the_memory_available(solver, monkeypatch):
    X = np.random.default_rng(3).normal(size=(300, 4))
    monkeypatch.setattr(_steps, "_available_memory", lambda: 8 * 300 * 300 - 1)
    with pytest.raises(MemoryError, match=rf"eigen_solver='{solver}' holds the 300×300 float64 Gram in memory"):
        KernelPCA(n_components=3, eigen_solver=solver).fit(X)
