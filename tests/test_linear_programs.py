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
    limit = {"time_limit": _bias.TIME_LIMIT}
    assert calls == [("highs", limit), ("highs", dict(limit, presolve=False)),
                     ("highs-ipm", dict(limit, presolve=False))]
    np.testing.assert_allclose(res.x, [1.0, 1.0])

    calls.clear()
    monkeypatch.setattr(_bias, "linprog", lambda cost, method, options, **problem: (
        calls.append(method), scipy.optimize.OptimizeResult(status=4, message="Not Set"))[1])
    with pytest.raises(RuntimeError, match="The test LP failed: Not Set"):
        linear_program(np.array([1.0]), "test LP", bounds=[(0, 1)])
    assert len(calls) == 3


def test_a_run_out_of_time_is_a_failure_named_as_such():
    """HiGHS's simplex has cycled for more than 40 minutes on badly scaled topic features: every run stops."""
    rng = np.random.default_rng(0)
    A = rng.random((1500, 1500))  # each run needs far longer than 0.05 s
    with pytest.raises(RuntimeError, match="The test LP failed: Time limit reached"):
        linear_program(-np.ones(1500), "test LP", A_ub=A, b_ub=np.ones(1500), time_limit=0.05)


def test_infeasible_constraints_are_not_tried_again_and_say_so():
    with pytest.raises(ValueError, match="no solution"):
        linear_program(np.zeros(2), "test LP", A_eq=np.array([[1.0, 1.0]]), b_eq=[5.0], bounds=[(0, 1), (0, 1)],
                       infeasible="no solution")


#: The feasible-support LP of one 20-newsgroups comp.* pair (100 training documents, 10 topic features) on
#: which every HiGHS run ended "model_status Unknown" (scipy 1.16); the features separate the pair.
CONE_UNKNOWN = Path(__file__).parent / "data" / "highs_cone_unknown.npz"


@pytest.mark.parametrize("seed", range(6))
def test_samples_held_at_zero_agree_between_the_cone_and_its_dual(seed):
    from dkernel.svm._generalized_bias import held_samples, positive_cone_point

    rng = np.random.default_rng(seed)
    E = rng.normal(size=(3, 30))
    E[0, : 10 + seed] = np.abs(E[0, : 10 + seed])  # a row positive on some samples: it holds them at zero
    E[0, 10 + seed:] = 0.0
    alpha, held = positive_cone_point(E)
    np.testing.assert_array_equal(held_samples(E), held)
    assert held[: 10 + seed].all() and not held[10 + seed:].all()
    np.testing.assert_allclose(E @ alpha, 0.0, atol=1e-9)
    assert (alpha[~held] > 0).all() and (alpha[held] == 0).all()


def test_a_cone_lp_highs_cannot_solve_falls_back_to_its_dual():
    from dkernel.svm._generalized_bias import held_samples, positive_cone_point

    E = np.load(CONE_UNKNOWN)["E"]
    alpha, held = positive_cone_point(E)
    assert held.all()  # some λ fits every sample: E^T λ > 0
    assert alpha is None or not alpha.any()
    np.testing.assert_array_equal(held_samples(E), held)
