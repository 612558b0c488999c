"""Kernel adaptation by alignment (dkernel.alignment) against brute force (numpy eigh and explicit sums)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dkernel import RBFKernel
from dkernel.alignment import (
    AdaptedGram,
    KernelAligner,
    alignment_weights,
    optimal_alignment,
    top_eigenpairs,
    transductive_adaptation,
)
from dkernel.alignment import alignment_target, target_alignment
from dkernel.exceptions import InvalidLabelsError


def _gram(n, d, seed, kernel="poly"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if kernel == "poly":
        return X, (1 + X @ X.T) ** 2
    return X, RBFKernel(gamma=0.3).block(X, X, symmetric=True).astype(np.float64)


def _brute_force(K, t, rows, tol=1e-10):
    """Eqs. 2-6 by loops: eigh, the kept eigenpairs, α_i = <v_i, t>² normalized, G = Σ α_i v_i v_iᵀ."""
    values, vectors = np.linalg.eigh(K)
    order = np.argsort(values)[::-1]
    values, vectors = values[order], vectors[:, order]
    keep = values > tol * values[0]
    values, vectors = values[keep], vectors[:, keep]
    alpha = np.array([float(vectors[rows, i] @ t) ** 2 for i in range(vectors.shape[1])])
    alpha /= np.sqrt(np.sum(alpha**2))
    G = np.zeros_like(K)
    for i in range(len(alpha)):
        G += alpha[i] * np.outer(vectors[:, i], vectors[:, i])
    eq6 = np.sqrt(sum(float(vectors[rows, i] @ t) ** 4 for i in range(len(alpha)))) / float(t @ t)
    return alpha, G, eq6


@pytest.mark.parametrize("target", ["classification", "uneven", "regression"])
@pytest.mark.parametrize("labelled_fraction", [1.0, 0.6])
def test_transductive_matches_brute_force(target, labelled_fraction):
    X, K = _gram(300, 4, 1)
    rng = np.random.default_rng(2)
    y = X[:, 0] + rng.normal(size=300) if target == "regression" else np.where(rng.random(300) < 0.65, 1, -1)
    rows = np.sort(rng.choice(300, size=int(300 * labelled_fraction), replace=False))
    t = alignment_target(y[rows], target)
    alpha, G_brute, eq6 = _brute_force(K, t, rows)
    G = transductive_adaptation(K, y[rows], rows, target=target, method="exact")
    np.testing.assert_allclose(G.weights, alpha, rtol=0, atol=1e-10)
    np.testing.assert_allclose(G.to_numpy(), G_brute, rtol=0, atol=1e-10 * np.abs(G_brute).max())
    np.testing.assert_allclose(G.rows([3, 7]), G_brute[[3, 7]], rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(G.dask.compute()), G_brute, rtol=0, atol=1e-12)
    np.testing.assert_allclose(G.diag(), np.diagonal(G_brute), rtol=0, atol=1e-12)
    np.testing.assert_allclose(G.alignment(y[rows], rows), target_alignment(G_brute[np.ix_(rows, rows)], y[rows],
                                                                            target), rtol=0, atol=1e-10)
    if labelled_fraction == 1.0:
        # Orthonormal eigenvectors on the labelled rows: eq. (6) is the alignment of G.
        assert abs(eq6 - target_alignment(G_brute, y, target)) < 1e-10
        assert abs(optimal_alignment(G.vectors, t) - eq6) < 1e-10


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(5, 60), rank=st.integers(1, 8),
       target=st.sampled_from(["classification", "uneven", "regression"]))
def test_training_alignment_of_G_is_never_below_K(seed, n, rank, target):
    """The reweighting is the optimum over α ≥ 0 of eq. (4), and K itself is α = λ: A(G) ≥ A(K)."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, rank))
    K = A @ A.T
    y = rng.normal(size=n) if target == "regression" else np.r_[1, -1, rng.choice([-1, 1], size=n - 2)]
    aligner = KernelAligner(kernel="precomputed", target=target).fit(K, y)
    assert target_alignment(aligner.training_gram(), y, target) >= target_alignment(K, y, target) - 1e-12
    assert abs(aligner.alignment_ - target_alignment(aligner.training_gram(), y, target)) < 1e-10


def test_inductive_restricted_to_training_points_is_transductive_on_them():
    X, _ = _gram(200, 5, 3)
    y = np.where(np.random.default_rng(4).random(200) < 0.4, 1, -1)
    train = np.arange(150)
    aligner = KernelAligner(kernel="rbf", gamma=0.3, target="uneven", method="exact").fit(X[train], y[train])
    K_train = RBFKernel(gamma=0.3).block(X[train], X[train], symmetric=True).astype(np.float64)
    G_trans = transductive_adaptation(K_train, y[train], target="uneven", method="exact", tol=aligner.tol)
    np.testing.assert_allclose(aligner.gram(X[train]), G_trans.to_numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(aligner.training_gram(), G_trans.to_numpy(), rtol=0, atol=1e-12)


def test_inductive_kernel_of_new_points_is_the_explicit_projection():
    X, _ = _gram(120, 3, 5)
    y = np.where(X[:, 0] > 0.3, 1, -1)
    train, new = np.arange(80), np.arange(80, 120)
    kernel = RBFKernel(gamma=0.3)
    aligner = KernelAligner(kernel=kernel, method="exact").fit(X[train], y[train])
    V, lam, alpha = aligner.eigenvectors_, aligner.eigenvalues_, aligner.weights_
    K_new = kernel.block(X[new], X[train]).astype(np.float64)
    # v_i(x) = Σ_j V_ji K(x, x_j) / λ_i, one eigenvector and one point at a time.
    proj = np.array([[sum(V[j, i] * K_new[a, j] for j in range(80)) / lam[i] for i in range(len(lam))]
                     for a in range(len(new))])
    explicit = np.array([[sum(alpha[i] * proj[a, i] * proj[b, i] for i in range(len(lam)))
                          for b in range(len(new))] for a in range(len(new))])
    np.testing.assert_allclose(aligner.gram(X[new]), explicit, rtol=0, atol=1e-8)
    np.testing.assert_allclose(aligner.adapted_kernel_(X[new], X[train]), proj * alpha @ V.T, rtol=0, atol=1e-8)
    # v_i(x_j) = V_ji on the training points.
    np.testing.assert_allclose(aligner.transform(X[train]), V * np.sqrt(alpha), rtol=0, atol=1e-8)


def test_adapted_kernel_is_a_kernel_for_dkernel_svc_and_sklearn():
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import SVC as SklearnSVC

    from dkernel import SVC

    X, _ = _gram(160, 4, 6)
    y = np.where(X[:, 0] + X[:, 1] > 0, 1, -1)
    aligner = KernelAligner(kernel="rbf", gamma=0.3).fit(X[:100], y[:100])
    ours = SVC(kernel=aligner.adapted_kernel_, C=10.0).fit(X[:100], y[:100])
    theirs = SklearnSVC(kernel="precomputed", C=10.0).fit(aligner.gram(X[:100]), y[:100])
    pipeline = make_pipeline(KernelAligner(kernel="rbf", gamma=0.3), SklearnSVC(kernel="linear", C=10.0))
    pipeline.fit(X[:100], y[:100])
    expected = theirs.predict(aligner.gram(X[100:], X[:100]))
    assert (ours.predict(X[100:]) == expected).mean() >= 0.95
    assert (pipeline.predict(X[100:]) == expected).mean() >= 0.95
    assert ours.score(X[100:], y[100:]) > 0.8


def test_top_k_at_n_5000_is_within_1e_3_of_the_exact_alignment():
    """k chosen to cover 99 % of the spectrum's mass; the exact top-k eigenpairs from ARPACK (eigsh)."""
    from scipy.sparse.linalg import eigsh

    rng = np.random.default_rng(7)
    X = rng.normal(size=(5000, 3))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.5, 1, -1)
    K = RBFKernel(gamma=0.1).block(X, X, symmetric=True).astype(np.float64)
    G = transductive_adaptation(K, y, method="randomized", mass=0.99, random_state=0)
    assert G.mass >= 0.99 and G.rank < 200
    values, vectors = eigsh(K, k=G.rank, which="LA")
    exact = AdaptedGram(vectors, alignment_weights(vectors, alignment_target(y)))
    assert abs(G.alignment(y) - exact.alignment(y)) < 1e-3
    assert abs(values.sum() / np.trace(K) - G.mass) < 1e-3


def test_top_k_matches_the_full_exact_method_at_moderate_n():
    X, K = _gram(1000, 3, 8, kernel="rbf")
    y = np.where(X[:, 0] > 0, 1, -1)
    exact = transductive_adaptation(K, y, method="exact")
    for method in ("randomized", "nystroem"):
        options = {"n_landmarks": 400} if method == "nystroem" else {}
        G = transductive_adaptation(K, y, method=method, mass=0.99, random_state=0, **options)
        assert abs(G.alignment(y) - exact.alignment(y)) < 1e-2 if method == "nystroem" else 1e-3


def test_top_eigenpairs_on_a_store_and_a_lazy_gram_on_dask(tmp_path):
    from dkernel import GramMatrix, KernelGram

    X = np.random.default_rng(9).normal(size=(600, 4))
    K = RBFKernel(gamma=0.3).block(X, X, symmetric=True).astype(np.float64)
    exact = top_eigenpairs(K, 10, method="exact")
    in_memory = top_eigenpairs(K, 10, method="randomized", random_state=0, power_iterations=4)
    np.testing.assert_allclose(in_memory.values, exact.values, rtol=1e-3)
    store = GramMatrix.compute(X, kernel="rbf", gamma=0.3, store=tmp_path / "K.zarr", chunk=200, progress=False)
    for source in (store, KernelGram(X, "rbf", gamma=0.3, chunk=200)):
        # The same random stream over the blocks of a store or of a kernel evaluated on the fly.
        blockwise = top_eigenpairs(source, 10, method="randomized", random_state=0, power_iterations=4, client=False)
        np.testing.assert_allclose(blockwise.values, in_memory.values, rtol=1e-10)
        assert np.allclose(np.abs(np.sum(blockwise.vectors * in_memory.vectors, axis=0)), 1.0, atol=1e-8)


def test_adapted_gram_to_zarr_records_the_adaptation(tmp_path):
    from dkernel import GramMatrix

    X = np.random.default_rng(10).normal(size=(150, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    K = GramMatrix.compute(X, kernel="rbf", gamma=0.3, store=tmp_path / "K.zarr", chunk=64, progress=False)
    G = transductive_adaptation(K, y, rank=20)
    stored = G.to_zarr(tmp_path / "G.zarr")
    np.testing.assert_allclose(stored.to_numpy(), G.to_numpy(), rtol=0, atol=1e-12)
    assert stored.operators[-1]["name"] == "alignment-adapted" and not stored.is_raw


def test_bad_input_is_refused_with_clear_errors():
    X, K = _gram(50, 3, 11)
    y = np.where(X[:, 0] > 0, 1, -1)
    with pytest.raises(InvalidLabelsError, match="target='regression'"):
        transductive_adaptation(K, X[:, 1], target="classification")
    with pytest.raises(ValueError, match="rank 51 is larger than the Gram matrix's 50 rows"):
        transductive_adaptation(K, y, rank=51)
    bad = K.copy()
    bad[3, 4] = bad[4, 3] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        transductive_adaptation(bad, y)
    with pytest.raises(ValueError, match="NaN or infinite"):
        transductive_adaptation(bad, y, rank=5, method="randomized")
    with pytest.raises(ValueError, match="mass"):
        top_eigenpairs(K, mass=1.5)
    with pytest.raises(InvalidLabelsError, match="target='regression'"):
        KernelAligner(kernel="precomputed", target="uneven").fit(K, X[:, 1])


def test_careless_input_is_refused_before_any_eigendecomposition(monkeypatch):
    import dkernel.alignment._reweighting as reweighting

    X, K = _gram(40, 3, 12)
    y = np.where(X[:, 0] > 0, 1, -1)
    with pytest.raises(InvalidLabelsError, match=r"target='regression' needs real outputs.*two values \(-1 and 1\)"):
        KernelAligner(kernel="precomputed", target="regression").fit(K, y)
    monkeypatch.setattr(reweighting, "top_eigenpairs", None)  # every refusal below comes before the eigensolver
    with pytest.raises(InvalidLabelsError, match=r"target='regression' needs real outputs"):
        transductive_adaptation(K, y, target="regression")
    with pytest.raises(InvalidLabelsError, match="y has 30 labels but the Gram matrix has 40 rows"):
        transductive_adaptation(K, y[:30])
    with pytest.raises(ValueError, match="rank 41 is larger than the Gram matrix's 40 rows"):
        top_eigenpairs(K, 41)
    with pytest.raises(ValueError, match="rank must be a positive integer"):
        top_eigenpairs(K, 0)
    bad = K.copy()
    bad[0, 0] = np.inf
    with pytest.raises(ValueError, match="diagonal of the Gram matrix has NaN or infinite"):
        top_eigenpairs(bad, 5, method="randomized")


def test_weights_and_new_rows_are_checked():
    X, K = _gram(40, 3, 13)
    y = np.where(X[:, 0] > 0, 1, -1)
    vectors = np.linalg.qr(np.random.default_rng(0).normal(size=(40, 5)))[0]
    with pytest.raises(ValueError, match=r"same m labelled rows; got shapes \(40, 5\) and \(30,\)"):
        alignment_weights(vectors, y[:30].astype(float))
    with pytest.raises(ValueError, match="NaN or infinite"):
        optimal_alignment(vectors, np.r_[y[:-1], np.nan])
    aligner = KernelAligner(kernel="precomputed").fit(K, y)
    rows = K[:5].copy()
    rows[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"K\(X, X_train\) has NaN or infinite"):
        aligner.transform(rows)
    with pytest.raises(ValueError, match=r"shape \(n, 40\); got shape \(5, 30\)"):
        aligner.transform(K[:5, :30])


def _algorithm1_by_loops(K, y, rows, target, weighting):
    """Algorithm 1 as printed, every eigenvector of ``K`` (the same eigensolver call as the library's): ``a(n) =
    (V(I,n)'y(I))² / (V(I,n)'V(I,n))²`` (``weighting="algorithm1"``) or ``(V(I,n)'y(I))²`` (eq. 5), then
    ``G = Σ a(n) V(:,n) V(:,n)'`` with ``Σ a² = 1``."""
    values, vectors = np.linalg.eigh((K + K.T) / 2)
    vectors = vectors[:, ::-1]
    t = alignment_target(y, target)
    a = np.zeros(vectors.shape[1])
    for n in range(vectors.shape[1]):
        v_I = vectors[rows, n]
        a[n] = float(v_I @ t) ** 2 / (float(v_I @ v_I) ** 2 if weighting == "algorithm1" else 1.0)
    a /= np.sqrt(np.sum(a**2))
    G = np.zeros_like(K)
    for n in range(vectors.shape[1]):
        G += a[n] * np.outer(vectors[:, n], vectors[:, n])
    return a, G


@pytest.mark.parametrize("weighting", ["eq5", "algorithm1"])
def test_algorithm1_keeps_every_eigenvector_and_either_weighting_of_the_paper(weighting):
    """A rank-3 linear Gram on 40 points, 25 labelled: tol=None keeps all 40 eigenvectors (the null space's basis
    included), and the weights are eq. (5)'s or Algorithm 1's line, divided by ‖V(I, n)‖⁴."""
    rng = np.random.default_rng(21)
    X = rng.normal(size=(40, 3))
    K = X @ X.T
    y = np.where(rng.random(40) < 0.6, 1, -1)
    rows = np.sort(rng.choice(40, size=25, replace=False))
    a, G_loops = _algorithm1_by_loops(K, y[rows], rows, "uneven", weighting)
    G = transductive_adaptation(K, y[rows], rows, target="uneven", weighting=weighting, method="exact", tol=None)
    assert G.rank == 40
    np.testing.assert_allclose(G.weights, a, rtol=0, atol=1e-10)
    np.testing.assert_allclose(G.to_numpy(), G_loops, rtol=0, atol=1e-10)
    assert transductive_adaptation(K, y[rows], rows, target="uneven", weighting=weighting, method="exact").rank == 3


def test_the_two_weightings_differ_with_unlabelled_rows_and_agree_without():
    X, K = _gram(60, 3, 22, kernel="rbf")
    y = np.where(X[:, 0] > 0, 1, -1)
    rows = np.arange(35)
    eq5 = transductive_adaptation(K, y[rows], rows, method="exact", tol=None)
    alg1 = transductive_adaptation(K, y[rows], rows, weighting="algorithm1", method="exact", tol=None)
    norms = np.sum(eq5.vectors[rows] ** 2, axis=0)
    expected = eq5.weights / norms**2
    np.testing.assert_allclose(alg1.weights, expected / np.linalg.norm(expected), rtol=1e-10, atol=1e-14)
    assert np.abs(alg1.weights - eq5.weights).max() > 1e-3
    everyone = [transductive_adaptation(K, y, weighting=w, method="exact", tol=None).weights
                for w in ("eq5", "algorithm1")]
    np.testing.assert_allclose(everyone[0], everyone[1], rtol=0, atol=1e-10)
    with pytest.raises(ValueError, match=r"weighting must be one of \['eq5', 'algorithm1'\]"):
        transductive_adaptation(K, y, weighting="eq6")


def test_numerical_rank_tol_keeps_exactly_the_rank_of_a_low_rank_gram():
    """MATLAB's rank tolerance n·ε·λ_max: a linear Gram of 5 inputs on 50 points keeps 5 eigenvectors; the inductive
    aligner refuses a threshold that would divide by zero eigenvalues."""
    from dkernel.alignment import numerical_rank_tol

    assert numerical_rank_tol(80) == pytest.approx(80 * np.finfo(np.float64).eps)
    rng = np.random.default_rng(23)
    X = rng.normal(size=(50, 5))
    K = X @ X.T
    y = np.where(rng.random(50) < 0.5, 1, -1)
    aligner = KernelAligner(kernel="precomputed", target="uneven", tol=numerical_rank_tol(50)).fit(K, y)
    assert len(aligner.eigenvalues_) == 5 == np.linalg.matrix_rank(K)
    for tol in (None, 0.0, -1e-6):
        with pytest.raises(ValueError, match="tol must be a positive number"):
            KernelAligner(kernel="precomputed", tol=tol).fit(K, y)


def test_one_eigendecomposition_serves_every_split_as_in_algorithm1():
    X, K = _gram(50, 3, 24, kernel="rbf")
    y = np.where(X[:, 0] > 0, 1, -1)
    spectrum = top_eigenpairs(K, method="exact")
    for rows in (np.arange(30), np.arange(20, 50)):
        for weighting in ("eq5", "algorithm1"):
            reused = transductive_adaptation(K, y[rows], rows, weighting=weighting, tol=None, spectrum=spectrum)
            fresh = transductive_adaptation(K, y[rows], rows, weighting=weighting, tol=None, method="exact")
            np.testing.assert_allclose(reused.to_numpy(), fresh.to_numpy(), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="the spectrum's eigenvectors have 50 rows; the Gram matrix has 30"):
        transductive_adaptation(K[:30, :30], y[:30], spectrum=spectrum)
