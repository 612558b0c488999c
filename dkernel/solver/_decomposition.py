"""Block-coordinate decomposition: the outer loop of the solver.

Each iteration selects a working set ``B`` of ``q`` variables by maximal KKT
violation, fetches the kernel rows ``K[B, :]`` once, solves the sub-problem on
``B`` with the other variables fixed, and updates the gradient

.. math::  G \\leftarrow G + Q_{:, B} \\Delta\\alpha_B
           = G + y \\odot K_{B,:}^\\top (y_B \\odot \\Delta\\alpha_B),

one BLAS matrix-vector product. With one equality row ``y^T alpha = const``
the sub-problem is solved by SMO (:mod:`._smo`); with several rows by an exact
active-set method (:mod:`._active_set`). The loop follows ThunderSVM's
``CSMOSolver::solve`` (select, get rows, local SMO, update f, stop on the gap).
"""

import warnings

import numpy as np
from dask.utils import format_time
from sklearn.exceptions import ConvergenceWarning

from .._dask import StatusLine

from ._active_set import solve_box_equality_qp
from ._bias import equality_multipliers, minimax_multipliers, svc_intercept
from ._gradient import GRADIENT_BLOCK_ROWS, GradientPartition, SlotMap
from ._qp import QPResult, check_problem
from ._select import choose_working_set, merge_candidates
from ._smo import smo_subproblem

__all__ = ["solve_qp", "initial_gradient", "default_working_set_size"]

# The sub-problem is solved until its gap falls to this fraction of its first
# gap (ThunderSVM's local rule): a partial solve is enough while the outer
# gradient is still far from optimal, and saves inner iterations.
INNER_RELATIVE_TOL = 0.1
# Pair updates per working-set variable before the inner SMO gives up.
INNER_ITER_PER_VARIABLE = 10


def default_working_set_size(n, n_eq):
    """Working-set size: large for SMO (rows are reused), moderate for the dense active-set solver."""
    if n_eq == 1:
        return min(n, 512)
    return min(n, max(64, 2 * (n_eq + 1)))


def _fetch_rows(rows, idx):
    block = np.asarray(rows.rows(idx), dtype=np.float64)
    if block.shape != (len(idx), rows.n):
        raise ValueError(
            f"rows.rows(idx) returned shape {block.shape} for {len(idx)} indices; expected "
            f"({len(idx)}, {rows.n})."
        )
    return block


def _raise_nonfinite_rows(idx, block):
    bad = ~np.isfinite(block).all(axis=1)
    first = int(np.asarray(idx)[np.flatnonzero(bad)[0]]) if bad.any() else int(np.asarray(idx)[0])
    raise ValueError(
        f"The kernel rows contain NaN or infinite values (first in row {first}); check the data "
        "and the kernel parameters (e.g. an overflowing polynomial degree)."
    )


def initial_gradient(rows, y, p, alpha):
    """Return ``G = Q alpha + p``, reading the rows of the non-zero ``alpha`` only."""
    G = p.copy()
    support = np.flatnonzero(alpha)
    for s in range(0, support.size, GRADIENT_BLOCK_ROWS):
        idx = support[s : s + GRADIENT_BLOCK_ROWS]
        block = _fetch_rows(rows, idx)
        G += y * (block.T @ (y[idx] * alpha[idx]))
    if not np.isfinite(G).all():
        _raise_nonfinite_rows(support, _fetch_rows(rows, support))
    return G


def _check_provider(rows, n_y):
    for member in ("n", "rows", "diag"):
        if not hasattr(rows, member):
            raise TypeError(
                f"rows must provide n, rows(idx) and diag(); {type(rows).__name__} has no {member!r}. "
                "Wrap an in-memory kernel matrix with DenseRows(K)."
            )
    if rows.n != n_y:
        raise ValueError(f"The row provider has n={rows.n} samples but y has {n_y}.")
    diag = np.asarray(rows.diag(), dtype=np.float64)
    if diag.shape != (rows.n,):
        raise ValueError(f"rows.diag() must have shape ({rows.n},); got {diag.shape}.")
    if not np.isfinite(diag).all():
        first = int(np.flatnonzero(~np.isfinite(diag))[0])
        raise ValueError(
            f"The kernel diagonal contains NaN or infinite values (first at {first}); check the data "
            "and the kernel parameters."
        )
    return diag


def _warn_not_converged(max_iter, gap, tol):
    warnings.warn(
        f"The QP solver stopped after max_iter={max_iter} iterations with KKT gap {gap:.3g} > "
        f"tol={tol:g}. Increase max_iter, increase tol, or scale the data (e.g. StandardScaler) "
        "so that the kernel is better conditioned.",
        ConvergenceWarning,
        stacklevel=3,
    )


class _Progress:
    """The solver's verbose display on stderr: one status line, then whether it converged.

    On a terminal the line (iteration, KKT gap against ``tol``, support
    vectors and free ones, elapsed time) is rewritten in place; otherwise it
    is printed every few seconds (:class:`dkernel._dask.StatusLine`). The
    final line says ``converged`` or ``NOT converged`` and why.
    """

    def __init__(self, verbose, tol, max_iter):
        self.line = StatusLine(enabled=bool(verbose))
        self.tol, self.max_iter = tol, max_iter

    def due(self):
        return self.line.due()

    def _counts(self, alpha, C):
        n_sv = int(np.count_nonzero(alpha))
        n_free = int(np.count_nonzero((alpha > 0) & (alpha < C)))
        return f"SV {n_sv}  free SV {n_free}  {format_time(self.line.elapsed)}"

    def show(self, it, gap, alpha, C):
        self.line.show(f"[dkernel.solver] iter {it}  gap {gap:.3e} (tol {self.tol:g})  {self._counts(alpha, C)}",
                       force=True)

    def close(self, it, stop_reason, gap, alpha, C):
        if not self.line.enabled:
            return
        verdict = {
            "tol": f"converged: gap {gap:.3e} <= tol {self.tol:g}",
            "max_iter": f"NOT converged: max_iter={self.max_iter} reached with gap {gap:.3e} > tol {self.tol:g}",
            "stalled": f"NOT converged: no working set improves the objective, gap {gap:.3e} > tol {self.tol:g}",
            "callback": f"stopped by the callback with gap {gap:.3e} (tol {self.tol:g})",
        }[stop_reason]
        self.line.close(f"[dkernel.solver] {verdict} after {it} iterations  {self._counts(alpha, C)}")


class LocalGradients:
    """All samples in one :class:`GradientPartition` of this process."""

    def __init__(self, rows, prob, q):
        support = np.flatnonzero(prob.alpha0)
        self.partition = GradientPartition(
            rows, prob.y, prob.C, prob.p, prob.alpha0, 0, prob.n, q,
            support, prob.y[support] * prob.alpha0[support],
        )

    def candidates(self, k):
        return merge_partition_candidates([self.partition.candidates(k)], k)

    def load(self, B, new, new_slots, slots):
        return assemble_working_set([self.partition.load(B, new, new_slots, slots)], B.size)

    def update(self, B, slots, weights, alpha_B):
        self.partition.update(B, slots, weights, alpha_B)

    def state(self):
        return self.partition.state()


def merge_partition_candidates(parts, k):
    """Global ``(m, M, up_idx, up_v, low_idx, low_v)`` from :meth:`GradientPartition.candidates`."""
    m = max(part[0] for part in parts)
    M = min(part[1] for part in parts)
    return (m, M) + merge_candidates([part[2:] for part in parts], k)


def assemble_working_set(parts, q_B):
    """``(K_BB, alpha_B, G_B)`` from per-partition :meth:`GradientPartition.load`."""
    if len(parts) == 1:
        _, K_cols, alpha, G = parts[0]
        return K_cols, alpha.copy(), G.copy()
    K_BB = np.empty((q_B, q_B))
    alpha_B = np.empty(q_B)
    G_B = np.empty(q_B)
    for positions, K_cols, alpha, G in parts:
        K_BB[:, positions] = K_cols
        alpha_B[positions] = alpha
        G_B[positions] = G
    return K_BB, alpha_B, G_B


def _shrink(up_idx, up_v, low_idx, low_v, m, M):
    """libsvm's shrinking test: keep the candidates that can still form a violating pair.

    A variable of ``I_up`` with ``v <= M`` (or of ``I_low`` with ``v >= m``)
    satisfies its KKT condition against every other one; it is stuck at its
    bound and would only pad the working set.
    """
    return up_idx[up_v > M], low_idx[low_v < m]


def label_constraint_loop(gradients, prob, *, tol, q, max_iter, shrinking, callback, verbose):
    """Outer loop for ``y^T alpha = const``: SMO sub-problems, libsvm's gap.

    ``gradients`` holds the gradient (one local partition or one per Dask
    worker) and exposes ``candidates``, ``load``, ``update`` and ``state``.
    """
    y, C = prob.y, prob.C
    slot_map = SlotMap(q)
    kept = np.empty(0, dtype=np.intp)
    stop_reason, gap, it, n_rows = "max_iter", np.inf, 0, 0
    progress = _Progress(verbose, tol, max_iter)
    for it in range(max_iter):
        m, M, up_idx, up_v, low_idx, low_v = gradients.candidates(q)
        gap = m - M
        if callback is not None and callback(it, gradients.state()[0], gap):
            stop_reason = "callback"
            break
        if gap <= tol:
            stop_reason = "tol"
            break
        if shrinking:
            up_idx, low_idx = _shrink(up_idx, up_v, low_idx, low_v, m, M)
        new = choose_working_set(kept, up_idx, low_idx, q - kept.size)
        B = np.concatenate([kept, new])
        if new.size == 0 and kept.size == 0:
            stop_reason = "stalled"
            break
        slots, new_slots = slot_map.assign(kept, new)
        n_rows += new.size
        K_BB, alpha_B, G_B = gradients.load(B, new, new_slots, slots)
        y_B = y[B]
        Q_BB = np.multiply.outer(y_B, y_B) * K_BB
        old_alpha_B = alpha_B.copy()
        n_sub, _ = smo_subproblem(
            Q_BB, y_B, alpha_B, C[B], G_B, 0.1 * tol, INNER_RELATIVE_TOL, INNER_ITER_PER_VARIABLE * B.size
        )
        gradients.update(B, slots, y_B * (alpha_B - old_alpha_B), alpha_B)
        if progress.due():
            progress.show(it, gap, gradients.state()[0], C)
        kept = B[B.size - min(q // 2, B.size) :] if q >= 4 else np.empty(0, dtype=np.intp)
    else:
        it = max_iter
    alpha, G = gradients.state()
    progress.close(it, stop_reason, gap, alpha, C)
    intercept = svc_intercept(alpha, G, y, C)
    return alpha, G, intercept, it, stop_reason, gap, n_rows


def _solve_general(rows, prob, *, tol, q, max_iter, callback, verbose):
    """Outer loop for several equality rows: exact active-set sub-problems."""
    y, C, E = prob.y, prob.C, prob.E
    alpha = prob.alpha0.copy()
    G = initial_gradient(rows, y, prob.p, alpha)
    n_rows = int(np.count_nonzero(alpha))
    stop_reason, it = "max_iter", 0
    mu, gap, support = minimax_multipliers(alpha, G, C, E)
    progress = _Progress(verbose, tol, max_iter)
    for it in range(max_iter):
        if callback is not None and callback(it, alpha, gap):
            stop_reason = "callback"
            break
        if gap <= tol:
            stop_reason = "tol"
            break
        B = _general_working_set(alpha, G, C, E, mu, support, q)
        K_B = _fetch_rows(rows, B)
        n_rows += B.size
        y_B = y[B]
        H = np.multiply.outer(y_B, y_B) * K_B[:, B]
        delta, n_sub = solve_box_equality_qp(
            H, G[B], -alpha[B], C[B] - alpha[B], E[:, B], kkt_tol=1e-3 * tol
        )
        delta = _apply_step(alpha, B, delta, C)
        G += y * (K_B.T @ (y_B * delta))
        if not np.isfinite(G).all():
            _raise_nonfinite_rows(B, K_B)
        if progress.due():
            progress.show(it, gap, alpha, C)
        new_mu, new_gap, support = minimax_multipliers(alpha, G, C, E)
        if not np.any(delta) and new_gap >= gap:
            stop_reason, mu, gap = "stalled", new_mu, new_gap
            break
        mu, gap = new_mu, new_gap
    else:
        it = max_iter
    progress.close(it, stop_reason, gap, alpha, C)
    intercept = equality_multipliers(alpha, G, C, E, mu)
    if intercept.shape[0] == 1:
        intercept = float(intercept[0])
    return alpha, G, intercept, it, stop_reason, gap, n_rows


def _apply_step(alpha, B, delta, C):
    """Add ``delta`` to ``alpha[B]``; return the change actually made.

    Variables the sub-problem put on a bound are set to it exactly, because
    the bound tests of the selection compare with ``==``.
    """
    old = alpha[B]
    upper = C[B]
    new = np.clip(old + delta, 0.0, upper)
    new[delta == upper - old] = upper[delta == upper - old]
    new[delta == -old] = 0.0
    alpha[B] = new
    return new - old


def _general_working_set(alpha, G, C, E, mu, support, q):
    """The LP's descent support plus the largest violations under ``mu``."""
    reduced = G + E.T @ mu
    violation = np.maximum(
        np.where(alpha < C, -reduced, -np.inf),
        np.where(alpha > 0, reduced, -np.inf),
    )
    order = np.lexsort((np.arange(alpha.size), -violation))
    chosen = list(support.tolist())
    taken = set(chosen)
    for i in order.tolist():
        if len(chosen) >= q:
            break
        if i not in taken:
            chosen.append(i)
            taken.add(i)
    return np.sort(np.asarray(chosen, dtype=np.intp))


def solve_qp(
    rows,
    y,
    C,
    *,
    p=None,
    E=None,
    e=None,
    tol=1e-3,
    working_set_size=None,
    max_iter=100_000,
    shrinking=True,
    alpha0=None,
    verbose=False,
    callback=None,
    client=None,
):
    """Solve the SVM dual QP by block-coordinate decomposition.

    .. math::

        \\min_\\alpha \\tfrac12 \\alpha^\\top Q \\alpha + p^\\top \\alpha
        \\quad\\text{s.t.}\\quad 0 \\le \\alpha_i \\le C_i,\\; E\\alpha = e,
        \\qquad Q_{ij} = y_i y_j K_{ij}.

    Parameters
    ----------
    rows : row provider
        Object with ``n``, ``rows(idx) -> K[idx, :]`` and ``diag()``; see
        :class:`DenseRows` and :class:`KernelRows`.
    y : array-like of shape (n,)
        Labels in ``{-1, +1}``.
    C : float or array-like of shape (n,)
        Upper bounds, ``> 0`` (per-sample values implement class weights).
    p : array-like of shape (n,), default=-1
        Linear term.
    E : array-like of shape (l, n), default=y
        Equality rows. For the generalized bias of Li, Leung & Lee (eq. 24)
        use ``E[q, i] = y_i phi_q(x_i)``.
    e : array-like of shape (l,), default=0
        Right-hand side of ``E alpha = e``.
    tol : float, default=1e-3
        Stop when the maximal violating pair gap ``m(alpha) - M(alpha)`` is
        at most ``tol`` (libsvm's criterion).
    working_set_size : int, optional
        Variables per working set, at least 2. Default ``min(n, 512)`` with
        one equality row, ``min(n, max(64, 2 (l + 1)))`` with several (the
        sub-problem is then solved by a dense active-set method).
    max_iter : int, default=100000
        Outer iterations before stopping with a ``ConvergenceWarning``.
    shrinking : bool, default=True
        With one equality row, only variables that can still form a
        violating pair (libsvm's shrinking test) fill the working set. The
        gradient is kept exact for all variables, so the final check over all
        variables needs no gradient reconstruction.
    alpha0 : array-like of shape (n,), optional
        Feasible starting point (warm start). By default zero, or a vertex of
        the feasible set found by linear programming when ``e != 0``.
    verbose : bool, default=False
        Show the progress on stderr: one status line (KKT gap against
        ``tol``, support vectors and free ones, elapsed time), rewritten in
        place on a terminal and printed every few seconds otherwise, then a
        final line saying whether the solver converged.
    callback : callable, optional
        ``callback(iteration, alpha, gap)`` before each iteration; returning
        True stops the solver (``stop_reason="callback"``).
    client : distributed.Client, optional
        Keep the gradient on the workers of this client, one contiguous range
        of samples per worker (see :func:`solve_qp_distributed`). One
        equality row only.

    Returns
    -------
    QPResult
        ``alpha``, ``intercept`` (the bias ``b`` of
        ``f(x) = sum_i alpha_i y_i K(x, x_i) + b``, or the multipliers
        ``lambda`` of ``sum_q lambda_q phi_q(x)`` with several rows),
        ``objective``, ``n_iter``, ``converged``, ``stop_reason``, ``gap``,
        ``gradient``.

    Raises
    ------
    ValueError
        On labels other than +-1, non-positive ``C``, mismatched shapes,
        an infeasible ``alpha0`` or non-finite kernel values.

    Warns
    -----
    ConvergenceWarning
        When ``max_iter`` is reached before the gap falls below ``tol``.

    References
    ----------
    .. [1] R.-E. Fan, P.-H. Chen, C.-J. Lin, "Working set selection using
       second order information for training SVM", JMLR 6, 2005.
    .. [2] Z. Wen et al., "ThunderSVM: a fast SVM library on GPUs and CPUs",
       JMLR 19, 2018.
    .. [3] F. Li, Y. Leung, K. Lee, "Generalizing the bias term of support
       vector machines", IJCAI 2007, eqs. 23-25.

    Examples
    --------
    >>> import numpy as np
    >>> from dkernel.solver import DenseRows, solve_qp
    >>> X = np.array([[0.0], [1.0], [3.0], [4.0]])
    >>> y = np.array([-1, -1, 1, 1])
    >>> res = solve_qp(DenseRows(X @ X.T), y, C=10.0)
    >>> np.sign(res.decision_function(X @ X.T, y)).astype(int).tolist()
    [-1, -1, 1, 1]
    """
    if client is not None:
        from ._distributed import solve_qp_distributed

        return solve_qp_distributed(
            rows, y, C, client=client, p=p, E=E, e=e, tol=tol, working_set_size=working_set_size,
            max_iter=max_iter, shrinking=shrinking, alpha0=alpha0, verbose=verbose, callback=callback,
        )
    y_arr = np.asarray(y)
    _check_provider(rows, y_arr.shape[0] if y_arr.ndim == 1 else -1)
    prob = check_problem(rows.n, y, C, p, E, e, alpha0)
    q = _check_solver_options(tol, working_set_size, max_iter, prob)
    if prob.is_svc_constraint:
        out = label_constraint_loop(
            LocalGradients(rows, prob, q), prob, tol=tol, q=q, max_iter=max_iter, shrinking=shrinking,
            callback=callback, verbose=verbose,
        )
    else:
        out = _solve_general(rows, prob, tol=tol, q=q, max_iter=max_iter, callback=callback, verbose=verbose)
    return _result(prob, *out, tol=tol, max_iter=max_iter)


def _check_solver_options(tol, working_set_size, max_iter, prob):
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a positive number; got {tol!r}.")
    if int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer; got {max_iter!r}.")
    if working_set_size is None:
        return default_working_set_size(prob.n, prob.n_eq)
    if int(working_set_size) != working_set_size or working_set_size < 2:
        raise ValueError(f"working_set_size must be an integer >= 2; got {working_set_size!r}.")
    return int(min(working_set_size, prob.n))


def _result(prob, alpha, G, intercept, n_iter, stop_reason, gap, n_rows, *, tol, max_iter):
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
