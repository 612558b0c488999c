"""The ν problems with the smallest working sets (``working_set_size`` 2 or 3).

With the sum of each label fixed (libsvm's ``Solver_NU``) a step moves a pair within one label, so a
working set of two must be the maximal violating pair of the label whose violation is the larger, as
libsvm selects it. Ground truth: scikit-learn's libsvm on the same problem, and the solver's own result
at its default working set.
"""

import warnings

import numpy as np
import pytest
from sklearn import svm
from sklearn.datasets import make_classification, make_regression

import dkernel
from dkernel.gram._sources import DenseGram
from dkernel.solver import solve_qp
from dkernel.svm._nu import nu_start

TOL = 1e-6


def _classification():
    X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    return X, y


def _regression():
    X, y = make_regression(n_samples=120, n_features=5, noise=10, random_state=0)
    return (X - X.mean(0)) / X.std(0), (y - y.mean()) / y.std()


def _fit_without_warning(estimator, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ConvergenceWarning fails the test
        return estimator.fit(X, y)


@pytest.mark.parametrize("q", [2, 3])
def test_nu_svc_with_two_or_three_variables_per_working_set_reaches_libsvm(q):
    X, y = _classification()
    ours = _fit_without_warning(dkernel.NuSVC(nu=0.3, tol=TOL, working_set_size=q, max_iter=100000), X, y)
    ref = svm.NuSVC(nu=0.3, tol=TOL).fit(X, y)
    assert ours.fit_status_ == 0 and ours.n_iter_[0] < 100000
    dec_ref = ref.decision_function(X)
    np.testing.assert_allclose(ours.decision_function(X), dec_ref, rtol=0, atol=1e-3 * np.abs(dec_ref).max())
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))


@pytest.mark.parametrize("q", [2, 3])
def test_nu_svr_with_two_or_three_variables_per_working_set_reaches_libsvm(q):
    X, y = _regression()
    # libsvm itself takes tens of thousands of pairs here (ν-SVR at C = 10): max_iter is not what stops it.
    ours = _fit_without_warning(dkernel.NuSVR(C=10, nu=0.5, tol=1e-4, working_set_size=q, max_iter=400000), X, y)
    ref = svm.NuSVR(C=10, nu=0.5, tol=1e-4).fit(X, y)
    assert ours.fit_status_ == 0
    np.testing.assert_allclose(ours.predict(X), ref.predict(X), rtol=0, atol=1e-3 * np.abs(y).max())


def test_a_working_set_of_two_moves_the_label_of_the_larger_violation():
    # The two labels' sums fixed; label -1 starts far from its optimum, label +1 at a point of small violation.
    X, y = _classification()
    z = np.where(y == 1, 1.0, -1.0)
    K = np.exp(-0.2 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    n = len(z)
    C = np.ones(n)
    nu = 0.3
    alpha0 = np.zeros(n)
    for label in (1.0, -1.0):
        members = np.flatnonzero(z == label)
        alpha0[members] = nu_start(C[members], nu * n / 2)
    E = np.vstack([z, np.ones(n)])
    problem = dict(y=z, C=C, p=np.zeros(n), E=E, e=E @ alpha0, alpha0=alpha0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        small = solve_qp(DenseGram(K), tol=TOL, working_set_size=2, max_iter=100000, **problem)
    default = solve_qp(DenseGram(K), tol=TOL, **problem)
    assert small.stop_reason == "tol" and default.stop_reason == "tol"
    assert small.objective == pytest.approx(default.objective, rel=1e-5)
    np.testing.assert_allclose(E @ small.alpha, problem["e"], rtol=0, atol=1e-9 * n)


def test_dkernel_fit_nusvc_with_a_working_set_of_two_converges(tmp_path, capsys):
    from dkernel.cli import main

    X, y = _classification()
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        main(["fit", "--learner", "nusvc", "--data", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"),
              "--working-set-size", "2", "--model", str(tmp_path / "model"), "--tol", "1e-4"])
    out = capsys.readouterr()
    assert "not converge" not in (out.out + out.err).lower()
    assert "max_iter" not in (out.out + out.err)
