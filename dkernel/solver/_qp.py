"""The quadratic program, its validated inputs, the solver's options and its result.

.. math::

    \\min_\\alpha \\tfrac12 \\alpha^\\top Q \\alpha + p^\\top \\alpha
    \\quad\\text{s.t.}\\quad 0 \\le \\alpha_i \\le C_i,\\; E\\alpha = e,
    \\qquad Q_{ij} = y_i y_j K_{ij}.
"""

import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ._bias import linear_program
from ._rows import check_provider

__all__ = [
    "QPProblem",
    "QPResult",
    "check_problem",
    "check_solver_options",
    "default_working_set_size",
    "prepare_problem",
    "qp_result",
]

# Tolerance on the equality constraints of a user-supplied start, relative to
# the scale of E and e.
FEASIBILITY_RTOL = 1e-8


@dataclass
class QPResult:
    """Solution of the dual QP.

    Attributes
    ----------
    alpha : ndarray of shape (n,)
        Dual variables, ``0 <= alpha <= C`` and ``E @ alpha = e``.
    intercept : float or ndarray of shape (l,)
        Multipliers of the equality constraints with the convention that, at
        the optimum, ``G_i + (E^T intercept)_i = 0`` for every free ``alpha_i``.
        For the C-SVC (``E = y^T``) this is the bias ``b`` of
        ``f(x) = sum_i alpha_i y_i K(x, x_i) + b`` (scikit-learn's
        ``intercept_`` when the positive class is the second one). For
        ``E[q, i] = y_i phi_q(x_i)`` it is the vector ``lambda`` of
        ``f(x) = sum_i alpha_i y_i K(x, x_i) + sum_q lambda_q phi_q(x)``.
    objective : float
        Dual objective ``1/2 alpha^T Q alpha + p^T alpha``.
    n_iter : int
        Outer (working-set) iterations.
    converged : bool
        Whether the stopping criterion ``gap <= tol`` was met.
    stop_reason : str
        ``"tol"``, ``"max_iter"`` or ``"stalled"`` (no working set could make
        progress before the tolerance was met).
    gap : float
        Final maximal KKT violation ``m(alpha) - M(alpha)`` (libsvm's
        criterion); for several equality rows, twice the smallest maximal
        violation over all multipliers, which reduces to ``m - M`` for one row.
    gradient : ndarray of shape (n,)
        ``G = Q alpha + p``.
    n_kernel_rows : int
        Kernel rows requested from the provider.
    """

    alpha: np.ndarray
    intercept: object
    objective: float
    n_iter: int
    converged: bool
    stop_reason: str
    gap: float
    gradient: np.ndarray
    n_kernel_rows: int = 0

    def decision_function(self, K_test_train, y):
        """Return ``K_test_train @ (alpha * y) + intercept`` for one equality row.

        Parameters
        ----------
        K_test_train : ndarray of shape (m, n)
            Kernel values between test and training samples.
        y : ndarray of shape (n,)
            Training labels in ``{-1, +1}``.
        """
        if np.ndim(self.intercept) != 0:
            raise ValueError(
                "decision_function needs a scalar intercept; with several equality rows add "
                "sum_q intercept[q] * phi_q(x) to K_test_train @ (alpha * y) yourself."
            )
        return np.asarray(K_test_train) @ (self.alpha * y) + self.intercept


@dataclass
class QPProblem:
    """Validated inputs of :func:`solve_qp` (all float64, E two-dimensional)."""

    y: np.ndarray
    C: np.ndarray
    p: np.ndarray
    E: np.ndarray
    e: np.ndarray
    alpha0: np.ndarray
    is_svc_constraint: bool
    #: Whether ``E α = e`` fixes only the sum of ``α`` over each label (``y = +1`` and ``y = −1``): libsvm's
    #: ν problems (:func:`label_sums_only`), solved by the SMO loop with pairs within a label (libsvm's Solver_NU).
    label_sums: bool = False

    @property
    def n(self):
        return self.y.shape[0]

    @property
    def n_eq(self):
        return self.E.shape[0]


def _check_labels(y, n):
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y must have shape ({n},) to match the {n} rows of the kernel; got shape {y.shape}.")
    bad = ~np.isin(y, (-1, 1))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"y must contain only -1 and +1; y[{first}] = {y[first]!r}. "
            "Encode the two classes as -1/+1 (e.g. y = np.where(labels == positive, 1, -1))."
        )
    return y.astype(np.float64)


def _check_upper_bounds(C, n):
    C = np.asarray(C, dtype=np.float64)
    if C.ndim == 0:
        C = np.full(n, float(C))
    if C.shape != (n,):
        raise ValueError(f"C must be a scalar or have shape ({n},); got shape {C.shape}.")
    bad = ~(C > 0)  # +inf is the hard margin, as in libsvm; NaN fails the comparison
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"C must be finite and > 0 (or inf, the hard margin) for every sample; C[{first}] = {C[first]!r}."
        )
    return C


def _check_equality(E, e, y, n):
    if E is None:
        if e is not None:
            raise ValueError("e was given without E; pass both or neither.")
        return y[None, :].copy(), np.zeros(1), True
    E = np.asarray(E, dtype=np.float64)
    if E.ndim == 1:
        E = E[None, :]
    if E.ndim != 2 or E.shape[1] != n:
        raise ValueError(f"E must have shape (l, {n}); got shape {E.shape}.")
    if not np.isfinite(E).all():
        raise ValueError("E contains NaN or infinite values.")
    e = np.zeros(E.shape[0]) if e is None else np.atleast_1d(np.asarray(e, dtype=np.float64))
    if e.shape != (E.shape[0],):
        raise ValueError(f"e must have shape ({E.shape[0]},) to match E; got shape {e.shape}.")
    if np.linalg.matrix_rank(E) < E.shape[0]:
        raise ValueError(
            f"The {E.shape[0]} rows of E are linearly dependent; remove the redundant constraints."
        )
    return E, e, False


def label_sums_only(E, y):
    """Whether the rows ``E`` (two, independent) constrain only ``Σ_{y_i=+1} α_i`` and ``Σ_{y_i=−1} α_i``.

    Each row is then constant on either label, and ``E α = e`` is equivalent
    to fixing both sums: libsvm's ``Solver_NU`` (ν-SVC's ``[y; 1]``, ν-SVR's
    ``[z; 1]``), whose working pairs stay within one label (Chang & Lin 2001).
    """
    positive = y > 0
    if E.shape[0] != 2 or positive.all() or not positive.any():
        return False
    return all(np.ptp(row[positive]) == 0 and np.ptp(row[~positive]) == 0 for row in E)


def feasible_start(C, E, e):
    """Return a point of ``{0 <= alpha <= C, E alpha = e}`` (a vertex found by linear programming).

    Raises
    ------
    ValueError
        If the constraints have no solution.
    """
    if not e.any():
        return np.zeros_like(C)
    res = linear_program(np.zeros(C.shape[0]), "linear program of a feasible start", A_eq=E, b_eq=e,
                         bounds=np.column_stack([np.zeros_like(C), C]),
                         infeasible="The constraints 0 <= alpha <= C, E alpha = e have no solution; check e and "
                                    "the bounds C.")
    return np.clip(res.x, 0.0, C)


def _check_start(alpha0, C, E, e, n):
    if alpha0 is None:
        return feasible_start(C, E, e)
    alpha0 = np.array(alpha0, dtype=np.float64)
    if alpha0.shape != (n,):
        raise ValueError(f"alpha0 must have shape ({n},); got shape {alpha0.shape}.")
    slack = 1e-12 * C
    if np.any(alpha0 < -slack) or np.any(alpha0 > C + slack):
        raise ValueError("alpha0 must satisfy 0 <= alpha0 <= C.")
    alpha0 = np.clip(alpha0, 0.0, C)
    residual = np.abs(E @ alpha0 - e)
    scale = np.abs(E) @ np.abs(alpha0) + np.abs(e) + 1.0
    if np.any(residual > FEASIBILITY_RTOL * scale):
        raise ValueError(
            f"alpha0 violates E alpha0 = e by up to {residual.max():.3g}; pass a feasible start "
            "(for the C-SVC: sum_i y_i alpha0_i = 0)."
        )
    return alpha0


def check_problem(n, y, C, p, E, e, alpha0):
    """Validate and convert the inputs of :func:`solve_qp`.

    Raises
    ------
    ValueError
        On labels other than +-1, non-positive bounds, shape mismatches,
        non-finite values or an infeasible start.
    """
    y = _check_labels(y, n)
    C = _check_upper_bounds(C, n)
    if p is None:
        p = -np.ones(n)
    else:
        p = np.asarray(p, dtype=np.float64)
        if p.shape != (n,):
            raise ValueError(f"p must have shape ({n},); got shape {p.shape}.")
        if not np.isfinite(p).all():
            raise ValueError("p contains NaN or infinite values.")
    E, e, is_svc = _check_equality(E, e, y, n)
    if E.shape[0] == 1 and np.array_equal(E[0], y):
        # SMO pairs keep sum_i y_i alpha_i constant, whatever its value.
        is_svc = True
    alpha0 = _check_start(alpha0, C, E, e, n)
    return QPProblem(y=y, C=C, p=p, E=E, e=e, alpha0=alpha0, is_svc_constraint=is_svc,
                     label_sums=not is_svc and label_sums_only(E, y))


#: SMO working-set size in this process. Measured (one-vs-one USPS problems of ~1500 points;
#: make_classification n = 12000 with a third and two thirds of the points support vectors):
#: q = 128 takes 0.4-0.8x the time of q = 512, which fetches more rows than the solution needs
#: and moves q × n kernel values per iteration; q = 64 pays more outer iterations. It counts rows: where
#: two variables share a row (ε-SVR's and ν-SVR's α_i, α*_i) the working set holds 256 variables (Friedman #1,
#: n = 20000: 5.4 s against 6.4 s with 128, the iterations 841 against 2138).
LOCAL_WORKING_SET_SIZE = 128
#: SMO working-set size with the gradient on Dask workers: each iteration is a round trip to every
#: worker, so fewer and larger iterations.
DISTRIBUTED_WORKING_SET_SIZE = 512


def default_working_set_size(n, n_eq, distributed=False):
    """Working-set size: SMO's (:data:`LOCAL_WORKING_SET_SIZE`, or :data:`DISTRIBUTED_WORKING_SET_SIZE`
    on Dask workers), moderate for the dense active-set solver."""
    if n_eq == 1:
        return min(n, DISTRIBUTED_WORKING_SET_SIZE if distributed else LOCAL_WORKING_SET_SIZE)
    return min(n, max(64, 2 * (n_eq + 1)))


def check_solver_options(tol, working_set_size, max_iter, prob, distributed=False):
    """Validate ``tol`` and ``max_iter``; return the working-set size ``q``."""
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a positive number; got {tol!r}.")
    if int(max_iter) != max_iter or max_iter < 0:  # 0: no step, α stays where it starts (libsvm's max_iter=0)
        raise ValueError(f"max_iter must be a non-negative integer; got {max_iter!r}.")
    if working_set_size is None:
        if prob.label_sums:  # SMO, its gradient where the loop runs (this process or one worker)
            return default_working_set_size(prob.n, 1)
        return default_working_set_size(prob.n, prob.n_eq, distributed)
    if int(working_set_size) != working_set_size or working_set_size < 2:
        raise ValueError(f"working_set_size must be an integer >= 2; got {working_set_size!r}.")
    return int(min(working_set_size, prob.n))


def prepare_problem(rows, y, C, p, E, e, alpha0, *, tol, working_set_size, max_iter, distributed=False):
    """Validate the row provider, the problem and the options of :func:`solve_qp`; return ``(prob, q)``."""
    y_arr = np.asarray(y)
    check_provider(rows, y_arr.shape[0] if y_arr.ndim == 1 else -1)
    prob = check_problem(rows.n, y, C, p, E, e, alpha0)
    q = check_solver_options(tol, working_set_size, max_iter, prob, distributed)
    if working_set_size is None:  # the defaults count rows: a view whose variables share rows holds more of them
        q = min(prob.n, q * int(getattr(rows, "variables_per_row", 1)))
    return prob, q


def _warn_not_converged(max_iter, gap, tol):
    warnings.warn(
        # scikit-learn's words first (code that filters its warning filters this one), then the gap.
        f"Solver terminated early (max_iter={max_iter}).  Consider pre-processing your data with "
        f"StandardScaler or MinMaxScaler. The QP solver's KKT gap is {gap:.3g} > tol={tol:g}: increase "
        "max_iter or tol, or scale the data so that the kernel is better conditioned.",
        ConvergenceWarning,
        stacklevel=3,
    )


def qp_result(prob, alpha, G, intercept, n_iter, stop_reason, gap, n_rows, *, tol, max_iter):
    """The :class:`QPResult` of a finished loop; warns when it stopped at ``max_iter``."""
    if stop_reason == "max_iter":
        _warn_not_converged(max_iter, gap, tol)
    objective = 0.5 * float(alpha @ (G + prob.p))
    return QPResult(
        alpha=alpha,
        intercept=intercept,
        objective=objective,
        n_iter=n_iter,
        converged=stop_reason == "tol",
        stop_reason=stop_reason,
        gap=float(gap),
        gradient=G,
        n_kernel_rows=n_rows,
    )
