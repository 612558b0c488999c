"""The two-pass ConformalSVC: its second pass is an SVM on the explicit D K D; prediction, persistence, errors."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import InvalidParameterError

from dkernel import SVC
from dkernel.exceptions import ArtifactPathError, ModelFormatError, UnverifiedModelWarning
from dkernel.kernels import RBFKernel
from dkernel.svm import ConformalSVC, load_conformal_model


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(150, 2))
    y = np.where(X[:, 1] > 2 * np.exp(-4 * X[:, 0] ** 2) - 1, 1, -1)
    Z = rng.uniform(-1, 1, size=(400, 2))
    return X, y, Z


def _explicit_second_pass(X, y, Z, D_train, D_test, C, gamma):
    K = RBFKernel(gamma=gamma).block(X, X, symmetric=True)
    ref = SVC(kernel="precomputed", C=C, tol=1e-10, client=False).fit(D_train[:, None] * K * D_train[None, :], y)
    K_test = D_test[:, None] * RBFKernel(gamma=gamma).block(Z, X) * D_train[None, :]
    return ref, ref.decision_function(K_test)


@pytest.mark.parametrize("conformal", ["williams", "amari-wu"])
def test_second_pass_is_the_svm_on_the_explicit_conformal_gram(data, conformal):
    X, y, Z = data
    model = ConformalSVC(C=10, gamma=2.0, conformal=conformal, tol=1e-10).fit(X, y)
    f = model.first_pass_.decision_function(X)
    if conformal == "williams":
        assert model.kappa_ == pytest.approx(1 / np.abs(f).max())  # κ = 1/|f|max over the training points
        D_train = np.exp(-model.kappa_ * f**2)
        D_test = np.exp(-model.kappa_ * model.first_pass_.decision_function(Z) ** 2)
    else:
        sv = model.first_pass_.support_vectors_
        D_train = np.exp(-2.0 * ((X[:, None] - sv[None]) ** 2).sum(-1)).sum(1)
        D_test = np.exp(-2.0 * ((Z[:, None] - sv[None]) ** 2).sum(-1)).sum(1)
    np.testing.assert_allclose(model.conformal_factor_, D_train, rtol=1e-10)
    ref, expected = _explicit_second_pass(X, y, Z, D_train, D_test, 10, 2.0)
    np.testing.assert_allclose(model.decision_function(Z), expected, atol=1e-6)
    np.testing.assert_array_equal(model.support_, ref.support_)
    assert model.predict(Z).tolist() == np.where(expected > 0, 1, -1).tolist()


def test_prediction_uses_only_the_support_vectors_of_both_passes(data, tmp_path):
    X, y, Z = data
    model = ConformalSVC(C=10, gamma=2.0).fit(X, y)
    assert model.factor_.support_vectors.shape[0] == model.first_pass_.support_.shape[0] < X.shape[0]
    assert model.support_vectors_.shape[0] == model.support_.shape[0] < X.shape[0]
    loaded = load_conformal_model(model.save(tmp_path / "m.zarr"))  # no training data nor Gram in the model
    np.testing.assert_allclose(loaded.decision_function(Z), model.decision_function(Z), atol=1e-12)
    assert loaded.kappa_ == model.kappa_ and loaded.get_params() == model.get_params()
    np.testing.assert_array_equal(loaded.first_pass_.predict(Z), model.first_pass_.predict(Z))


def test_save_refuses_what_is_not_a_model(data, tmp_path):
    X, y, _ = data
    model = ConformalSVC(C=10, gamma=2.0).fit(X, y)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(ArtifactPathError):
        model.save(tmp_path / "mine", overwrite=True)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"
    with pytest.raises(ModelFormatError, match="holds a dkernel model of an SVC, not a model of ConformalSVC"):
        ConformalSVC.load(model.first_pass_.save(tmp_path / "svc.zarr"))
    # Its own model it replaces (its format is an artifact kind of its own), and it refuses the SVC model.
    path = model.save(tmp_path / "conformal.zarr")
    assert model.save(path, overwrite=True) == path
    with pytest.raises(ArtifactPathError, match="holds a dkernel model of an SVC, not a dkernel model of a Conformal"):
        model.save(tmp_path / "svc.zarr", overwrite=True)


def test_a_store_holds_the_gram_once_and_gives_the_same_model(data, tmp_path):
    X, y, Z = data
    plain = ConformalSVC(C=10, gamma=2.0, tol=1e-10).fit(X, y)
    stored = ConformalSVC(C=10, gamma=2.0, tol=1e-10, store=tmp_path / "grams").fit(X, y)
    assert len(os.listdir(tmp_path / "grams")) == 1
    np.testing.assert_allclose(stored.decision_function(Z), plain.decision_function(Z), atol=1e-6)


def test_fit_from_a_fitted_first_pass_equals_fit(data):
    X, y, Z = data
    first = SVC(C=10, gamma=2.0, tol=1e-10).fit(X, y)
    model = ConformalSVC(C=10, gamma=2.0, tol=1e-10).fit_from_first_pass(first, X, y)
    np.testing.assert_allclose(model.decision_function(Z),
                               ConformalSVC(C=10, gamma=2.0, tol=1e-10).fit(X, y).decision_function(Z), atol=1e-9)
    with pytest.raises(NotFittedError, match="not fitted: call fit"):
        ConformalSVC().fit_from_first_pass(SVC(), X, y)


@pytest.mark.parametrize("kappa", [0.0, -0.5])
def test_kappa_must_be_positive(data, kappa):
    X, y, _ = data
    with pytest.raises(InvalidParameterError, match="'kappa' parameter"):
        ConformalSVC(kappa=kappa).fit(X, y)


def test_bad_inputs_are_refused(data):
    X, y, Z = data
    with pytest.raises(ValueError, match="binary classifier"):
        ConformalSVC().fit(X, np.digitize(X[:, 0], [-0.3, 0.3]))
    with pytest.raises(ValueError, match="precomputed"):
        ConformalSVC(kernel="precomputed").fit(X @ X.T, y)
    with pytest.raises(ValueError, match="needs a kernel to evaluate D"):
        ConformalSVC(kernel=lambda A, B: A @ B.T).fit(X, y)
    with pytest.raises(NotFittedError):
        ConformalSVC().predict(Z)
    with pytest.raises(ValueError, match="Amari & Wu's κ has no default"):
        ConformalSVC(kernel="linear", conformal="amari-wu").fit(X, y)


def _primal_reference(K_tilde, d, y, C, bias):
    """min ½ cᵀK̃c + C Σ (1 - y_i f̃_i)_+ with f̃ = K̃c + b (free), K̃c + b D (scaled) or K̃c (none), by cvxpy."""
    cp = pytest.importorskip("cvxpy")
    n = y.shape[0]
    L = np.linalg.cholesky(K_tilde + 1e-12 * np.eye(n))
    c, b = cp.Variable(n), cp.Variable()
    f = K_tilde @ c + {"free": b * np.ones(n), "scaled": b * d, "none": 0 * b}[bias]
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(L.T @ c) + C * cp.sum(cp.pos(1 - cp.multiply(y, f)))))
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return c.value, float(b.value)


@pytest.mark.parametrize("conformal", ["williams", "amari-wu"])
@pytest.mark.parametrize("bias", ["free", "scaled", "none"])
def test_each_bias_reading_is_the_primal_solution_of_its_decision_function(data, conformal, bias):
    # Williams eq. 5 with eq. 1: a free b̃, b̃ D(x) (the bias feature mapped as D(x)φ(x)) or no bias.
    X, y, Z = data
    X, y = X[:60], y[:60]
    model = ConformalSVC(C=10, gamma=2.0, conformal=conformal, bias=bias, tol=1e-9).fit(X, y)
    assert model.fit_status_ == 0
    d, d_test = model.conformal_factor_, model.factor_(Z)
    K_tilde = d[:, None] * RBFKernel(gamma=2.0).block(X, X, symmetric=True) * d[None, :]
    c, b = _primal_reference(K_tilde, d, y, 10.0, bias)
    bias_test = {"free": b, "scaled": b * d_test, "none": 0.0}[bias]
    expected = d_test * ((RBFKernel(gamma=2.0).block(Z, X) * d[None, :]) @ c) + bias_test
    np.testing.assert_allclose(model.decision_function(Z), expected, atol=2e-5 * np.abs(expected).max())
    if bias == "none":
        assert model.intercept_[0] == 0.0


def test_the_bias_readings_differ_and_a_saved_model_keeps_its_reading(data, tmp_path):
    X, y, Z = data
    decisions = {}
    for bias in ("free", "scaled", "none"):
        model = ConformalSVC(C=10, gamma=2.0, bias=bias, tol=1e-9).fit(X, y)
        loaded = load_conformal_model(model.save(tmp_path / f"{bias}.zarr"))
        assert loaded.bias == bias
        np.testing.assert_allclose(loaded.decision_function(Z), model.decision_function(Z), atol=1e-12)
        decisions[bias] = model.decision_function(Z)
    # Far from the boundary D vanishes: the free reading tends to its constant, the others to 0.
    assert not np.allclose(decisions["free"], decisions["scaled"], atol=1e-3)
    assert not np.allclose(decisions["scaled"], decisions["none"], atol=1e-3)


def test_a_model_saved_before_the_bias_reading_existed_loads_as_the_free_bias(data, tmp_path):
    # Those models kept eq. 1's constant b̃: their parameters have no "bias" (and no checksums, version 1).
    X, y, Z = data
    model = ConformalSVC(C=10, gamma=2.0, bias="free", tol=1e-9).fit(X, y)
    path = Path(model.save(tmp_path / "old.zarr"))
    for folder in (path, path / "first_pass", path / "second_pass"):
        meta = json.loads((folder / "zarr.json").read_text())
        meta["attributes"].pop("checksums")
        meta["attributes"]["version"] = 1
        meta["attributes"]["params"].pop("bias", None)
        (folder / "zarr.json").write_text(json.dumps(meta))
    with pytest.warns(UnverifiedModelWarning):
        loaded = load_conformal_model(path)
    assert loaded.bias == "free"
    np.testing.assert_allclose(loaded.decision_function(Z), model.decision_function(Z), atol=1e-12)


def test_an_unknown_bias_reading_is_refused(data):
    X, y, _ = data
    with pytest.raises(InvalidParameterError, match="'bias' parameter"):
        ConformalSVC(bias="constant").fit(X, y)
