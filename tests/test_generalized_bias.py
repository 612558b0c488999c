"""GeneralizedBiasSVC against a generic convex solver on the primal of Li, Leung & Lee's eq. (3)."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from dkernel import SVC
from dkernel.svm import GeneralizedBiasSVC
from dkernel.svm._generalized_bias import check_feature_matrix, least_norm_separator, virtual_samples_solution
from dkernel.kernels import get_kernel

cp = pytest.importorskip("cvxpy")

GAMMA_KERNEL = 0.3


def _problem(seed, n=60, d=5, ell=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    F = rng.normal(size=(n, ell))
    y = np.where(X[:, 0] + 0.7 * X[:, 1] ** 2 - 0.5 + 0.4 * rng.normal(size=n) > 0, 1, -1)
    return X, F, y


def _rbf(A, B):
    return np.asarray(get_kernel("rbf", gamma=GAMMA_KERNEL).block(A, B))


def _primal_reference(K, F, y, C):
    """min_c,λ ½ cᵀKc + C Σ (1 - y_i ((Kc)_i + (Fλ)_i))_+ by cvxpy/Clarabel: eq. (3) with C = 1/(2γm)."""
    n, ell = F.shape
    L = np.linalg.cholesky(K + 1e-12 * np.eye(n))
    c, lam = cp.Variable(n), cp.Variable(ell)
    hinge = cp.sum(cp.pos(1 - cp.multiply(y, K @ c + F @ lam)))
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(L.T @ c) + C * hinge))
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return problem.value, c.value, lam.value


def _primal_objective(K, F, y, C, c, lam):
    return 0.5 * c @ K @ c + C * np.maximum(0.0, 1 - y * (K @ c + F @ lam)).sum()


def _fit(X, F_of, y, C=1.0):
    return GeneralizedBiasSVC(C=C, kernel="rbf", gamma=GAMMA_KERNEL, features=F_of, tol=1e-9).fit(X, y)


def _binary_coefficients(model, n):
    """(c, λ) of the binary model with +1 for the second class, as eq. (7) reads them."""
    c = np.zeros(n)
    c[model.support_] = model.pair_coef_[0]
    return c, model.feature_coef_[0]


@pytest.mark.parametrize("ell", [1, 3, 10])
@pytest.mark.parametrize("seed", [0, 1])
def test_solution_equals_generic_solver_on_the_primal(ell, seed):
    X, F, y = _problem(seed, ell=ell)
    X_test, F_test, _ = _problem(seed + 100, ell=ell)
    table = {X[i].tobytes(): F[i] for i in range(len(X))} | {X_test[i].tobytes(): F_test[i] for i in range(len(X_test))}
    features = lambda Z: np.array([table[z.tobytes()] for z in Z])  # noqa: E731
    C = 0.7
    model = _fit(X, features, y, C)
    K = _rbf(X, X)
    c, lam = _binary_coefficients(model, len(y))
    reference, c_ref, lam_ref = _primal_reference(K, F, y.astype(float), C)
    assert abs(_primal_objective(K, F, y, C, c, lam) - reference) <= 1e-6 * max(1.0, abs(reference))
    f_ref = _rbf(X_test, X) @ c_ref + F_test @ lam_ref
    f = model.decision_function(X_test)
    decided = np.abs(f_ref) > 1e-4
    assert decided.mean() > 0.9
    np.testing.assert_array_equal(np.sign(f[decided]), np.sign(f_ref[decided]))
    np.testing.assert_allclose(f, f_ref, atol=1e-4 * max(1.0, np.abs(f_ref).max()))


@pytest.mark.parametrize("ell", [1, 3, 10])
def test_virtual_samples_form_gives_the_same_solution(ell):
    X, F, y = _problem(3, ell=ell)
    C = 0.5
    m = len(y)
    gamma = 1.0 / (2 * C * m)  # C = 1 / (2 γ m)
    model = _fit(X, lambda Z: F if len(Z) == m else None, y, C)
    K = _rbf(X, X)
    c, lam = _binary_coefficients(model, m)
    c_v, lam_v, objective_v = virtual_samples_solution(K, F, y.astype(float), gamma)
    np.testing.assert_allclose(c_v, c, atol=1e-6 * max(1.0, np.abs(c).max()))
    np.testing.assert_allclose(lam_v, lam, atol=1e-5 * max(1.0, np.abs(lam).max()))
    # L_v (eq. 27) is eq. (3) plus ℓ/m; eq. (3) is 2γ times the C-form primal.
    eq3 = 2 * gamma * _primal_objective(K, F, y, C, c, lam)
    assert abs(objective_v - ell / m - eq3) <= 1e-6 * max(1.0, eq3)


def test_reproduction_property_data_from_the_features_alone():
    rng = np.random.default_rng(7)
    n = 400
    X = rng.normal(size=(n, 4))
    lam_true = np.array([2.0, -1.0, 0.5])

    def features(Z):
        return np.column_stack([np.ones(len(Z)), Z[:, 2], Z[:, 3]])

    score = features(X) @ lam_true
    keep = np.abs(score) > 0.05  # labels generated exactly by the features' model, with a small margin
    X, y = X[keep], np.where(score[keep] > 0, 1, -1)
    model = GeneralizedBiasSVC(C=1.0, kernel="rbf", gamma=0.5, features=features, tol=1e-9).fit(X, y)
    assert model.support_.size == 0 and not model.pair_coef_.any()  # c = 0
    lam = model.feature_coef_[0]
    assert (y * (features(X) @ lam) >= 1 - 1e-7).all()
    cosine = lam @ lam_true / np.linalg.norm(lam) / np.linalg.norm(lam_true)
    # Labels that are only the sign of the model leave λ's scale free: the least-norm one is the hard-margin
    # separator on the features, which points along the generating coefficients.
    assert cosine > 0.99
    np.testing.assert_allclose(lam, least_norm_separator(y[:, None] * features(X), np.ones(len(y))), atol=1e-9)
    X_new = rng.normal(size=(2000, 4))
    truth = features(X_new) @ lam_true
    assert (model.predict(X_new) == np.where(truth > 0, 1, -1)).mean() > 0.98


@pytest.mark.parametrize("C", [0.1, 1.0, 100.0])
def test_reproduction_property_labels_exactly_a_linear_model_of_the_features(C):
    """y_i = Σ_k λ_k φ_k(x_i) exactly: c = 0 and λ comes back to rounding, whatever the kernel and C."""
    rng = np.random.default_rng(3)
    lam_true = np.array([0.4, 1.5, -2.0])  # φ = (1, x_2, x_3): the bias and two of the four inputs
    n = 300
    y = np.where(rng.random(n) < 0.4, 1.0, -1.0)
    X = rng.normal(size=(n, 4))
    # Move (x_2, x_3) along λ's direction onto the level set λ·φ(x) = y: the labels are the model's values.
    w = lam_true[1:]
    X[:, 2:] += np.outer((y - lam_true[0] - X[:, 2:] @ w) / (w @ w), w)

    def features(Z):
        return np.column_stack([np.ones(len(Z)), Z[:, 2], Z[:, 3]])

    assert np.allclose(features(X) @ lam_true, y)
    model = GeneralizedBiasSVC(C=C, kernel="rbf", gamma=0.5, features=features, tol=1e-9).fit(X, y)
    assert model.support_.size == 0 and not model.pair_coef_.any()  # c = 0
    np.testing.assert_allclose(model.feature_coef_[0], lam_true, rtol=0, atol=1e-9)
    X_new = rng.normal(size=(500, 4))
    np.testing.assert_allclose(model.decision_function(X_new), features(X_new) @ lam_true, atol=1e-8)


def test_least_norm_separator_is_the_hard_margin_solution_of_a_generic_solver():
    rng = np.random.default_rng(5)
    A = rng.normal(size=(80, 4)) + np.array([1.0, 0.5, 0.0, 0.0])
    h = np.where(rng.random(80) < 0.5, 1.0, 0.3)
    keep = A @ np.array([1.0, 0.5, 0.0, 0.0]) > 0.2
    A, h = A[keep], h[keep]
    lam = least_norm_separator(A, h)
    ref = cp.Variable(4)
    cp.Problem(cp.Minimize(cp.sum_squares(ref)), [A @ ref >= h]).solve(solver="CLARABEL", tol_gap_abs=1e-12,
                                                                       tol_gap_rel=1e-12, tol_feas=1e-12)
    np.testing.assert_allclose(lam, ref.value, atol=1e-7)
    assert (A @ lam >= h - 1e-10).all()
    with pytest.raises(RuntimeError, match="infeasible"):
        least_norm_separator(np.array([[1.0], [-1.0]]), np.array([1.0, 1.0]))


@pytest.mark.parametrize("failure", ["raises", "violates"])
def test_a_least_norm_step_that_fails_keeps_the_linear_programs_minimizer(monkeypatch, failure):
    import dkernel.svm._generalized_bias as gb

    rng = np.random.default_rng(2)
    F = np.column_stack([np.ones(40), rng.normal(size=40)])
    y = np.where(F[:, 1] > 0, 1.0, -1.0)
    F[:, 1] += 0.5 * y  # separable by the second feature: zero loss, a polyhedron of minimizers
    reference = gb.hinge_feature_coefficients(F, y, np.zeros(40), np.ones(40))

    def broken(A, h):
        if failure == "raises":
            raise RuntimeError("the constraints of the least-norm feature coefficients are infeasible.")
        return np.zeros(A.shape[1])  # violates every constraint

    monkeypatch.setattr(gb, "least_norm_separator", broken)
    lam = gb.hinge_feature_coefficients(F, y, np.zeros(40), np.ones(40))
    assert (y * (F @ lam) >= 1 - 1e-9).all()  # still a minimizer of eq. (25): zero loss
    assert not np.allclose(lam, reference)  # the LP's vertex, not the least-norm point


@pytest.mark.parametrize("n_classes", [2, 3])
def test_constant_feature_is_the_ordinary_svm(n_classes):
    rng = np.random.default_rng(11)
    X = rng.normal(size=(90, 3))
    y = np.digitize(X[:, 0] + 0.3 * rng.normal(size=90), np.quantile(X[:, 0], np.linspace(0, 1, n_classes + 1)[1:-1]))
    kwargs = dict(C=2.0, kernel="rbf", gamma=0.4, tol=1e-10)
    gb = GeneralizedBiasSVC(decision_function_shape="ovo", **kwargs).fit(X, y)
    svc = SVC(decision_function_shape="ovo", **kwargs).fit(X, y)
    X_test = rng.normal(size=(50, 3))
    np.testing.assert_allclose(gb.decision_function(X_test), svc.decision_function(X_test), atol=1e-6)
    np.testing.assert_array_equal(gb.predict(X_test), svc.predict(X_test))
    np.testing.assert_allclose(gb.feature_coef_[:, 0], svc.intercept_, atol=1e-6)


def test_features_with_nan_are_refused():
    X, F, y = _problem(0)
    F[4, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN or infinite values .*feature 1 of sample 4"):
        GeneralizedBiasSVC(features=lambda Z: F).fit(X, y)


def test_more_features_than_points_are_refused():
    X, _, y = _problem(0, n=8)
    with pytest.raises(ValueError, match=r"9 features on 8 training points"):
        GeneralizedBiasSVC(features=lambda Z: np.random.default_rng(0).normal(size=(len(Z), 9))).fit(X, y)


def test_linearly_dependent_features_are_refused():
    X, F, y = _problem(0, ell=3)
    F_dependent = np.column_stack([F, F[:, 0] - 2 * F[:, 2]])
    with pytest.raises(ValueError, match=r"linearly dependent .*rank 3 < 4"):
        GeneralizedBiasSVC(features=lambda Z: F_dependent).fit(X, y)
    with pytest.raises(ValueError, match="linearly dependent"):
        check_feature_matrix(np.zeros((5, 1)), 5)


def test_features_given_as_a_transformer_are_fitted_on_the_training_data():
    from sklearn.preprocessing import StandardScaler

    X, _, y = _problem(2, d=3)
    model = GeneralizedBiasSVC(kernel="rbf", gamma=0.5, features=StandardScaler()).fit(X, y)
    assert model.n_predefined_features_ == 3
    np.testing.assert_allclose(model.features_.mean_, X.mean(axis=0))
    assert model.features.__class__ is StandardScaler and not hasattr(model.features, "mean_")  # cloned
    assert (model.predict(X) == y).mean() > 0.8


def test_grid_search_and_clone_work_as_for_any_estimator():
    X, _, y = _problem(4, n=60)
    search = GridSearchCV(GeneralizedBiasSVC(kernel="rbf"), {"C": [0.1, 10.0], "gamma": [0.1, 1.0]}, cv=3).fit(X, y)
    assert set(search.best_params_) == {"C", "gamma"}
    assert clone(search.best_estimator_).get_params()["C"] == search.best_params_["C"]


def test_training_gram_in_a_store(tmp_path):
    X, F, y = _problem(5)
    table = {X[i].tobytes(): F[i] for i in range(len(X))}
    features = lambda Z: np.array([table[z.tobytes()] for z in Z])  # noqa: E731
    in_memory = _fit(X, features, y)
    stored = GeneralizedBiasSVC(C=1.0, kernel="rbf", gamma=GAMMA_KERNEL, features=features, tol=1e-9,
                                store=tmp_path / "grams").fit(X, y)
    assert stored.gram_dtype_ == "store"
    assert any(p.name.startswith("gram-") for p in (tmp_path / "grams").iterdir())
    np.testing.assert_allclose(stored.decision_function(X), in_memory.decision_function(X), atol=1e-6)


def test_a_precomputed_or_function_kernel_is_refused_before_fitting():
    X, _, y = _problem(0, n=30)
    for kernel in ("precomputed", lambda A, B: A @ B.T):
        with pytest.raises(ValueError, match="evaluates its kernel between test points and support vectors"):
            GeneralizedBiasSVC(kernel=kernel).fit(X, y)


def test_max_iter_minus_one_is_libsvms_limit_as_for_svc():
    X, _, y = _problem(1, n=40)
    default = GeneralizedBiasSVC(kernel="rbf", gamma=0.5, tol=1e-9).fit(X, y)
    libsvm_limit = GeneralizedBiasSVC(kernel="rbf", gamma=0.5, tol=1e-9, max_iter=-1).fit(X, y)
    assert libsvm_limit.fit_status_ == 0
    np.testing.assert_allclose(libsvm_limit.decision_function(X), default.decision_function(X), atol=1e-9)
