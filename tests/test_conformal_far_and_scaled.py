"""ConformalSVC far from the boundary and on unscaled data; fit_from_first_pass's checks; predefined_features' input.

* ``bias="scaled"``/``"none"``: ``f̃ = D(x) g(x)`` with ``D > 0`` keeps the sign of ``g`` where ``D`` underflows.
* ``D = exp(-κ f²)`` underflowing at a training point is refused before the second pass, naming kappa and |f|max.
* ``fit_from_first_pass`` checks X against the first pass: its feature count and its support vectors.
* ``GeneralizedBiasSVC.predefined_features`` validates X as ``predict`` does.
"""

import numpy as np
import pytest

from dkernel import SVC, ConformalSVC
from dkernel.svm import GeneralizedBiasSVC

FAR = np.array([[30.0, 0.0], [-30.0, 0.0], [0.0, 80.0], [0.0, -80.0], [1e4, 1.0]])
FAR_CLASSES = [1, -1, 1, -1, 1]  # the sign of x0 + 0.5 x1


@pytest.fixture(scope="module")
def linear_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1, -1)
    return X, y


# --------------------------------------------------------------- D1: the sign of D g far from the boundary
@pytest.mark.parametrize("conformal, kappa", [("williams", None), ("amari-wu", 1.0)])
@pytest.mark.parametrize("bias", ["scaled", "none"])
def test_far_points_keep_the_sign_of_the_bracket(linear_data, bias, conformal, kappa):
    X, y = linear_data
    model = ConformalSVC(kernel="linear", bias=bias, conformal=conformal, kappa=kappa).fit(X, y)
    assert np.all(model.factor_(FAR[:2]) == 0.0)  # D underflows there: the case at hand
    dec = model.decision_function(FAR)
    assert np.all(dec != 0)
    assert np.sign(dec).tolist() == FAR_CLASSES
    assert model.predict(FAR).tolist() == FAR_CLASSES
    np.testing.assert_array_equal(model.predict(FAR), model.classes_[(dec > 0).astype(int)])


@pytest.mark.parametrize("bias", ["scaled", "none"])
def test_prediction_matches_the_sign_of_the_decision_near_and_far(linear_data, bias):
    X, y = linear_data
    model = ConformalSVC(kernel="linear", bias=bias).fit(X, y)
    Z = np.vstack([np.random.default_rng(1).normal(size=(300, 2)) * 20, FAR])
    dec = model.decision_function(Z)
    np.testing.assert_array_equal(model.predict(Z), model.classes_[(dec > 0).astype(int)])
    truth = np.where(Z[:, 0] + 0.5 * Z[:, 1] > 0, 1, -1)
    far = np.abs(Z[:, 0] + 0.5 * Z[:, 1]) > 5  # far from the boundary, where D underflows for many
    assert np.mean(model.predict(Z)[far] == truth[far]) > 0.99


def test_decision_keeps_its_value_where_only_D_underflows(linear_data):
    """D(x) = 0 in float64 but D(x) g(x) is still a (subnormal) float64: the value is exp(log D + log|g|)."""
    X, y = linear_data
    model = ConformalSVC(kernel="linear", bias="none").fit(X, y)
    first = model.first_pass_
    slope, offset = first.decision_function([[1.0, 0.0]])[0] - first.intercept_[0], first.intercept_[0]
    t = (np.sqrt(745.5 / model.kappa_) - offset) / slope  # κ f(x)² = 745.5 at x = (t, 0): D(x) underflows
    x = np.array([[t, 0.0]])
    assert model.factor_(x)[0] == 0.0
    assert model.decision_function(x)[0] > 1e-322  # not 0, nor only the smallest positive float64
    g = model._bracket(x, model.second_pass_._pair_coef[0])[0]
    expected = np.sign(g) * np.exp(-745.5 + np.log(abs(g)))
    assert expected > 1e-322  # representable: more than the smallest positive float64
    assert model.decision_function(x)[0] == pytest.approx(expected, rel=0.1)
    assert model.predict(x)[0] == 1


def test_free_bias_still_tends_to_the_constant_far_away(linear_data):
    """eq. 1 literally under "free": far from the boundary f̃ → b̃ (documented, unchanged)."""
    X, y = linear_data
    model = ConformalSVC(kernel="linear", bias="free").fit(X, y)
    np.testing.assert_allclose(model.decision_function(FAR[:2]), model.intercept_[0], atol=1e-300)
    # and bias="scaled" does not: this test fails if the two readings were confused
    scaled = ConformalSVC(kernel="linear", bias="scaled").fit(X, y)
    assert np.sign(scaled.decision_function(FAR[:2])).tolist() == [1, -1]


# --------------------------------------------------------------- D2: D underflowing at a training point
def test_default_kappa_on_unscaled_data_is_refused_with_a_clear_message(linear_data):
    X, y = linear_data
    X = X.copy()
    X[:5] *= 400
    with pytest.raises(ValueError, match=r"kappa=None") as info:
        ConformalSVC(kernel="linear").fit(X, y)
    message = str(info.value)
    for fragment in ("largest |f(x)|", "underflows to 0 in float64", "745", "StandardScaler", "smaller kappa"):
        assert fragment in message
    f_max = np.abs(SVC(kernel="linear", client=False).fit(X, y).decision_function(X)).max()
    assert f"{f_max:.6g}" in message


def test_large_kappa_is_refused_with_a_clear_message(linear_data):
    X, y = linear_data
    with pytest.raises(ValueError, match=r"kappa=10000\.0.*underflows to 0 in float64.*smaller kappa"):
        ConformalSVC(kernel="linear", kappa=1e4).fit(X, y)


def test_amari_wu_underflow_is_refused_with_a_clear_message(linear_data):
    X, y = linear_data
    X = X.copy()
    X[0] = [1e3, 1e3]  # far from every support vector
    y = y.copy()
    y[0] = 1
    with pytest.raises(ValueError, match=r"kappa=1\.0.*from every first-pass support vector.*StandardScaler"):
        ConformalSVC(kernel="linear", conformal="amari-wu", kappa=1.0).fit(X, y)


# --------------------------------------------------------------- D3: fit_from_first_pass checks X
def test_fit_from_first_pass_refuses_another_feature_count():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(80, 4))
    y = np.where(X[:, 0] > 0, 1, -1)
    first = SVC(client=False).fit(X, y)
    with pytest.raises(ValueError, match=r"X has 3 features, but SVC is expecting 4 features as input"):
        ConformalSVC().fit_from_first_pass(first, X[:, :3], y)


def test_fit_from_first_pass_refuses_other_data_of_as_many_rows(linear_data):
    X, y = linear_data
    first = SVC(kernel="linear", client=False).fit(X, y)
    other = X[::-1].copy()
    with pytest.raises(ValueError, match=r"first pass was not fitted on this X.*support_vectors_"):
        ConformalSVC(kernel="linear").fit_from_first_pass(first, other, y)
    # the data it was fitted on, as a list or in float32 for a float32 first pass, are accepted
    ConformalSVC(kernel="linear").fit_from_first_pass(first, X.tolist(), y)
    first32 = SVC(kernel="linear", client=False).fit(X.astype(np.float32), y)
    ConformalSVC(kernel="linear").fit_from_first_pass(first32, X, y)


# --------------------------------------------------------------- D4: predefined_features validates X
def _first_coordinate(Z):
    return Z[:, :1]


def test_predefined_features_accepts_what_predict_accepts(linear_data):
    X, y = linear_data
    model = GeneralizedBiasSVC(kernel="rbf", gamma=0.5, features=_first_coordinate).fit(X, y)
    np.testing.assert_array_equal(model.predefined_features(X[:2].tolist()), X[:2, :1])
    assert model.predict(X[:2].tolist()).tolist() == model.predict(X[:2]).tolist()


def test_predefined_features_checks_the_feature_count(linear_data):
    X, y = linear_data
    model = GeneralizedBiasSVC(kernel="rbf", gamma=0.5, features=lambda Z: Z[:, 1:2]).fit(X, y)
    with pytest.raises(ValueError, match=r"X has 1 features, but GeneralizedBiasSVC is expecting 2 features"):
        model.predefined_features(X[:, :1])
