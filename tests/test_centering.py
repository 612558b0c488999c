"""Tests of dkernel.centering and dkernel.centering: origin weights, h and h0, Δb, general centering.

Ground truth is an explicit polynomial feature map φ (multinomial expansion):
the centered Gram must equal the Gram of φ(x) − a.
"""

import json
import warnings

import numpy as np
import pytest
from sklearn.svm import SVC

from dkernel.gram._sources import KernelGram
from dkernel.centering import (
    Centering,
    InvalidLabelsError,
    InvalidWeightsError,
    SampleSizeError,
    class_balanced_weights,
    decision_function_original_kernel,
    delta_b,
    origin_products,
)
from dkernel.centering import Criterion, criterion, feature_space_gradient, general_centering
from dkernel.gram import GramMatrix
from dkernel.kernels import PolynomialKernel
from dkernel.views import CenteredGram

from _reference import make_data, poly_feature_map, translated_gram


POLY = [dict(gamma=0.5, coef0=1.0, degree=2), dict(gamma=0.3, coef0=0.7, degree=3)]


@pytest.mark.parametrize("params", POLY)
def test_feature_map_reproduces_the_polynomial_kernel(params):
    X, _ = make_data(40)
    Phi = poly_feature_map(X, **params)
    np.testing.assert_allclose(Phi @ Phi.T, PolynomialKernel(**params)(X), rtol=1e-12, atol=1e-12)


def _schemes(y, n):
    rng = np.random.default_rng(5)
    return {
        "standard": Centering.standard(n),
        "class-balanced": Centering.class_balanced(y),
        "multiclass": Centering.multiclass(np.arange(n) % 3),
        "user": Centering.from_weights(rng.normal(size=n)),
        "user-support": Centering.from_weights([0.7, -0.2, 0.5], indices=[3, 90, 17], n=n),
        "sampled-class-balanced": Centering.sampled(y, 30, random_state=0),
        "sampled-standard": Centering.sampled(n, 25, "standard", random_state=1),
        "sampled-multiclass": Centering.sampled(np.arange(n) % 3, 31, "multiclass", random_state=2),
    }


@pytest.mark.parametrize("params", POLY)
@pytest.mark.parametrize("base_kind", ["kernel", "store"])
def test_centered_gram_equals_gram_of_translated_features(params, base_kind, tmp_path):
    X, y = make_data(150)
    n = len(X)
    if base_kind == "kernel":
        base = KernelGram(X, "poly", chunk=64, **params)
    else:
        base = GramMatrix.compute(X, kernel="poly", store=tmp_path / "K.zarr", chunk=64, progress=False, **params)
    Phi = poly_feature_map(X, **params)
    for name, centering in _schemes(y, n).items():
        a = centering.dense() @ Phi
        expected = translated_gram(Phi, a)
        view = CenteredGram(base, centering)
        assert view.h0 == pytest.approx(a @ a, rel=1e-12)
        np.testing.assert_allclose(view.h, Phi @ a, atol=1e-10, err_msg=name)
        idx = np.array([5, 0, 149, 77])
        np.testing.assert_allclose(view.rows(idx), expected[idx], atol=1e-10, err_msg=name)
        np.testing.assert_allclose(np.asarray(view.dask.compute()), expected, atol=1e-10, err_msg=name)
        np.testing.assert_allclose(view.diag(), np.diagonal(expected), atol=1e-10, err_msg=name)
        np.testing.assert_allclose(view.block(1, 2), expected[64:128, 128:150], atol=1e-10, err_msg=name)
        np.testing.assert_allclose(view.principal_submatrix(idx), expected[np.ix_(idx, idx)], atol=1e-10)
        if name == "sampled-class-balanced":
            stored = view.to_zarr(tmp_path / f"Ka-{base_kind}.zarr")
            reopened = GramMatrix.open(stored.path)
            np.testing.assert_allclose(reopened.to_numpy(), expected, atol=1e-10)
            np.testing.assert_allclose(reopened.diag(), np.diagonal(expected), atol=1e-10)


def test_sampled_origin_products_read_only_sample_columns():
    X, y = make_data(200)
    base = KernelGram(X, "poly", degree=2, gamma=0.5, chunk=50)
    centering = Centering.sampled(y, 20, random_state=3)
    h_lazy, h0_lazy = origin_products(base, centering, compute=False)
    # One task per row block of K(X, X_S): the n × n matrix is never part of the graph.
    assert h_lazy.numblocks == (4,)
    h, h0 = origin_products(base, centering)
    K = base.to_numpy()
    g = centering.dense()
    np.testing.assert_allclose(h, K @ g, rtol=1e-12)
    assert h0 == pytest.approx(g @ K @ g, rel=1e-12)


def test_class_balanced_weights_follow_meila_eq13():
    y = np.array([1, 1, 1, -1, 1, -1])
    g = class_balanced_weights(y)
    np.testing.assert_allclose(g, [1 / 8, 1 / 8, 1 / 8, 1 / 4, 1 / 8, 1 / 4])
    assert g.sum() == pytest.approx(1.0)
    gm = Centering.multiclass([0, 0, 1, 2, 2, 2]).weights
    np.testing.assert_allclose(gm, [1 / 6, 1 / 6, 1 / 3, 1 / 9, 1 / 9, 1 / 9])


def test_sampled_class_balanced_takes_half_the_sample_from_each_class():
    X, y = make_data(300)
    c = Centering.sampled(y, 40, random_state=0)
    assert c.n_support == 40
    assert (y[c.indices] == 1).sum() == 20
    np.testing.assert_allclose(c.weights, 1 / 40)
    assert c.total_weight == pytest.approx(1.0)
    assert np.all(np.diff(c.indices) > 0)


def test_centering_round_trips_through_json():
    for c in _schemes(np.array([1, -1] * 50), 100).values():
        back = Centering.from_dict(json.loads(json.dumps(c.to_dict())))
        assert back.scheme == c.scheme and back.n == c.n
        np.testing.assert_array_equal(back.dense(), c.dense())


# --------------------------------------------------------------------------- #
# Bad input
# --------------------------------------------------------------------------- #


def test_labels_of_the_wrong_length_are_refused():
    X, y = make_data(50)
    base = KernelGram(X, "linear")
    with pytest.raises(InvalidWeightsError, match="50 rows"):
        CenteredGram(base, Centering.class_balanced(y[:40]))
    with pytest.raises(InvalidLabelsError, match="40 labels but the Gram matrix has 50 rows"):
        general_centering(base, y[:40], "alignment")


def test_a_single_class_is_refused_by_the_class_balanced_scheme():
    with pytest.raises(InvalidLabelsError, match="only the class 1.*standard scheme"):
        Centering.class_balanced(np.ones(10))
    with pytest.raises(InvalidLabelsError, match="multiclass"):
        Centering.class_balanced([0, 1, 2, 0])
    assert issubclass(InvalidLabelsError, ValueError)


def test_impossible_sample_sizes_are_refused():
    y = np.array([1] * 30 + [-1] * 2)
    with pytest.raises(SampleSizeError, match="exceeds the number of training points n=32"):
        Centering.sampled(y, 33)
    with pytest.raises(SampleSizeError, match="without a sample point"):
        Centering.sampled(np.arange(5) % 3, 2, "multiclass")
    with pytest.raises(SampleSizeError, match="contains no point of class -1.*stratify=True"):
        Centering.sampled(y, 3, stratify=False, random_state=0)


def test_nan_weights_are_refused():
    with pytest.raises(InvalidWeightsError, match="1 NaN or infinite values.*position 2"):
        Centering.from_weights([0.1, 0.2, np.nan])
    with pytest.raises(InvalidWeightsError, match="indices must lie in"):
        Centering.from_weights([1.0], indices=[7], n=5)
    with pytest.raises(InvalidWeightsError, match="duplicates"):
        Centering.from_weights([1.0, 2.0], indices=[1, 1], n=5)


# --------------------------------------------------------------------------- #
# Translation invariance and Δb (Meilă §4)
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("scheme", ["standard", "class-balanced", "sampled"])
@pytest.mark.parametrize("kernel", [dict(kernel="poly", degree=2, gamma=0.5), dict(kernel="rbf", gamma=0.5)])
def test_svm_on_centered_gram_equals_original_kernel_with_delta_b(scheme, kernel):
    X, y = make_data(160, seed=1)
    X_test = np.random.default_rng(9).normal(size=(60, 3))
    base = KernelGram(X, chunk=64, **kernel)
    centering = {
        "standard": Centering.standard(len(X)),
        "class-balanced": Centering.class_balanced(y),
        "sampled": Centering.sampled(y, 30, random_state=4),
    }[scheme]
    view = CenteredGram(base, centering)
    clf = SVC(kernel="precomputed", C=1.0, tol=1e-10).fit(view.to_numpy(), y)
    on_centered = clf.decision_function(view.cross(X_test))
    db = delta_b(clf.dual_coef_, view.h, support=clf.support_)
    K_test = base.kernel(X_test, X)[:, clf.support_]
    on_original = decision_function_original_kernel(K_test, clf.dual_coef_, clf.intercept_, db)
    assert np.max(np.abs(on_centered - on_original)) <= 1e-8
    # Eq. (19) written out: Σ_i Σ_j α_i y_i γ_j K(x_i, x_j).
    K = base.to_numpy()
    explicit = clf.dual_coef_[0] @ K[clf.support_] @ centering.dense()
    assert db == pytest.approx(explicit, rel=1e-10, abs=1e-12)
    assert abs(db) > 1e-6  # non-zero even for the standard scheme, as Meilă remarks


def test_delta_b_checks_its_inputs():
    with pytest.raises(ValueError, match="support="):
        delta_b(np.ones(3), np.ones(5))
    with pytest.raises(ValueError, match="binary"):
        delta_b(np.ones((2, 3)), np.ones(3))
    with pytest.raises(ValueError, match="one column per support vector"):
        decision_function_original_kernel(np.ones((4, 2)), np.ones(3), 0.0, 0.0)


# --------------------------------------------------------------------------- #
# General centering (Meilă §5)
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("name", ["between-class", "between-class-cosine", "alignment", "user"])
def test_feature_space_gradient_matches_finite_differences(name):
    X, y = make_data(60, seed=2)
    K = PolynomialKernel(gamma=0.5, degree=2)(X)
    rng = np.random.default_rng(0)
    if name == "user":
        # J(K_a) = -‖K_a‖²_F / 2, ∂J/∂K_a = -K_a.
        crit = Criterion("frobenius", lambda Ka: -0.5 * float(np.vdot(Ka, Ka)), lambda Ka: -Ka)
    else:
        crit = criterion(name, y)
    w = rng.normal(size=len(y)) / len(y)
    beta = rng.normal(size=len(y)) / len(y)  # the direction d = Σ β_i φ(x_i)
    J, g = feature_space_gradient(K, w, crit)
    eps = 1e-5
    J_plus, _ = feature_space_gradient(K, w + eps * beta, crit)
    J_minus, _ = feature_space_gradient(K, w - eps * beta, crit)
    numeric = (J_plus - J_minus) / (2 * eps)
    analytic = g @ K @ beta  # ⟨∇J, d⟩ in the γ representation
    assert numeric == pytest.approx(analytic, rel=1e-5, abs=1e-9)


@pytest.mark.parametrize("name", ["between-class", "between-class-cosine", "alignment"])
def test_general_centering_increases_the_criterion_monotonically(name):
    X, y = make_data(100, seed=3)
    base = KernelGram(X, "poly", degree=2, gamma=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = general_centering(base, y, name, init=None if name == "between-class" else "standard",
                                   max_iter=60)
    assert result.n_iter >= 1
    assert np.all(np.diff(result.history) > 0)
    # The state (h, h0), updated by eqs. (30)–(33), matches the weights it claims.
    K = base.to_numpy()
    w = result.centering.dense()
    np.testing.assert_allclose(result.h, K @ w, rtol=1e-8, atol=1e-8 * np.abs(K).max())
    assert result.h0 == pytest.approx(w @ K @ w, rel=1e-8, abs=1e-8)


def test_between_class_criterion_converges_to_the_class_balanced_origin():
    X, y = make_data(120, seed=4)
    base = KernelGram(X, "poly", degree=2, gamma=1.0)
    result = general_centering(base, y, "between-class", max_iter=100, tol=1e-12)
    expected = CenteredGram(base, Centering.class_balanced(y))
    scale = np.abs(expected.h).max()
    np.testing.assert_allclose(result.h, expected.h, atol=1e-3 * scale)
    assert result.h0 == pytest.approx(expected.h0, rel=1e-3)


def test_sampled_general_centering_is_a_sampled_origin_applied_to_the_full_gram():
    from dkernel.alignment import target_alignment

    X, y = make_data(300, seed=5)
    X = X + 2.0  # origin away from the data, so that moving it matters
    base = KernelGram(X, "poly", degree=2, gamma=0.5, chunk=100)
    result = general_centering(base, y, "alignment", n_sample=60, random_state=0, max_iter=100)
    c = result.centering
    assert c.n == 300 and c.n_support == 60 and c.scheme == "sampled-general-alignment"
    assert np.all(np.diff(result.history) > 0)
    # Alignment concentrates (Shawe-Taylor et al.), so the sample's optimum improves the full alignment.
    assert target_alignment(CenteredGram(base, c), y) > target_alignment(base, y)


def test_general_centering_refuses_an_init_off_the_sample():
    X, y = make_data(80)
    with pytest.raises(InvalidWeightsError, match="outside the sample"):
        general_centering(KernelGram(X, "linear"), y, "alignment", n_sample=20, init=Centering.standard(80))


def test_origin_from_scheme_names_the_same_origins_as_the_constructors():
    y = np.array([1, 1, 1, -1, -1, 1, -1, 1])
    pairs = [
        (Centering.from_scheme("standard", n=8), Centering.standard(8)),
        (Centering.from_scheme("standard", y), Centering.standard(8)),
        (Centering.from_scheme("class-balanced", y), Centering.class_balanced(y)),
        (Centering.from_scheme("multiclass", y), Centering.multiclass(y)),
        (Centering.from_scheme("class-balanced", y, n_sample=4, random_state=3),
         Centering.sampled(y, 4, "class-balanced", random_state=3)),
        (Centering.from_scheme("standard", n=8, n_sample=4, random_state=3),
         Centering.sampled(8, 4, "standard", random_state=3)),
    ]
    for made, expected in pairs:
        assert made.to_dict() == expected.to_dict()
    with pytest.raises(InvalidLabelsError, match="class-balanced scheme needs labels"):
        Centering.from_scheme("class-balanced", n=8)
    with pytest.raises(ValueError, match="unknown origin scheme 'balanced'"):
        Centering.from_scheme("balanced", y)
