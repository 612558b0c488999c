"""Exact working-set sub-problem with several equality rows.

With ``l > 1`` rows in ``E alpha = e`` a pair of variables can in general not
move without breaking a constraint, so SMO does not apply. The sub-problem

.. math::

    \\min_d \\tfrac12 d^\\top H d + g^\\top d \\quad\\text{s.t.}\\quad
    \\ell_i \\le d_i \\le u_i,\\; A d = 0

(``d`` the change of ``alpha_B``, ``l <= 0 <= u``) is small and dense; it is
solved by a primal active-set method (Nocedal & Wright, *Numerical
Optimization*, Alg. 16.3) from the feasible point ``d = 0``. Every step lies in
the null space of ``A`` restricted to the free variables, so ``A d = 0`` holds
to rounding error, which is what keeps ``E alpha = e`` exact over the outer
iterations.
"""

import numpy as np
import scipy.linalg

__all__ = ["solve_box_equality_qp"]

# Ridge added to H, relative to its largest diagonal entry: it makes the
# sub-problem strictly convex (a singular kernel, e.g. linear with d < q, has
# flat directions), so every equality-constrained step is unique. A flat
# descent direction then becomes a long step that the ratio test clips at a
# bound, which is the exact behaviour on a flat direction.
RIDGE = 1e-10

AT_LOWER, FREE, AT_UPPER = -1, 0, 1


def _row_basis(A, rtol=1e-10):
    """Orthonormal rows spanning the row space of ``A`` (rank-revealing SVD)."""
    if A.shape[0] == 0 or A.shape[1] == 0:
        return np.zeros((0, A.shape[1]))
    _, s, vt = np.linalg.svd(A, full_matrices=False)
    rank = int(np.sum(s > rtol * max(s[0], 1e-300)))
    return vt[:rank]


def _release_for_rank(A, status):
    """Free bound variables until ``A[:, free]`` has full row rank.

    The working set of active bounds together with the rows of ``A`` must be
    linearly independent for the multipliers to be unique.
    """
    r = A.shape[0]
    free = np.flatnonzero(status == FREE)
    rank_free = np.linalg.matrix_rank(A[:, free]) if free.size else 0
    if rank_free >= r:
        return
    bound = np.flatnonzero(status != FREE)
    residual = A[:, bound]
    if rank_free:
        basis = scipy.linalg.orth(A[:, free])
        residual = residual - basis @ (basis.T @ residual)
    _, _, pivots = scipy.linalg.qr(residual, pivoting=True, mode="economic")
    status[bound[pivots[: r - rank_free]]] = FREE


def _null_space(A_free):
    """Orthonormal basis of ``{x : A_free x = 0}`` (``A_free`` has full row rank)."""
    r, m = A_free.shape
    if r == 0:
        return np.eye(m)
    q, _ = np.linalg.qr(A_free.T, mode="complete")
    return q[:, r:]


def _equality_step(H, grad, A, free):
    """Minimiser of the quadratic model over the free variables with ``A_F p_F = 0``."""
    Z = _null_space(A[:, free])
    if Z.shape[1] == 0:
        return np.zeros(free.size)
    reduced_H = Z.T @ H[np.ix_(free, free)] @ Z
    reduced_g = Z.T @ grad[free]
    try:
        chol = scipy.linalg.cho_factor(reduced_H, check_finite=False)
        return -Z @ scipy.linalg.cho_solve(chol, reduced_g, check_finite=False)
    except np.linalg.LinAlgError:
        return -Z @ np.linalg.lstsq(reduced_H, reduced_g, rcond=None)[0]


def _ratio_test(d, p, lower, upper, free):
    """Largest step ``t <= 1`` along ``p`` keeping the free variables in the box."""
    t, blocking, side = 1.0, -1, FREE
    for k, i in enumerate(free):
        if p[k] > 0:
            limit = (upper[i] - d[i]) / p[k]
            if limit < t:
                t, blocking, side = max(limit, 0.0), i, AT_UPPER
        elif p[k] < 0:
            limit = (lower[i] - d[i]) / p[k]
            if limit < t:
                t, blocking, side = max(limit, 0.0), i, AT_LOWER
    return t, blocking, side


def _most_violated_bound(grad, A, status, free, kkt_tol):
    """Bound variable whose multiplier has the wrong sign, or -1 if none."""
    if A.shape[0]:
        mu = np.linalg.lstsq(A[:, free].T, -grad[free], rcond=None)[0]
        reduced = grad + A.T @ mu
    else:
        reduced = grad
    # A variable at its lower bound is optimal if it would not decrease the
    # objective by moving up (reduced >= 0), at its upper bound the reverse.
    violation = np.where(status == AT_LOWER, -reduced, np.where(status == AT_UPPER, reduced, 0.0))
    worst = int(np.argmax(violation))
    return worst if violation[worst] > kkt_tol else -1


def solve_box_equality_qp(H, g, lower, upper, A, *, kkt_tol=1e-10, max_iter=None):
    """Minimise ``1/2 d^T H d + g^T d`` over ``lower <= d <= upper``, ``A d = 0``.

    Parameters
    ----------
    H : ndarray of shape (q, q)
        Symmetric positive semi-definite.
    g : ndarray of shape (q,)
    lower, upper : ndarray of shape (q,)
        Box with ``lower <= 0 <= upper`` so that ``d = 0`` is feasible.
    A : ndarray of shape (r, q)
        Equality rows (any rank).
    kkt_tol : float
        Tolerance on the sign of the multipliers of the active bounds.
    max_iter : int, optional
        Active-set changes; default ``10 * q + 50``.

    Returns
    -------
    d : ndarray of shape (q,)
    n_iter : int
    """
    q = g.shape[0]
    max_iter = 10 * q + 50 if max_iter is None else max_iter
    H = H + RIDGE * max(float(np.max(np.diag(H), initial=0.0)), 1e-300) * np.eye(q)
    A = _row_basis(A)
    d = np.zeros(q)
    status = np.where(lower >= 0, AT_LOWER, np.where(upper <= 0, AT_UPPER, FREE))
    _release_for_rank(A, status)
    for n_iter in range(1, max_iter + 1):
        free = np.flatnonzero(status == FREE)
        grad = g + H @ d
        if free.size:
            p = _equality_step(H, grad, A, free)
            t, blocking, side = _ratio_test(d, p, lower, upper, free)
            d[free] += t * p
            if blocking >= 0:
                d[blocking] = upper[blocking] if side == AT_UPPER else lower[blocking]
                status[blocking] = side
                continue
            grad = g + H @ d
        worst = _most_violated_bound(grad, A, status, free, kkt_tol)
        if worst < 0:
            break
        status[worst] = FREE
    d[status == AT_LOWER] = lower[status == AT_LOWER]
    d[status == AT_UPPER] = upper[status == AT_UPPER]
    return d, n_iter
