"""The generalized-bias SVM on a cluster: several equality rows solved in a task on a worker, as in one process."""

import numpy as np
import pytest

from dkernel import DenseGram
from dkernel.svm import GeneralizedBiasSVC
from dkernel.kernels import get_kernel
from dkernel.solver import solve_qp

distributed = pytest.importorskip("distributed")


def _problem(seed=0, n=120, ell=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = np.where(X[:, 0] + 0.6 * X[:, 1] ** 2 - 0.4 + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    F = np.column_stack([np.ones(n), rng.normal(size=(n, ell - 1))])
    return X, y, F


def _solve_tasks(task_stream):
    return [t for t in task_stream.data if str(t["key"]).startswith("dkernel-solve-")]


def test_several_equality_rows_are_solved_on_a_worker_as_in_this_process(nanny_cluster):
    X, y, F = _problem()
    gram = DenseGram(np.asarray(get_kernel("rbf", gamma=0.3).block(X, X)))
    E = (y[:, None] * F).T
    here = solve_qp(gram, y, 1.0, E=E, tol=1e-8)
    with distributed.get_task_stream(nanny_cluster) as stream:
        there = solve_qp(gram, y, 1.0, E=E, tol=1e-8, client=nanny_cluster)
    assert len(_solve_tasks(stream)) == 1  # the loop ran as one task on a worker
    np.testing.assert_array_max_ulp(there.alpha, here.alpha, maxulp=4)
    np.testing.assert_array_max_ulp(there.intercept, here.intercept, maxulp=4)
    assert there.n_iter == here.n_iter and there.converged


def test_the_estimator_with_a_client_and_a_store_equals_the_one_process_fit(nanny_cluster, tmp_path):
    X, y, F = _problem(seed=1, n=150)
    labels = np.where(y > 0, "b", "a")
    labels[X[:, 2] > 0.8] = "c"  # three classes: three binary problems, each with three feature rows
    table = {X[i].tobytes(): F[i] for i in range(len(X))}
    features = lambda Z: np.array([table[z.tobytes()] for z in Z])  # noqa: E731
    options = dict(C=1.0, kernel="rbf", gamma=0.3, features=features, tol=1e-8)
    here = GeneralizedBiasSVC(client=False, **options).fit(X, labels)
    with distributed.get_task_stream(nanny_cluster) as stream:
        there = GeneralizedBiasSVC(client=nanny_cluster, store=tmp_path / "grams", **options).fit(X, labels)
    assert there.gram_dtype_ == "store"
    assert len(_solve_tasks(stream)) == 3
    np.testing.assert_allclose(there.decision_function(X), here.decision_function(X), atol=1e-6)
    np.testing.assert_allclose(there.feature_coef_, here.feature_coef_, atol=1e-6)


def test_a_checkpoint_with_several_equality_rows_is_refused(tmp_path):
    X, y, F = _problem()
    gram = DenseGram(np.asarray(get_kernel("rbf", gamma=0.3).block(X, X)))
    with pytest.raises(ValueError, match="other equality rows without checkpoint"):
        solve_qp(gram, y, 1.0, E=(y[:, None] * F).T, checkpoint=tmp_path / "solve.ckpt")
    assert not (tmp_path / "solve.ckpt").exists()
