"""Working-set selection for the one-row (``sum_i y_i alpha_i``) constraint.

With ``v_i = -y_i G_i`` the KKT conditions of the C-SVC dual read
``m(alpha) <= M(alpha)`` where ``m`` is the largest ``v_i`` over ``I_up`` (the
variables that may move "up" along ``y_i``) and ``M`` the smallest over
``I_low`` (Fan, Chen & Lin 2005, eq. 6). The working set takes the most
violating variables from both ends, as ThunderSVM does, keeping half of the
previous set so that its kernel rows are reused.

Every ordering here is total (ties broken by the sample index), so that a
distributed run that merges per-partition candidates selects exactly the same
working set as a single process.
"""

import numpy as np

__all__ = [
    "violation_sets",
    "extreme_violations",
    "top_k",
    "candidate_lists",
    "merge_candidates",
    "choose_working_set",
]


def violation_sets(alpha, y, C):
    """Return the boolean masks ``(I_up, I_low)`` of libsvm.

    ``I_up = {alpha_i < C_i, y_i = 1} | {alpha_i > 0, y_i = -1}`` and
    ``I_low = {alpha_i < C_i, y_i = -1} | {alpha_i > 0, y_i = 1}``.
    """
    below_upper = alpha < C
    above_lower = alpha > 0
    positive = y > 0
    up = np.where(positive, below_upper, above_lower)
    low = np.where(positive, above_lower, below_upper)
    return up, low


def extreme_violations(v, up, low):
    """Return ``(m, M)``: the largest ``v`` over ``I_up`` and the smallest over ``I_low``."""
    m = v[up].max() if up.any() else -np.inf
    M = v[low].min() if low.any() else np.inf
    return float(m), float(M)


def top_k(values, k, *, largest):
    """Indices of the ``k`` largest (or smallest) values, ties broken by index.

    Returned in order, most extreme first.
    """
    key = -values if largest else values
    k = min(k, key.shape[0])
    if k <= 0:
        return np.empty(0, dtype=np.intp)
    if k < key.shape[0]:
        threshold = key[np.argpartition(key, k - 1)[:k]].max()
        # Keep every tie at the threshold so the index order decides among them.
        pool = np.flatnonzero(key <= threshold)
    else:
        pool = np.arange(key.shape[0])
    order = np.lexsort((pool, key[pool]))[:k]
    return pool[order]


def candidate_lists(v, up, low, k, *, m=None, M=None, offset=0):
    """Return the ``k`` best candidates of each end as ``(up_idx, up_v, low_idx, low_v)``.

    Parameters
    ----------
    v : ndarray
        ``-y_i G_i``.
    up, low : ndarray of bool
        ``I_up`` and ``I_low``.
    k : int
        Candidates per end.
    m, M : float, optional
        With both given, a variable is a candidate only if it can still form
        a violating pair (``v_i > M`` in ``I_up``, ``v_i < m`` in ``I_low``):
        libsvm's shrinking test, which drops variables stuck at a bound.
    offset : int
        Added to the returned indices (the start of a partition).
    """
    if m is not None and M is not None:
        up = up & (v > M)
        low = low & (v < m)
    up_pos = np.flatnonzero(up)
    low_pos = np.flatnonzero(low)
    up_sel = up_pos[top_k(v[up_pos], k, largest=True)]
    low_sel = low_pos[top_k(v[low_pos], k, largest=False)]
    return up_sel + offset, v[up_sel], low_sel + offset, v[low_sel]


def merge_candidates(parts, k):
    """Merge per-partition :func:`candidate_lists` into the global ``k`` best of each end."""
    up_idx = np.concatenate([part[0] for part in parts])
    up_v = np.concatenate([part[1] for part in parts])
    low_idx = np.concatenate([part[2] for part in parts])
    low_v = np.concatenate([part[3] for part in parts])
    up_order = np.lexsort((up_idx, -up_v))[:k]
    low_order = np.lexsort((low_idx, low_v))[:k]
    return up_idx[up_order], up_v[up_order], low_idx[low_order], low_v[low_order]


def choose_working_set(kept, up_idx, low_idx, n_new):
    """Add up to ``n_new`` indices to ``kept``, alternating between both ends.

    ``up_idx`` and ``low_idx`` are ordered most violating first; an index
    already chosen (a free variable is in both ends) is skipped.
    """
    taken = set(kept.tolist())
    new = []
    ends = [iter(up_idx.tolist()), iter(low_idx.tolist())]
    active = [True, True]
    side = 0
    while len(new) < n_new and any(active):
        if active[side]:
            for i in ends[side]:
                if i not in taken:
                    taken.add(i)
                    new.append(i)
                    break
            else:
                active[side] = False
        side = 1 - side
    return np.asarray(new, dtype=np.intp)
