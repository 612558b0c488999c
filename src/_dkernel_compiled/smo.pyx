# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""SMO on a working set with one equality row ``sum_i y_i alpha_i = const``.

Pairwise steps with second-order working-pair selection (Fan, Chen & Lin
2005, WSS 2) and libsvm's two-variable update. Compiled because each step is
a few scalar scans of the working set (in Python, microseconds of interpreter
per value); without the GIL because the binary problems of a one-vs-one fit
are solved in parallel threads. Used through :mod:`dkernel.solver._smo`.
"""

from libc.math cimport INFINITY

__all__ = ["TAU", "select_pair", "smo_nu_subproblem", "smo_subproblem", "update_pair"]

cdef double _TAU = 1e-12

#: libsvm's TAU: curvature used when K_ii + K_jj - 2 K_ij <= 0 (non-PSD kernels).
TAU = _TAU


cdef struct Pair:
    Py_ssize_t i
    Py_ssize_t j
    double gap


cdef Pair _select_pair(const double[:, :] Q, const double[::1] y, const double[::1] alpha, const double[::1] C,
                       const double[::1] G) noexcept nogil:
    cdef Py_ssize_t q = y.shape[0], t, i = -1, j = -1
    cdef double g_max = -INFINITY, g_max2 = -INFINITY, obj_min = INFINITY, yg, b, a
    for t in range(q):
        if (y[t] > 0 and alpha[t] < C[t]) or (y[t] < 0 and alpha[t] > 0):
            if -y[t] * G[t] > g_max:
                g_max = -y[t] * G[t]
                i = t
    for t in range(q):
        if (y[t] > 0 and alpha[t] > 0) or (y[t] < 0 and alpha[t] < C[t]):
            yg = y[t] * G[t]
            if yg > g_max2:
                g_max2 = yg
            b = g_max + yg
            if i >= 0 and b > 0:
                a = Q[i, i] + Q[t, t] - 2.0 * y[i] * y[t] * Q[i, t]
                if a <= 0:
                    a = _TAU
                if -(b * b) / a < obj_min:
                    obj_min = -(b * b) / a
                    j = t
    return Pair(i, j, g_max + g_max2)


cdef Pair _select_nu_pair(const double[:, :] Q, const double[::1] y, const double[::1] alpha,
                          const double[::1] C, const double[::1] G) noexcept nogil:
    """libsvm's ``Solver_NU::select_working_set``: WSS 2 within each label, the pair of the larger decrease.

    A pair of one label keeps the sum of that label's variables (the two equality rows of the ν problems);
    ``gap`` is the larger of the two labels' ``m - M``.
    """
    cdef Py_ssize_t q = y.shape[0], t, i_pos = -1, i_neg = -1, i, j = -1
    cdef double g_pos = -INFINITY, g_pos2 = -INFINITY, g_neg = -INFINITY, g_neg2 = -INFINITY
    cdef double obj_min = INFINITY, b, a
    for t in range(q):
        if y[t] > 0:
            if alpha[t] < C[t] and -G[t] > g_pos:
                g_pos = -G[t]
                i_pos = t
        elif alpha[t] > 0 and G[t] > g_neg:
            g_neg = G[t]
            i_neg = t
    for t in range(q):
        if y[t] > 0:
            if not alpha[t] > 0:
                continue
            if G[t] > g_pos2:
                g_pos2 = G[t]
            b, i = g_pos + G[t], i_pos
        else:
            if not alpha[t] < C[t]:
                continue
            if -G[t] > g_neg2:
                g_neg2 = -G[t]
            b, i = g_neg - G[t], i_neg
        if i >= 0 and b > 0:
            a = Q[i, i] + Q[t, t] - 2.0 * Q[i, t]
            if a <= 0:
                a = _TAU
            if -(b * b) / a < obj_min:
                obj_min = -(b * b) / a
                j = t
    i = -1 if j < 0 else (i_pos if y[j] > 0 else i_neg)
    return Pair(i, j, g_pos + g_pos2 if g_pos + g_pos2 > g_neg + g_neg2 else g_neg + g_neg2)


cdef (double, double) _update_pair(const double[:, :] Q, const double[::1] y, double[::1] alpha,
                                   const double[::1] C, const double[::1] G, Py_ssize_t i,
                                   Py_ssize_t j) noexcept nogil:
    cdef double old_i = alpha[i], old_j = alpha[j], Ci = C[i], Cj = C[j]
    cdef double quad, delta, diff, total, ai, aj
    if y[i] != y[j]:
        quad = Q[i, i] + Q[j, j] + 2.0 * Q[i, j]
        if quad <= 0:
            quad = _TAU
        delta = (-G[i] - G[j]) / quad
        diff = old_i - old_j
        ai = old_i + delta
        aj = old_j + delta
        if diff > 0:
            if aj < 0:
                aj = 0.0
                ai = diff
        else:
            if ai < 0:
                ai = 0.0
                aj = -diff
        if diff > Ci - Cj:
            if ai > Ci:
                ai = Ci
                aj = Ci - diff
        else:
            if aj > Cj:
                aj = Cj
                ai = Cj + diff
    else:
        quad = Q[i, i] + Q[j, j] - 2.0 * Q[i, j]
        if quad <= 0:
            quad = _TAU
        delta = (G[i] - G[j]) / quad
        total = old_i + old_j
        ai = old_i - delta
        aj = old_j + delta
        if total > Ci:
            if ai > Ci:
                ai = Ci
                aj = total - Ci
        else:
            if aj < 0:
                aj = 0.0
                ai = total
        if total > Cj:
            if aj > Cj:
                aj = Cj
                ai = total - Cj
        else:
            if ai < 0:
                ai = 0.0
                aj = total
    alpha[i] = ai
    alpha[j] = aj
    return ai - old_i, aj - old_j


cdef (Py_ssize_t, double) _solve(const double[:, :] Q, const double[::1] y, double[::1] alpha, const double[::1] C,
                                 double[::1] G, double eps, double rel_eps, Py_ssize_t max_iter,
                                 bint within_labels) noexcept:
    """The pair updates of a sub-problem, pairs by WSS 2 (``within_labels``: of one label, ``_select_nu_pair``)."""
    cdef double first_gap = 0.0, stop = eps, d_i, d_j
    cdef Py_ssize_t q = y.shape[0], n_iter = 0, t
    cdef Pair pair
    with nogil:
        while n_iter < max_iter:
            pair = _select_nu_pair(Q, y, alpha, C, G) if within_labels else _select_pair(Q, y, alpha, C, G)
            if n_iter == 0:
                first_gap = pair.gap
                stop = rel_eps * pair.gap if rel_eps * pair.gap > eps else eps
            if pair.j < 0 or pair.gap <= stop:
                break
            d_i, d_j = _update_pair(Q, y, alpha, C, G, pair.i, pair.j)
            for t in range(q):
                G[t] += Q[t, pair.i] * d_i + Q[t, pair.j] * d_j
            n_iter += 1
    return n_iter, first_gap


cdef int _check_problem(const double[:, :] Q, const double[::1] y, const double[::1] alpha, const double[::1] C,
                        const double[::1] G) except -1:
    cdef Py_ssize_t q = y.shape[0]
    if Q.shape[0] != q or Q.shape[1] != q or alpha.shape[0] != q or C.shape[0] != q or G.shape[0] != q:
        raise ValueError(f"a working set of {q} labels needs Q of shape ({q}, {q}) and alpha, C, G of {q} values; "
                         f"got Q {(Q.shape[0], Q.shape[1])}, alpha {alpha.shape[0]}, C {C.shape[0]}, "
                         f"G {G.shape[0]}")
    return 0


def select_pair(const double[:, :] Q, const double[::1] y, const double[::1] alpha, const double[::1] C,
                const double[::1] G):
    """WSS 2: return ``(i, j, gap)``; ``j == -1`` when no pair violates.

    ``i`` maximises ``-y_i G_i`` over ``I_up``; ``j`` minimises
    ``-b_ij^2 / a_ij`` over ``I_low`` with ``b_ij = m + y_j G_j > 0``
    (Fan, Chen & Lin 2005, eq. 16). ``gap = m - M``.
    """
    _check_problem(Q, y, alpha, C, G)
    cdef Pair pair
    with nogil:
        pair = _select_pair(Q, y, alpha, C, G)
    return pair.i, pair.j, pair.gap


def update_pair(const double[:, :] Q, const double[::1] y, double[::1] alpha, const double[::1] C,
                const double[::1] G, Py_ssize_t i, Py_ssize_t j):
    """libsvm's analytic two-variable step; returns ``(delta_i, delta_j)``.

    Updates ``alpha`` in place and clips to the box so that a variable at a
    bound is set exactly to ``0`` or ``C_i`` (the bound tests use ``==``).
    """
    _check_problem(Q, y, alpha, C, G)
    if not (0 <= i < y.shape[0] and 0 <= j < y.shape[0]):
        raise IndexError(f"the pair ({i}, {j}) is out of bounds for a working set of {y.shape[0]} variables")
    cdef (double, double) deltas
    with nogil:
        deltas = _update_pair(Q, y, alpha, C, G, i, j)
    return deltas


def smo_subproblem(const double[:, :] Q, const double[::1] y, double[::1] alpha, const double[::1] C,
                   double[::1] G, double eps, double rel_eps, Py_ssize_t max_iter):
    """Solve the working-set sub-problem in place.

    Parameters
    ----------
    Q : ndarray of shape (q, q)
        ``Q_BB = y_i y_j K_ij`` on the working set.
    y, C : ndarray of shape (q,)
        Labels (+-1, float) and upper bounds.
    alpha, G : ndarray of shape (q,)
        Current values and gradient of the working set; updated in place.
    eps : float
        Stop when the local gap ``m - M`` is below ``max(eps, rel_eps * first_gap)``.
    rel_eps : float
        Fraction of the first local gap; solving the sub-problem only
        partially saves time while the outer gradient is still far off
        (ThunderSVM's local stopping rule).
    max_iter : int
        Maximal number of pair updates.

    Returns
    -------
    n_iter : int
    first_gap : float
        Local gap before the first update.
    """
    _check_problem(Q, y, alpha, C, G)
    return _solve(Q, y, alpha, C, G, eps, rel_eps, max_iter, False)


def smo_nu_subproblem(const double[:, :] Q, const double[::1] y, double[::1] alpha, const double[::1] C,
                      double[::1] G, double eps, double rel_eps, Py_ssize_t max_iter):
    """:func:`smo_subproblem` keeping the sum of each label's variables (libsvm's ``Solver_NU``).

    Each pair is of one label (``_select_nu_pair``), so the two sums
    ``Σ_{y_i=+1} α_i`` and ``Σ_{y_i=−1} α_i`` stay where they are: the
    sub-problem of the ν-SVC and ν-SVR duals, whose equality rows fix them.
    The local gap is the larger of the two labels' ``m - M``. Parameters and
    result as :func:`smo_subproblem`.
    """
    _check_problem(Q, y, alpha, C, G)
    return _solve(Q, y, alpha, C, G, eps, rel_eps, max_iter, True)
