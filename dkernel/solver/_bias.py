"""Intercept and equality multipliers from a (near) optimal dual point.

Sign convention: with the Lagrangian
``1/2 a^T Q a + p^T a + mu^T (E a - e) - ...`` the KKT conditions are

* ``G_i + (E^T mu)_i = 0`` if ``0 < alpha_i < C_i``,
* ``G_i + (E^T mu)_i >= 0`` if ``alpha_i = 0``,
* ``G_i + (E^T mu)_i <= 0`` if ``alpha_i = C_i``,

with ``G = Q alpha + p``. For the C-SVC (``E = y^T``, ``p = -1``) a free
``i`` gives ``y_i f(x_i) = 1`` with ``f(x) = sum_j alpha_j y_j K(x, x_j) + b``
exactly when ``mu = b``: the multiplier *is* the bias, libsvm's ``-rho``.
For ``E[q, i] = y_i phi_q(x_i)`` (the generalized bias of Li, Leung & Lee,
eq. 24) the same argument gives ``f(x) = sum_j alpha_j y_j K(x, x_j) +
sum_q mu_q phi_q(x)``: ``mu`` are the coefficients of the predefined features.
"""

import numpy as np
from scipy.optimize import linprog

__all__ = ["svc_intercept", "minimax_multipliers", "equality_multipliers", "label_levels", "label_sum_multipliers",
           "linear_program", "intercept_from_json", "intercept_to_json"]

#: Relative distance to a bound within which :func:`label_levels` counts a variable as on it (a few rounding
#: errors).
BOUND_RTOL = 1e-12

#: scipy's ``linprog`` status of an LP shown infeasible (2) or unbounded (3): no other HiGHS run answers otherwise.
_DEFINITE_FAILURES = (2, 3)
#: The HiGHS runs tried in turn: its presolve can end with status "Not Set" on LPs the simplex then solves
#: (entries spanning 60 orders of magnitude, as topic proportions give), and the interior point is the last resort.
_HIGHS_RUNS = (("highs", {}), ("highs", {"presolve": False}), ("highs-ipm", {"presolve": False}))
#: Seconds one HiGHS run may take before the next is tried. These linear programs have a few thousand
#: variables and take well under a second when HiGHS copes; on badly scaled data its simplex has been seen
#: to cycle for more than 40 minutes without an answer.
TIME_LIMIT = 60.0


def linear_program(cost, what, *, infeasible=None, time_limit=TIME_LIMIT, **problem):
    """``scipy.optimize.linprog`` with HiGHS, run again without presolve, then by interior point, if it fails.

    ``problem`` holds linprog's constraint and bound arguments; each run
    stops after ``time_limit`` seconds. Returns its result; raises
    ``ValueError(infeasible)`` when the constraints have no solution and
    that message is given, else ``RuntimeError`` naming ``what`` when no run
    succeeds (every run failed or ran out of time).
    """
    for method, options in _HIGHS_RUNS:
        res = linprog(cost, method=method, options=dict(options, time_limit=time_limit), **problem)
        if res.status == 0 or res.status in _DEFINITE_FAILURES:
            break
    if res.status == 2 and infeasible is not None:
        raise ValueError(infeasible)
    if res.status != 0:
        raise RuntimeError(f"The {what} failed: {res.message}")
    return res


def svc_intercept(alpha, G, y, C):
    """libsvm's bias ``b = -rho`` for the constraint ``y^T alpha = const``.

    ``rho`` is the mean of ``y_i G_i`` over free variables, or the midpoint of
    the interval allowed by the bounded ones when none is free.
    """
    yG = y * G
    free = (alpha > 0) & (alpha < C)
    if free.any():
        return -float(yG[free].mean())
    at_upper = alpha >= C
    at_lower = alpha <= 0
    # libsvm's calculate_rho: bounds on rho from variables stuck at 0 or C.
    ub_mask = (at_upper & (y < 0)) | (at_lower & (y > 0))
    lb_mask = (at_upper & (y > 0)) | (at_lower & (y < 0))
    ub = yG[ub_mask].min() if ub_mask.any() else np.inf
    lb = yG[lb_mask].max() if lb_mask.any() else -np.inf
    if not np.isfinite(ub):
        ub = lb
    if not np.isfinite(lb):
        lb = ub
    return -float((ub + lb) / 2)


def label_levels(alpha, G, y, C):
    """libsvm's ``Solver_NU::calculate_rho`` levels ``(r₁, r₂)``: the gradient's level on each label's free variables.

    ``r₁`` (``r₂``) is the mean gradient over the free variables of label +1 (−1), or, when none is free, the
    midpoint of the interval left by those at their bounds. A variable within :data:`BOUND_RTOL` of a bound counts
    as on it: when a label has no free variable every level of that interval satisfies the KKT conditions, and a
    variable left a rounding error off its bound would otherwise pick an end of the interval (libsvm's result then
    depends on its rounding; this one is the midpoint).
    """
    r = []
    for label in (1, -1):
        mask = y == label
        a, g, c = alpha[mask], G[mask], C[mask]
        upper, lower = a >= c * (1 - BOUND_RTOL), a <= c * BOUND_RTOL
        free = ~(upper | lower)
        if free.any():
            r.append(float(g[free].mean()))
            continue
        ub = float(g[lower].min()) if lower.any() else np.inf
        lb = float(g[upper].max()) if upper.any() else -np.inf
        r.append((ub + lb) / 2)
    return r[0], r[1]


def label_sum_multipliers(alpha, G, y, C, E):
    """The multipliers ``mu`` of two rows ``E`` that fix the sum of each label: ``(E^T mu)_i = -r`` of ``i``'s label.

    ``E``'s columns are one vector ``c₁`` on label +1 and ``c₂`` on label −1 (:func:`~._qp.label_sums_only`), so
    ``G_i + (E^T mu)_i = G_i - r`` with ``r`` the label's level (:func:`label_levels`): ``[c₁ c₂]^T mu = -(r₁, r₂)``.
    """
    positive = y > 0
    columns = np.column_stack([E[:, np.flatnonzero(positive)[0]], E[:, np.flatnonzero(~positive)[0]]])
    return np.linalg.solve(columns.T, -np.asarray(label_levels(alpha, G, y, C)))


def minimax_multipliers(alpha, G, C, E):
    """Multipliers minimising the largest KKT violation, by linear programming.

    Solves ``min_{mu, t} t`` subject to ``-(G_i + (E^T mu)_i) <= t`` for
    ``alpha_i < C_i`` and ``G_i + (E^T mu)_i <= t`` for ``alpha_i > 0``. For
    one row ``E = y^T`` the optimum is ``t = (m - M) / 2``, so ``2 t``
    generalises libsvm's stopping gap to several rows.

    Returns
    -------
    mu : ndarray of shape (l,)
    gap : float
        ``2 t``, at least ``0``.
    support : ndarray of int
        Variables whose constraints carry a positive dual weight: at most
        ``l + 1`` of them and, when ``gap > 0``, a set on which a feasible
        descent direction exists (the LP dual is the steepest feasible
        direction of Zoutendijk), so it must be part of the working set.
    """
    n_eq, n = E.shape
    can_increase = np.flatnonzero(alpha < C)
    can_decrease = np.flatnonzero(alpha > 0)
    A_ub = np.vstack(
        [
            np.column_stack([-E[:, can_increase].T, -np.ones(can_increase.size)]),
            np.column_stack([E[:, can_decrease].T, -np.ones(can_decrease.size)]),
        ]
    )
    b_ub = np.concatenate([G[can_increase], -G[can_decrease]])
    cost = np.zeros(n_eq + 1)
    cost[-1] = 1.0
    bounds = [(None, None)] * n_eq + [(0, None)]
    res = linear_program(cost, "multiplier linear program", A_ub=A_ub, b_ub=b_ub, bounds=bounds)
    weights = -res.ineqlin.marginals
    rows = np.concatenate([can_increase, can_decrease])
    support = np.unique(rows[weights > 1e-12 * max(weights.max(initial=0.0), 1e-300)])
    return res.x[:n_eq], 2.0 * float(res.x[-1]), support


def equality_multipliers(alpha, G, C, E, fallback):
    """Multipliers of ``E alpha = e`` at the solution.

    Least squares over the free variables (``G_F + E_F^T mu = 0``, the
    analogue of libsvm's mean over free vectors) when they determine ``mu``;
    otherwise ``fallback`` (the minimax multipliers, which satisfy every KKT
    condition within the stopping tolerance).
    """
    free = (alpha > 0) & (alpha < C)
    E_free = E[:, free]
    if free.sum() >= E.shape[0] and np.linalg.matrix_rank(E_free) == E.shape[0]:
        return np.linalg.lstsq(E_free.T, -G[free], rcond=None)[0]
    return np.asarray(fallback, dtype=np.float64)


def intercept_to_json(intercept):
    """The intercept as JSON holds it: a float, the list of several equality rows' multipliers, or None."""
    if intercept is None:
        return None
    return float(intercept) if np.ndim(intercept) == 0 else [float(v) for v in np.ravel(intercept)]


def intercept_from_json(value):
    """The intercept :func:`intercept_to_json` wrote: the multipliers of several rows as an array."""
    return np.asarray(value, dtype=np.float64) if isinstance(value, list) else value
