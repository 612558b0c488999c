"""The solver's linear programs (multipliers, feasible start, eq. 25) survive HiGHS's presolve failing."""

from pathlib import Path

import numpy as np
import pytest
import scipy.optimize

from dkernel.solver import _bias
from dkernel.solver._bias import linear_program, minimax_multipliers

#: The multiplier LP of one 20-newsgroups talk.* pair (3200 training documents, 10 topic features) on which
#: HiGHS's presolve ended with status "Not Set" (scipy 1.16); its rows hold entries from 1e-63 to 1.
NOT_SET = Path(__file__).parent / "data" / "highs_presolve_not_set.npz"


def _reference_gap(alpha, G, C, E):
    """2 t of the minimax LP, by HiGHS's interior point without presolve, which solves it."""
    n_eq = E.shape[0]
    up, down = np.flatnonzero(alpha < C), np.flatnonzero(alpha > 0)
    A_ub = np.vstack([np.column_stack([-E[:, up].T, -np.ones(up.size)]),
                      np.column_stack([E[:, down].T, -np.ones(down.size)])])
    cost = np.zeros(n_eq + 1)
    cost[-1] = 1.0
    res = scipy.optimize.linprog(cost, A_ub=A_ub, b_ub=np.concatenate([G[up], -G[down]]),
                                 bounds=[(None, None)] * n_eq + [(0, None)], method="highs-ipm",
                                 options={"presolve": False})
    assert res.status == 0
    return 2.0 * res.fun


def test_the_multiplier_lp_that_failed_presolve_is_solved():
    data = np.load(NOT_SET)
    alpha, G, C, E = data["alpha"], data["G"], data["C"], data["E"]
    mu, gap, support = minimax_multipliers(alpha, G, C, E)
    assert gap == pytest.approx(_reference_gap(alpha, G, C, E), rel=1e-7)
    reduced = G + E.T @ mu  # every KKT violation under mu is at most gap / 2
    assert np.all(np.where(alpha < C, -reduced, -np.inf) <= gap / 2 + 1e-9)
    assert np.all(np.where(alpha > 0, reduced, -np.inf) <= gap / 2 + 1e-9)
    assert support.size <= E.shape[0] + 1


def test_a_failed_run_is_tried_again_without_presolve_then_by_interior_point(monkeypatch):
    calls = []
    real = scipy.optimize.linprog

    def flaky(cost, method, options, **problem):
        calls.append((method, dict(options)))
        result = real(cost, method=method, options=options, **problem)
        if len(calls) < 3:
            result.status, result.message = 4, "(HiGHS Status 0: Not Set)"
        return result

    monkeypatch.setattr(_bias, "linprog", flaky)
    res = linear_program(np.array([1.0, 1.0]), "test LP", A_ub=-np.eye(2), b_ub=-np.ones(2))
    assert calls == [("highs", {}), ("highs", {"presolve": False}), ("highs-ipm", {"presolve": False})]
    np.testing.assert_allclose(res.x, [1.0, 1.0])

    calls.clear()
    monkeypatch.setattr(_bias, "linprog", lambda cost, method, options, **problem: (
        calls.append(method), scipy.optimize.OptimizeResult(status=4, message="Not Set"))[1])
    with pytest.raises(RuntimeError, match="The test LP failed: Not Set"):
        linear_program(np.array([1.0]), "test LP", bounds=[(0, 1)])
    assert len(calls) == 3


def test_infeasible_constraints_are_not_tried_again_and_say_so():
    with pytest.raises(ValueError, match="no solution"):
        linear_program(np.zeros(2), "test LP", A_eq=np.array([[1.0, 1.0]]), b_eq=[5.0], bounds=[(0, 1), (0, 1)],
                       infeasible="no solution")
