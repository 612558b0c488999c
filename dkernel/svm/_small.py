"""Binary problems small enough for one working set: SMO on the whole problem, in one compiled call.

The block solver (:mod:`dkernel.solver`) takes at most ``min(n, 512)``
variables per working set; at ``n <= 512`` its working set is the whole
problem, and each outer iteration only re-runs the same SMO on it with a
looser inner tolerance. Here that SMO (Fan, Chen & Lin 2005, WSS 2, libsvm's
two-variable step, :func:`dkernel.solver._smo.smo_subproblem`) runs once on
``Q = y yᵀ ∘ K`` until libsvm's gap ``m(α) − M(α) <= tol``, with libsvm's
cap of ``max(10⁷, 100 n)`` pair steps: the same stopping rule and the same
optimum, without the outer loop's per-iteration Python.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning


__all__ = ["SMALL_PROBLEM_SIZE", "solve_small", "solves_whole"]

#: Samples up to which a binary problem is solved in one working set (the solver's default ``q``).
SMALL_PROBLEM_SIZE = 512


def libsvm_pair_cap(n):
    """libsvm's cap of ``max(10⁷, 100 n)`` two-variable steps."""
    return max(10**7, 100 * n)


#: The options of :func:`dkernel.solver.solve_qp` that :func:`solve_small` honours.
SMALL_OPTIONS = frozenset({"tol", "working_set_size", "max_iter", "verbose", "shrinking", "checkpoint"})


def solves_whole(n, client, options, libsvm_limit):
    """Whether a problem of ``n`` samples with the solver's ``options`` is solved by :func:`solve_small`.

    In this process only, with the solver's default working set (which then
    covers the problem), libsvm's iteration limit (``libsvm_limit``:
    ``max_iter=-1``), no progress display (the solver's own), no checkpoint
    (the solver writes them) and no option beyond those (a warm start, a
    callback). Shrinking does not change the optimum.
    """
    working_set_size = options.get("working_set_size")
    return (n <= SMALL_PROBLEM_SIZE and client is None and libsvm_limit and not options.get("verbose")
            and options.get("checkpoint") is None and set(options) <= SMALL_OPTIONS
            and (working_set_size is None or working_set_size >= n))


def problem_matrix(rows):
    """The whole matrix of a row provider as float64 (an in-memory ``DenseGram`` without a copy)."""
    K = getattr(rows, "K", None)
    if K is None:
        K = rows.rows(np.arange(rows.n))
    return np.asarray(K, dtype=np.float64)


def solve_small(rows, y, C, *, tol):
    """Solve the C-SVC dual on the whole of ``rows`` by SMO; a :class:`~dkernel.solver.QPResult`.

    ``n_iter`` is 1 (one working set, the whole problem) or 0 when ``α = 0``
    already meets ``tol``. Returns None where a kernel value is not finite
    (or the sum of the values overflows): the block solver then raises its
    error naming the row (or solves the problem).
    """
    from ..solver import QPResult
    from ..solver._bias import svc_intercept
    from ..solver._smo import select_pair, smo_subproblem

    K = problem_matrix(rows)
    if not np.isfinite(np.sum(K)):  # a NaN or an infinity in K (or finite values whose sum overflows)
        return None
    n = y.shape[0]
    y = np.asarray(y, dtype=np.float64)
    C = np.broadcast_to(np.asarray(C, dtype=np.float64), (n,)).copy()
    Q = np.multiply.outer(y, y)  # Q = y yᵀ ∘ K, at most 512 × 512 (2 MB)
    Q *= K
    alpha = np.zeros(n)
    G = -np.ones(n)  # Q α + p with α = 0, p = -1
    cap = libsvm_pair_cap(n)
    steps, _ = smo_subproblem(Q, y, alpha, C, G, float(tol), 0.0, cap)
    gap = select_pair(Q, y, alpha, C, G)[2]
    converged = steps < cap
    if not converged:
        warnings.warn(
            f"The QP solver stopped after libsvm's limit of {cap} pair steps without reaching tol={tol:g}. "
            "Increase tol, or scale the data (e.g. StandardScaler) so that the kernel is better conditioned.",
            ConvergenceWarning, stacklevel=4,
        )
    return QPResult(
        alpha=alpha,
        intercept=svc_intercept(alpha, G, y, C),
        objective=0.5 * float(alpha @ (G - 1.0)),
        n_iter=int(steps > 0),
        converged=bool(converged),
        stop_reason="tol" if converged else "max_iter",
        gap=float(gap),
        gradient=G,
        n_kernel_rows=n,
    )
