"""The ν problems on the SMO loop: two equality rows that fix the sum of each label (libsvm's ``Solver_NU``).

Ground truth: the general active-set loop of the solver (several equality rows, a linear program for the
multipliers), the gradient recomputed from scratch, and the constraints themselves.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_friedman1

import dkernel
from dkernel.gram._sources import DenseGram
from dkernel.solver import Checkpoint, solve_qp
from dkernel.solver._loop import general_equality_loop
from dkernel.solver._qp import label_sums_only, prepare_problem
from dkernel.svm._nu import nu_start
from dkernel.svm._svr import EpsilonSVRGram


def _nu_svr_problem(n=80, nu=0.4, seed=0, kernel="rbf"):
    """ν-SVR's dual on the 2n variables (α, α*): rows, labels z, bounds, p, E, e and libsvm's start."""
    X, y = make_friedman1(n, random_state=seed)
    y = (y - y.mean()) / y.std()
    gamma = 1.0 / (X.shape[1] * X.var())
    K = np.exp(-gamma * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)) if kernel == "rbf" else \
        (gamma * X @ X.T + 1.0) ** 2
    C = np.full(n, 2.0)
    z = np.r_[np.ones(n), -np.ones(n)]
    total = nu * C.sum()
    half = nu_start(C, total / 2)
    E = np.vstack([z, np.ones(2 * n)])
    problem = dict(y=z, C=np.r_[C, C], p=np.r_[-y, y], E=E, e=np.array([0.0, total]), alpha0=np.r_[half, half])
    return EpsilonSVRGram(DenseGram(K)), K, problem


def test_two_rows_that_fix_the_sum_of_each_label_are_recognised():
    y = np.r_[np.ones(3), -np.ones(2)]
    assert label_sums_only(np.vstack([y, np.ones(5)]), y)  # ν-SVC's [y; 1]
    assert label_sums_only(np.vstack([2 * y + 1, 3 * np.ones(5)]), y)
    assert not label_sums_only(np.vstack([y, np.arange(5.0)]), y)  # a generalized bias feature
    assert not label_sums_only(np.ones((1, 5)), y)
    assert not label_sums_only(np.vstack([np.ones(5), np.arange(5.0)]), np.ones(5))  # one label only


@pytest.mark.parametrize("kernel", ["rbf", "poly"])
def test_the_smo_loop_reaches_the_optimum_of_the_general_loop(kernel):
    rows, K, problem = _nu_svr_problem(kernel=kernel)
    result = solve_qp(rows, tol=1e-9, **problem)
    assert result.converged and result.stop_reason == "tol"
    prob, q = prepare_problem(rows, tol=1e-9, working_set_size=None, max_iter=100000, **problem)
    assert prob.label_sums and q == min(2 * len(K), 2 * 128)  # the default counts rows: 128, two variables each
    alpha, G, _, _, stop, _, _ = general_equality_loop(rows, prob, tol=1e-9, q=64, max_iter=100000, callback=None,
                                                       verbose=False)
    assert stop == "tol"
    reference = 0.5 * float(alpha @ (G + prob.p))
    assert result.objective == pytest.approx(reference, rel=1e-9)
    # Feasible: the box, and both sums where the start put them.
    alpha = result.alpha
    assert np.all(alpha >= 0) and np.all(alpha <= problem["C"])
    np.testing.assert_allclose(problem["E"] @ alpha, problem["e"], rtol=0, atol=1e-10 * problem["e"][1])
    # The gradient the loop kept (updated over each column once, then expanded to both halves) is exact.
    beta = alpha[: len(K)] - alpha[len(K):]
    exact = np.r_[K @ beta, -(K @ beta)] + problem["p"]
    np.testing.assert_allclose(result.gradient, exact, rtol=0, atol=1e-10 * np.abs(exact).max())
    # The multipliers: G_i + (Eᵀμ)_i = 0 on the free variables.
    free = (alpha > 1e-9) & (alpha < problem["C"] - 1e-9)
    residual = result.gradient + problem["E"].T @ result.intercept
    assert np.abs(residual[free]).max() < 1e-6


def test_a_stopped_nu_solve_resumes_on_the_path_of_an_uninterrupted_one(tmp_path, solver_log):
    rows, _, problem = _nu_svr_problem(n=150)
    options = dict(tol=1e-6, working_set_size=16, **problem)
    whole = solve_qp(rows, **options)
    path = tmp_path / "nu.ckpt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stopped = solve_qp(rows, checkpoint=Checkpoint(path, every_iter=5), callback=lambda it, a, g: it == 21,
                           **options)
    assert stopped.stop_reason == "callback" and stopped.n_iter == 21 < whole.n_iter
    resumed = solve_qp(rows, checkpoint=path, **options)
    assert any("resuming from the checkpoint" in m and m.endswith(" 21") for m in solver_log)
    np.testing.assert_array_max_ulp(resumed.alpha, whole.alpha, maxulp=4)
    assert resumed.n_iter == whole.n_iter
    np.testing.assert_allclose(resumed.intercept, whole.intercept, rtol=1e-12)
    # Another ν (the sum of each label elsewhere) is another problem: refused, and named.
    other = dict(options, e=problem["e"] * 0.9, alpha0=problem["alpha0"] * 0.9)
    with pytest.raises(ValueError, match=r"the equality values e \(nu\)"):
        solve_qp(rows, checkpoint=path, **other)


def test_nu_estimators_resume_from_their_checkpoint(tmp_path, solver_log):
    X, y = make_classification(200, 6, n_classes=3, n_informative=4, random_state=0)
    first = dkernel.NuSVC(nu=0.3, checkpoint=tmp_path / "nusvc").fit(X, y)
    again = dkernel.NuSVC(nu=0.3, checkpoint=tmp_path / "nusvc").fit(X, y)
    assert sum("holds the solution" in m for m in solver_log) == 3  # each pair of classes: solved, not solved again
    np.testing.assert_array_equal(again.decision_function(X), first.decision_function(X))
    Xr, yr = make_friedman1(150, random_state=1)
    first = dkernel.NuSVR(nu=0.3, checkpoint=tmp_path / "nusvr").fit(Xr, yr)
    again = dkernel.NuSVR(nu=0.3, checkpoint=tmp_path / "nusvr").fit(Xr, yr)
    assert sum("holds the solution" in m for m in solver_log) == 4
    np.testing.assert_array_equal(again.predict(Xr), first.predict(Xr))
    with pytest.raises(ValueError, match="nu"):
        dkernel.NuSVR(nu=0.5, checkpoint=tmp_path / "nusvr").fit(Xr, yr)
