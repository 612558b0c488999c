"""SMO on a working set with one equality row ``sum_i y_i alpha_i = const``.

The sub-problem over the working set ``B`` (the other variables fixed) is a
C-SVC dual of size ``q`` with the local gradient ``G_B``. It is solved by
pairwise SMO steps with second-order working-pair selection (Fan, Chen & Lin
2005, WSS 2) and libsvm's two-variable update, compiled with numba.
"""

import numpy as np

from .._runtime.jit import njit

__all__ = ["smo_subproblem", "select_pair", "update_pair"]

# libsvm's TAU: curvature used when K_ii + K_jj - 2 K_ij <= 0 (non-PSD kernels).
TAU = 1e-12


@njit(cache=True, nogil=True)
def select_pair(Q, y, alpha, C, G):
    """WSS 2: return ``(i, j, gap)``; ``j == -1`` when no pair violates.

    ``i`` maximises ``-y_i G_i`` over ``I_up``; ``j`` minimises
    ``-b_ij^2 / a_ij`` over ``I_low`` with ``b_ij = m + y_j G_j > 0``
    (Fan, Chen & Lin 2005, eq. 16). ``gap = m - M``.
    """
    q = y.shape[0]
    g_max = -np.inf
    i = -1
    for t in range(q):
        if (y[t] > 0 and alpha[t] < C[t]) or (y[t] < 0 and alpha[t] > 0):
            if -y[t] * G[t] > g_max:
                g_max = -y[t] * G[t]
                i = t
    g_max2 = -np.inf
    j = -1
    obj_min = np.inf
    for t in range(q):
        if (y[t] > 0 and alpha[t] > 0) or (y[t] < 0 and alpha[t] < C[t]):
            yg = y[t] * G[t]
            if yg > g_max2:
                g_max2 = yg
            b = g_max + yg
            if i >= 0 and b > 0:
                a = Q[i, i] + Q[t, t] - 2.0 * y[i] * y[t] * Q[i, t]
                if a <= 0:
                    a = TAU
                if -(b * b) / a < obj_min:
                    obj_min = -(b * b) / a
                    j = t
    return i, j, g_max + g_max2


@njit(cache=True, nogil=True)
def update_pair(Q, y, alpha, C, G, i, j):
    """libsvm's analytic two-variable step; returns ``(delta_i, delta_j)``.

    Updates ``alpha`` in place and clips to the box so that a variable at a
    bound is set exactly to ``0`` or ``C_i`` (the bound tests use ``==``).
    """
    old_i = alpha[i]
    old_j = alpha[j]
    Ci = C[i]
    Cj = C[j]
    if y[i] != y[j]:
        quad = Q[i, i] + Q[j, j] + 2.0 * Q[i, j]
        if quad <= 0:
            quad = TAU
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
            quad = TAU
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


@njit(cache=True, nogil=True)
def smo_subproblem(Q, y, alpha, C, G, eps, rel_eps, max_iter):
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
    first_gap = 0.0
    stop = eps
    q = y.shape[0]
    n_iter = 0
    while n_iter < max_iter:
        i, j, gap = select_pair(Q, y, alpha, C, G)
        if n_iter == 0:
            first_gap = gap
            stop = max(eps, rel_eps * gap)
        if j < 0 or gap <= stop:
            break
        d_i, d_j = update_pair(Q, y, alpha, C, G, i, j)
        for t in range(q):
            G[t] += Q[t, i] * d_i + Q[t, j] * d_j
        n_iter += 1
    return n_iter, first_gap
