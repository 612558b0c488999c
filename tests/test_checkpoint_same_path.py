"""Writing a solver checkpoint does not change the solver's path, and a resume continues on that path.

A checkpoint's write used to take the exact gradient of every variable, which undoes the shrinking of the active
set: a fit that wrote checkpoints took another path than one that wrote none (the user's 5000 x 10 linear fit at
C = 1000: 34020 iterations without checkpoints, 33819 to 34503 with them, depending on when they were written).
Checkpoints are written every few iterations here (no timing), so that several fall within each fit.
"""

import warnings

import numpy as np
import pytest

from dkernel import SVC
from dkernel.gram._sources import DenseGram
from dkernel.solver import Checkpoint, solve_qp

N = 800
EVERY = 500  # iterations between two checkpoints: several in a fit of thousands of iterations
PARAMS = dict(kernel="linear", C=1000.0)


def _data(n=N, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 10))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _every(path):
    return Checkpoint(path, every_iter=EVERY, every_seconds=None)


def _same_fit(a, b):
    assert b.n_iter_.tolist() == a.n_iter_.tolist()
    assert np.array_equal(b.dual_coef_, a.dual_coef_)
    assert np.array_equal(b.intercept_, a.intercept_)
    assert np.array_equal(b.support_, a.support_)


@pytest.fixture(scope="module")
def whole_fit():
    X, y = _data()
    model = SVC(**PARAMS).fit(X, y)
    assert model.n_iter_[0] > 4 * EVERY  # several checkpoints fall within the fit
    return X, y, model


def test_writing_checkpoints_leaves_the_fit_as_it_is(tmp_path, whole_fit):
    X, y, whole = whole_fit
    checkpointed = SVC(checkpoint=_every(tmp_path / "fit.ckpt"), **PARAMS).fit(X, y)
    _same_fit(whole, checkpointed)


def test_a_fit_stopped_at_max_iter_resumes_on_the_path_of_an_uninterrupted_one(tmp_path, whole_fit):
    X, y, whole = whole_fit
    path = tmp_path / "fit.ckpt"
    stop = 3 * EVERY + 137  # between two checkpoints, and not a multiple of the shrinking interval
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the ConvergenceWarning of max_iter
        stopped = SVC(checkpoint=_every(path), max_iter=stop, **PARAMS).fit(X, y)
    assert stopped.n_iter_[0] == stop
    resumed = SVC(checkpoint=_every(path), **PARAMS).fit(X, y)
    _same_fit(whole, resumed)


def _qp():
    X, y = _data(seed=1)
    return DenseGram(X @ X.T), np.where(y == 1, 1.0, -1.0)


OPTIONS = dict(tol=1e-3, working_set_size=16)
C_QP = 100.0  # about 17000 iterations


def test_writing_checkpoints_leaves_a_solve_as_it_is(tmp_path):
    rows, y = _qp()
    whole = solve_qp(rows, y, C_QP, **OPTIONS)
    written = solve_qp(rows, y, C_QP, checkpoint=Checkpoint(tmp_path / "qp.ckpt", every_iter=700, every_seconds=None),
                       **OPTIONS)
    assert written.n_iter == whole.n_iter > 5 * 700
    assert np.array_equal(written.alpha, whole.alpha) and np.array_equal(written.gradient, whole.gradient)
    assert written.intercept == whole.intercept


@pytest.mark.parametrize("stop_at", [2000, 5043])
def test_a_solve_stopped_by_its_callback_resumes_on_the_path_of_an_uninterrupted_one(tmp_path, stop_at):
    rows, y = _qp()
    whole = solve_qp(rows, y, C_QP, **OPTIONS)
    assert whole.n_iter > 2 * stop_at
    path = tmp_path / "stopped.ckpt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Written only when the callback stops the solve: the resume alone is tested.
        stopped = solve_qp(rows, y, C_QP, checkpoint=Checkpoint(path, every_seconds=None),
                           callback=lambda it, alpha, gap: it == stop_at, **OPTIONS)
    assert stopped.stop_reason == "callback" and stopped.n_iter == stop_at
    resumed = solve_qp(rows, y, C_QP, checkpoint=path, **OPTIONS)
    assert resumed.n_iter == whole.n_iter and resumed.n_kernel_rows == whole.n_kernel_rows
    assert np.array_equal(resumed.alpha, whole.alpha)
    assert np.array_equal(resumed.gradient, whole.gradient)
    assert resumed.intercept == whole.intercept
