"""KernelPCA: scikit-learn's numbers with the standard origin, Meilă's other origins by their definition, the
randomized solver against the dense one, stores and clusters against memory."""

import numpy as np
import pytest
from sklearn.decomposition import KernelPCA as SklearnKernelPCA
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import check_estimator

from dkernel.centering import Centering, InvalidLabelsError, SampleSizeError, class_balanced_weights
from dkernel.decomposition import KernelPCA
from dkernel.gram import GramMatrix
from dkernel.kernels import get_kernel

KERNELS = {
    "linear": {},
    "rbf": {"gamma": 0.1},
    "poly": {"gamma": 0.2, "degree": 3, "coef0": 1.0},
}


def _data(n, d=6, seed=0):
    rng = np.random.default_rng(seed)
    # Unequal scales give well separated eigenvalues, so that eigenvectors are defined to 1e-8.
    return rng.normal(size=(n, d)) * np.linspace(2.0, 0.5, d)


def _relative(a, b):
    """``max |a - b| / max |b|``."""
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def _dense_reference(K, gamma, k):
    """The top ``k`` eigenpairs of ``K_a = (I - 1γᵀ) K (I - γ1ᵀ)`` (Meilă eq. 14), by hand."""
    n = K.shape[0]
    P = np.eye(n) - np.outer(np.ones(n), gamma)
    values, vectors = np.linalg.eigh(P @ K @ P.T)
    return values[::-1][:k], vectors[:, ::-1][:, :k]


def _against_scikit_learn(kernel, n, n_new, n_components):
    """Eigenvalues, eigenvectors, fit_transform and transform against scikit-learn's dense KernelPCA to 1e-8,
    signs included (svd_flip)."""
    X, X_new = _data(n), _data(n_new, seed=1)
    ours = KernelPCA(n_components=n_components, kernel=kernel, eigen_solver="dense", **KERNELS[kernel])
    theirs = SklearnKernelPCA(n_components=n_components, kernel=kernel, eigen_solver="dense", **KERNELS[kernel])
    Z, Z_ref = ours.fit_transform(X), theirs.fit_transform(X)
    # The linear kernel of 6 features has rank 6: the eigenvectors of its null space are any basis of it.
    keep = theirs.eigenvalues_ > 1e-8 * theirs.eigenvalues_[0]
    np.testing.assert_allclose(ours.eigenvalues_[keep], theirs.eigenvalues_[keep], rtol=1e-8, atol=0)
    assert _relative(Z[:, keep], Z_ref[:, keep]) < 1e-8
    assert _relative(ours.eigenvectors_[:, keep], theirs.eigenvectors_[:, keep]) < 1e-8
    assert _relative(ours.transform(X_new)[:, keep], theirs.transform(X_new)[:, keep]) < 1e-8
    return Z, Z_ref


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_fit_transform_and_transform_equal_scikit_learn_to_1e_8(kernel):
    Z, Z_ref = _against_scikit_learn(kernel, 400, 60, 8)
    assert _relative(Z, Z_ref) < 1e-8  # every component, those of the null space (0 in both) included


@pytest.mark.slow
@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_scikit_learn_numbers_at_n_2000(kernel):
    _against_scikit_learn(kernel, 2000, 100, 20)


@pytest.mark.parametrize("solver", ["arpack", "auto"])
def test_arpack_and_auto_equal_scikit_learn(solver):
    X = _data(300)
    ours = KernelPCA(n_components=4, kernel="rbf", gamma=0.1, eigen_solver=solver, random_state=0)
    theirs = SklearnKernelPCA(n_components=4, kernel="rbf", gamma=0.1, eigen_solver=solver, random_state=0)
    Z, Z_ref = ours.fit_transform(X), theirs.fit_transform(X)
    np.testing.assert_allclose(ours.eigenvalues_, theirs.eigenvalues_, rtol=1e-8, atol=0)
    assert _relative(Z, Z_ref) < 1e-8
    assert ours.eigen_solver_ == "arpack"


def test_all_components_drop_the_null_space_as_scikit_learn():
    X = _data(100)
    ours, theirs = KernelPCA(kernel="linear").fit(X), SklearnKernelPCA(kernel="linear").fit(X)
    assert ours.eigenvalues_.shape == theirs.eigenvalues_.shape == (6,)
    np.testing.assert_allclose(ours.eigenvalues_, theirs.eigenvalues_, rtol=1e-8)
    kept = KernelPCA(n_components=10, kernel="linear", remove_zero_eig=True).fit(X)
    assert kept.eigenvalues_.shape == (6,)
    with_zeros = KernelPCA(n_components=10, kernel="linear").fit(X)
    assert with_zeros.transform(X[:3]).shape == (3, 10)  # components of λ = 0 project to 0, as scikit-learn


def _randomized_against_dense(iterated_power, value_tol, projection_tol):
    X, X_new = _data(1000), _data(50, seed=1)
    dense = KernelPCA(n_components=10, kernel="rbf", gamma=0.1, eigen_solver="dense")
    randomized = KernelPCA(n_components=10, kernel="rbf", gamma=0.1, eigen_solver="randomized",
                           iterated_power=iterated_power, random_state=0, client=False)
    Z, Z_ref = randomized.fit_transform(X), dense.fit_transform(X)
    np.testing.assert_allclose(randomized.eigenvalues_, dense.eigenvalues_, rtol=value_tol, atol=0)
    assert _relative(Z, Z_ref) < projection_tol
    assert _relative(randomized.transform(X_new), dense.transform(X_new)) < projection_tol


def test_randomized_solver_equals_the_dense_one():
    """rbf, n = 1000, k = 10, scikit-learn's defaults (p = 10, q = 7): eigenvalues to 1e-5 relative, projections to
    5e-3 of their largest value (the 10th component converges slowest; measured 2e-6 and 2e-3)."""
    _randomized_against_dense("auto", 1e-5, 5e-3)


@pytest.mark.parametrize("kernel", ["rbf", "poly"])
def test_lobpcg_solver_equals_the_dense_one_through_products_only(kernel, monkeypatch):
    """n = 800, 6 components, scipy's default tolerance: eigenvalues to 1e-8 relative, projections to 1e-5 of their
    largest value; the Gram is reached only through blockwise products with n × k blocks (never materialized)."""
    from dkernel.decomposition import _eigensolvers

    products = []
    real = _eigensolvers._times_gram
    monkeypatch.setattr(_eigensolvers, "_times_gram", lambda K, Q, client: products.append(Q.shape) or real(K, Q, client))
    monkeypatch.setattr(_eigensolvers, "_dense", lambda *args: pytest.fail("the lobpcg solver materialized K_a"))
    X, X_new = _data(800), _data(40, seed=1)
    settings = dict(n_components=6, kernel=kernel, **KERNELS[kernel])
    lobpcg = KernelPCA(eigen_solver="lobpcg", random_state=0, client=False, **settings)
    Z = lobpcg.fit_transform(X)
    monkeypatch.undo()
    dense = KernelPCA(eigen_solver="dense", **settings)
    Z_ref = dense.fit_transform(X)
    np.testing.assert_allclose(lobpcg.eigenvalues_, dense.eigenvalues_, rtol=1e-8, atol=0)
    assert _relative(Z, Z_ref) < 1e-5
    assert _relative(lobpcg.transform(X_new), dense.transform(X_new)) < 1e-5
    assert products and all(shape[0] == 800 and shape[1] <= 6 for shape in products)


def test_lobpcg_solver_warns_when_it_stops_before_converging_and_refuses_too_many_components():
    from sklearn.exceptions import ConvergenceWarning

    X = _data(300)
    with pytest.warns(ConvergenceWarning, match="LOBPCG did not converge in 2 iterations"):
        KernelPCA(n_components=5, kernel="rbf", gamma=0.1, eigen_solver="lobpcg", max_iter=2, random_state=0,
                  client=False).fit(X)
    with pytest.raises(ValueError, match=r"fewer than n_samples/5 components \(60 here; n_components=60\)"):
        KernelPCA(n_components=60, eigen_solver="lobpcg", client=False).fit(X)


@pytest.mark.parametrize("kernel", [{"kernel": "poly", "degree": 3, "gamma": 1 / 30, "coef0": 0},
                                    {"kernel": "rbf", "gamma": 0.02}])
def test_randomized_solver_is_as_accurate_as_scikit_learns_at_the_same_settings(kernel):
    """A slowly decaying spectrum (n = 1500, 40 components): scikit-learn's ``iterated_power`` multiplies by K
    twice per iteration; counted once, the 40th eigenvalue was off by 30 times scikit-learn's error (USPS)."""
    from sklearn.decomposition import KernelPCA as SklearnKernelPCA

    X = np.random.default_rng(0).normal(size=(1500, 30))
    params = dict(n_components=40, random_state=0, **kernel)
    exact = KernelPCA(eigen_solver="dense", **params).fit(X).eigenvalues_
    ours = KernelPCA(eigen_solver="randomized", client=False, **params).fit(X).eigenvalues_
    theirs = SklearnKernelPCA(eigen_solver="randomized", **params).fit(X).eigenvalues_
    error = lambda values: np.max(np.abs(values - exact) / exact)  # noqa: E731
    assert error(ours) < 4 * error(theirs), (error(ours), error(theirs))


@pytest.mark.slow
def test_randomized_solver_converges_to_the_dense_one():
    """The same with q = 40 passes: both to 1e-10 (measured 3e-15 and 1e-14)."""
    _randomized_against_dense(40, 1e-10, 1e-10)


@pytest.mark.parametrize("center", ["class-balanced", "multiclass"])
def test_class_origins_give_the_eigenvectors_of_their_centered_gram(center):
    X, X_new = _data(300), _data(20, seed=1)
    y = np.where(X[:, 0] + X[:, 1] > 1.0, 1, 0) if center == "class-balanced" else np.arange(300) % 3
    kernel = get_kernel("rbf", gamma=0.1)
    K, gamma = kernel(X), class_balanced_weights(y)
    values, vectors = _dense_reference(K, gamma, 5)
    kpca = KernelPCA(n_components=5, kernel="rbf", gamma=0.1, center=center, eigen_solver="dense").fit(X, y)
    np.testing.assert_allclose(kpca.eigenvalues_, values, rtol=1e-10)
    np.testing.assert_allclose(np.abs(np.sum(kpca.eigenvectors_ * vectors, axis=0)), 1.0, atol=1e-10)
    # New points through K_a(x, x_i) = K(x, x_i) - h(x) - h_i + h0.
    K_new = kernel(X_new, X)
    h, h_new, h0 = K @ gamma, K_new @ gamma, gamma @ K @ gamma
    K_a_new = K_new - h_new[:, None] - h[None, :] + h0
    expected = K_a_new @ (kpca.eigenvectors_ / np.sqrt(kpca.eigenvalues_))
    assert _relative(kpca.transform(X_new), expected) < 1e-10


def test_no_centering_gives_the_eigenvectors_of_the_raw_gram():
    X = _data(200)
    K = get_kernel("rbf", gamma=0.1)(X)
    values = np.linalg.eigvalsh(K)[::-1][:4]
    kpca = KernelPCA(n_components=4, kernel="rbf", gamma=0.1, center=None, eigen_solver="dense").fit(X)
    np.testing.assert_allclose(kpca.eigenvalues_, values, rtol=1e-10)
    assert _relative(kpca.transform(X[:10]), kpca.fit_transform(X)[:10]) < 1e-10


def test_sampled_centering_error_shrinks_as_n_sample_grows():
    X = _data(300)
    exact = KernelPCA(n_components=5, kernel="rbf", gamma=0.1, eigen_solver="arpack", random_state=0).fit(X)
    projector = exact.eigenvectors_ @ exact.eigenvectors_.T

    def error(n_sample):
        """Mean over draws of the top-5 eigenvalues' largest relative error and of the subspace distance."""
        errors = []
        for seed in range(3):
            sampled = KernelPCA(n_components=5, kernel="rbf", gamma=0.1, eigen_solver="arpack", n_sample=n_sample,
                                random_state=seed).fit(X)
            value_error = np.max(np.abs(sampled.eigenvalues_ - exact.eigenvalues_) / exact.eigenvalues_)
            subspace_error = np.linalg.norm(sampled.eigenvectors_ @ sampled.eigenvectors_.T - projector, 2)
            errors.append((value_error, subspace_error))
        return np.mean(errors, axis=0)

    errors = np.array([error(n_sample) for n_sample in (3, 30, 150)])
    assert np.all(np.diff(errors, axis=0) < 0), errors
    assert np.all(error(300) < 1e-10)  # every point in the sample: the exact centre of gravity


def test_precomputed_ndarray_and_gram_store_give_the_fit_on_data(tmp_path):
    X, X_new = _data(300), _data(30, seed=1)
    kernel = get_kernel("rbf", gamma=0.1)
    store = GramMatrix.compute(X, kernel="rbf", gamma=0.1, chunk=128, dtype="float64", store=tmp_path / "K.zarr",
                               client=False, progress=False)
    on_data = KernelPCA(n_components=6, kernel="rbf", gamma=0.1, eigen_solver="dense")
    Z = on_data.fit_transform(X)
    T = on_data.transform(X_new)
    for solver in ("dense", "randomized"):
        reference = KernelPCA(n_components=6, kernel="rbf", gamma=0.1, eigen_solver=solver, random_state=0,
                              client=False).fit(X)
        for gram in (kernel(X), store):
            kpca = KernelPCA(n_components=6, kernel="precomputed", eigen_solver=solver, random_state=0,
                             client=False)
            np.testing.assert_allclose(kpca.fit_transform(gram), reference.fit_transform(X), rtol=0,
                                       atol=1e-10 * np.abs(Z).max())
            np.testing.assert_allclose(kpca.transform(kernel(X_new, X)), reference.transform(X_new), rtol=0,
                                       atol=1e-10 * np.abs(T).max())
        assert kpca.n_features_in_ == 300
    # The test kernel as a store K(X_new, X) of its own, read by rows.
    cross = GramMatrix.compute(X_new, X, kernel="rbf", gamma=0.1, chunk=128, dtype="float64",
                               store=tmp_path / "K_new.zarr", client=False, progress=False)
    np.testing.assert_allclose(kpca.transform(cross), reference.transform(X_new), rtol=0, atol=1e-10 * np.abs(T).max())


def test_sampled_class_balanced_origin_from_a_store_equals_the_one_from_data(tmp_path):
    X, X_new = _data(400), _data(10, seed=1)
    y = np.where(X[:, 0] > 0.5, 1, -1)
    store = GramMatrix.compute(X, kernel="rbf", gamma=0.1, chunk=128, dtype="float64", store=tmp_path / "K.zarr",
                               client=False, progress=False)
    params = {"n_components": 4, "eigen_solver": "dense", "center": "class-balanced", "n_sample": 50,
              "random_state": 3}
    on_data = KernelPCA(kernel="rbf", gamma=0.1, **params).fit(X, y)
    on_store = KernelPCA(kernel="precomputed", **params).fit(store, y)
    np.testing.assert_array_equal(on_data.centering_.indices, on_store.centering_.indices)
    np.testing.assert_allclose(on_store.eigenvalues_, on_data.eigenvalues_, rtol=1e-10)
    K_new = get_kernel("rbf", gamma=0.1)(X_new, X)
    np.testing.assert_allclose(on_store.transform(K_new), on_data.transform(X_new), rtol=0, atol=1e-9)


def test_a_centering_object_is_used_as_given():
    X = _data(200)
    y = np.where(X[:, 0] > 0, 1, -1)
    given = KernelPCA(n_components=3, kernel="rbf", gamma=0.1, center=Centering.class_balanced(y)).fit(X)
    named = KernelPCA(n_components=3, kernel="rbf", gamma=0.1, center="class-balanced").fit(X, y)
    np.testing.assert_allclose(given.eigenvalues_, named.eigenvalues_, rtol=1e-12)
    assert given.centering_.scheme == "class-balanced"


@pytest.mark.slow
def test_randomized_solver_on_workers_equals_the_in_process_one(tmp_path):
    import cloudpickle
    import distributed

    from dkernel.alignment._spectrum import gram_product
    from dkernel.centering import origin_products
    from dkernel.gram import KernelGram, source_dask
    from dkernel.views import CenteredGram

    X = _data(1500)
    y = np.where(X[:, 0] > 0.5, 1, -1)
    store = GramMatrix.compute(X, kernel="rbf", gamma=0.1, chunk=400, store=tmp_path / "K.zarr", client=False,
                               progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        for kernel, data, params in [("rbf", X, {"gamma": 0.1}), ("precomputed", store, {})]:
            for center, n_sample in [("standard", None), ("class-balanced", 300)]:
                settings = dict(n_components=8, kernel=kernel, eigen_solver="randomized", center=center,
                                n_sample=n_sample, random_state=0, **params)
                local = KernelPCA(**settings, client=False).fit(data, y)
                remote = KernelPCA(**settings, client=client).fit(data, y)
                np.testing.assert_allclose(remote.eigenvalues_, local.eigenvalues_, rtol=1e-10)
                np.testing.assert_allclose(remote.eigenvectors_, local.eigenvectors_, rtol=0, atol=1e-8)
        lobpcg = dict(n_components=5, kernel="rbf", gamma=0.1, eigen_solver="lobpcg", random_state=0)
        local, remote = KernelPCA(**lobpcg, client=False).fit(X), KernelPCA(**lobpcg, client=client).fit(X)
        np.testing.assert_allclose(remote.eigenvalues_, local.eigenvalues_, rtol=1e-8)
        # A pass over the centered view of a kernel evaluated on the fly carries Q and h; X went to the workers once.
        X_wide = np.random.default_rng(1).normal(size=(1500, 200))
        gram = KernelGram(X_wide, "rbf", gamma=0.005, chunk=400)
        centering = Centering.standard(1500)
        h, h0 = origin_products(gram, centering, client=False)
        view = CenteredGram(gram, centering, h=h, h0=h0)
        Q = np.random.default_rng(0).normal(size=(1500, 18))
        remote_pass = dict(gram_product(source_dask(view, client), Q, client).__dask_graph__())
        local_pass = dict(gram_product(view.dask, Q, None).__dask_graph__())
        assert len(cloudpickle.dumps(remote_pass)) < Q.nbytes + 4 * h.nbytes + 100_000
        assert len(cloudpickle.dumps(local_pass)) > X_wide.nbytes


def test_bad_input_is_refused_with_the_fix():
    X = _data(50)
    assert KernelPCA(n_components=60).fit(X).eigenvalues_.shape[0] <= 50  # clipped to n_samples, as scikit-learn
    with pytest.raises(InvalidLabelsError, match=r"center='class-balanced' needs the class labels"):
        KernelPCA(n_components=2, center="class-balanced").fit(X)
    with pytest.raises(ValueError, match=r"y has 10 labels but there are 50"):
        KernelPCA(n_components=2, center="multiclass").fit(X, np.arange(10) % 2)
    with pytest.raises(ValueError, match=r"n_sample=5 draws a sampled origin"):
        KernelPCA(n_components=2, center=None, n_sample=5).fit(X)
    with pytest.raises(SampleSizeError, match=r"n_sample=80 exceeds"):
        KernelPCA(n_components=2, n_sample=80).fit(X)
    with pytest.raises(ValueError, match=r"defined for n=40 points but there are 50"):
        KernelPCA(n_components=2, center=Centering.standard(40)).fit(X)
    with pytest.raises(InvalidParameterError, match="eigen_solver"):
        KernelPCA(eigen_solver="lapack").fit(X)
    with pytest.raises(InvalidParameterError, match="center"):
        KernelPCA(center="median").fit(X)
    with pytest.warns(RuntimeWarning, match=r"eigen_solver='arpack' computes fewer than n_samples=50.*n_components=50"):
        KernelPCA(n_components=50, eigen_solver="arpack").fit(X)  # LAPACK instead, as scikit-learn
    with pytest.raises(ValueError, match="square"):
        KernelPCA(kernel="precomputed").fit(np.ones((5, 4)))
    with pytest.raises(NotFittedError):
        KernelPCA().transform(X)
    kpca = KernelPCA(n_components=2).fit(X)
    with pytest.raises(ValueError, match="features"):
        kpca.transform(X[:, :3])
    with pytest.raises(ValueError, match="NaN"):
        kpca.transform(np.full((2, 6), np.nan))
    precomputed = KernelPCA(n_components=2, kernel="precomputed").fit(X @ X.T)
    with pytest.raises(ValueError, match="50"):
        precomputed.transform(np.ones((3, 7)))


@pytest.mark.parametrize("estimator", [
    KernelPCA(client=False),
    KernelPCA(n_components=2, kernel="rbf", eigen_solver="randomized", random_state=0, client=False),
    KernelPCA(kernel="precomputed", client=False),
], ids=["linear", "rbf-randomized", "precomputed"])
def test_scikit_learn_common_checks_pass(estimator):
    # A random "Gram" matrix is not positive semi-definite: scikit-learn's own KernelPCA fails this check too.
    expected = {"check_estimators_dtypes": "not PSD"} if estimator.kernel == "precomputed" else {}
    results = check_estimator(estimator, expected_failed_checks=expected, on_fail=None)
    assert [result["check_name"] for result in results if result["status"] == "failed"] == []
