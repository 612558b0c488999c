"""An ε-SVR of a few hundred samples is solved in one working set by the compiled SMO, as a small C-SVC is, and
``max_iter=0`` means what it means in scikit-learn (no step, ``fit_status_ = 1``, a ConvergenceWarning)."""

import warnings

import numpy as np
import pytest
import sklearn.svm
from sklearn.exceptions import ConvergenceWarning

import dkernel
from dkernel import solver


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 6))
    return X, X[:, 0] - 0.5 * X[:, 1] + 0.1 * rng.normal(size=200)


def test_a_small_svr_is_solved_by_the_compiled_smo(regression, monkeypatch):
    X, y = regression

    def block_solver(*args, **kwargs):
        raise AssertionError("the block solver was called for a problem of one working set")

    monkeypatch.setattr(solver, "solve_qp", block_solver)
    model = dkernel.SVR(C=2.0, epsilon=0.05).fit(X, y)
    assert model.n_iter_ == 1


@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly"])
def test_a_small_svr_is_libsvms_solution(regression, kernel):
    X, y = regression
    # Both solved far below the default tolerance: the same optimum, whatever path each takes to it.
    ours = dkernel.SVR(kernel=kernel, C=2.0, epsilon=0.05, tol=1e-8).fit(X, y)
    theirs = sklearn.svm.SVR(kernel=kernel, C=2.0, epsilon=0.05, tol=1e-8).fit(X, y)
    np.testing.assert_array_equal(ours.support_, theirs.support_)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), atol=1e-4)
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, atol=1e-4)


def test_a_small_svr_equals_the_block_solvers_optimum(regression):
    X, y = regression
    small = dkernel.SVR(C=2.0, epsilon=0.05, tol=1e-8).fit(X, y)
    block = dkernel.SVR(C=2.0, epsilon=0.05, tol=1e-8, working_set_size=64).fit(X, y)
    assert block.n_iter_ > 1
    np.testing.assert_allclose(small.predict(X), block.predict(X), atol=1e-6)
    np.testing.assert_allclose(small.objective_, block.objective_, rtol=1e-9)


@pytest.mark.parametrize("name", ["SVC", "NuSVC", "SVR", "NuSVR", "OneClassSVM"])
def test_max_iter_zero_is_scikit_learns(name):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 4))
    y = {"SVC": X[:, 0] > 0, "NuSVC": X[:, 0] > 0, "OneClassSVM": None}.get(name, X[:, 0])
    if y is not None and y.dtype == bool:
        y = y.astype(int)
    with pytest.warns(ConvergenceWarning, match="max_iter=0"):
        ours = getattr(dkernel, name)(max_iter=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        theirs = getattr(sklearn.svm, name)(max_iter=0).fit(X, y)
    assert ours.fit_status_ == theirs.fit_status_ == 1
    np.testing.assert_array_equal(ours.support_, theirs.support_)
    if name in ("SVR", "NuSVR"):  # a constant: the intercept, to rounding
        np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))


def test_predict_on_a_regression_model_says_values_and_refuses_decision(tmp_path, monkeypatch, capsys):
    from dkernel.cli import main

    monkeypatch.chdir(tmp_path)
    X = np.random.default_rng(2).normal(size=(60, 3))
    np.save("X.npy", X)
    dkernel.SVR().fit(X, X[:, 0]).save("m.zarr")
    assert main(["predict", "--model", "m.zarr", "--data", "X.npy", "--out", "p.npy"]) == 0
    assert "predicted values written to p.npy" in capsys.readouterr().out
    assert main(["predict", "--model", "m.zarr", "--data", "X.npy", "--decision", "d.npy"]) == 2
    assert "--decision: the SVR model in --model m.zarr has no decision values" in capsys.readouterr().err
    assert not (tmp_path / "d.npy").exists()
