"""The outer loop of the solver: block-coordinate decomposition.

Each iteration selects a working set ``B`` of ``q`` variables by maximal KKT
violation, fetches the kernel rows ``K[B, :]`` once, solves the sub-problem on
``B`` with the other variables fixed, and updates the gradient

.. math::  G \\leftarrow G + Q_{:, B} \\Delta\\alpha_B
           = G + y \\odot K_{B,:}^\\top (y_B \\odot \\Delta\\alpha_B),

one BLAS matrix-vector product. With one equality row ``y^T alpha = const``
(:func:`label_constraint_loop`) the sub-problem is solved by SMO
(:mod:`._smo`), with libsvm's shrinking of the candidates, and the gradient is
held by a strategy of :mod:`._gradient` (this process or the Dask workers) or
:mod:`._shrinking` (this process, restricted to the active variables);
with several rows (:func:`general_equality_loop`) by an exact active-set
method (:mod:`._active_set`). The loop follows ThunderSVM's
``CSMOSolver::solve`` (select, get rows, local SMO, update f, stop on the gap).
"""

import numpy as np

from .._runtime.progress import StatusLine

from ._active_set import solve_box_equality_qp
from ._bias import equality_multipliers, label_sum_multipliers, minimax_multipliers, svc_intercept
from ._gradient import SlotMap, initial_gradient, starting_support
from ._rows import provider_submatrix, raise_nonfinite_rows
from ._select import choose_working_set
from ._shrinking import SHRINK_INTERVAL
from ._smo import smo_nu_subproblem, smo_subproblem

__all__ = ["general_equality_loop", "label_constraint_loop"]

# The sub-problem is solved until its gap falls to this fraction of its first
# gap (ThunderSVM's local rule): a partial solve is enough while the outer
# gradient is still far from optimal, and saves inner iterations.
INNER_RELATIVE_TOL = 0.1
# Pair updates per working-set variable before the inner SMO gives up.
INNER_ITER_PER_VARIABLE = 10
# A sub-problem step of several equality rows whose objective decrease is below this fraction of |G_B|·|Δα_B|,
# without lowering the gap, made no progress (only rounding): the loop takes a pair step instead.
STALL_RTOL = 1e-12


class _Progress:
    """The solver's verbose display on stderr: one status line, then whether it converged.

    On a terminal the line (iteration, KKT gap against ``tol``, support
    vectors and free ones, elapsed time) is rewritten in place; otherwise it
    is printed every few seconds (:class:`dkernel._runtime.progress.StatusLine`). The
    final line says ``converged`` or ``NOT converged`` and why.
    """

    def __init__(self, verbose, tol, max_iter):
        # ``verbose`` may be the stream to write to (a loop on a worker sends its lines to the client).
        self.line = StatusLine(stream=verbose if hasattr(verbose, "write") else None, enabled=bool(verbose))
        self.tol, self.max_iter = tol, max_iter

    def due(self):
        return self.line.due()

    def _counts(self, alpha, C):
        from dask.utils import format_time

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


def _shrink(up_idx, up_v, low_idx, low_v, m, M):
    """libsvm's shrinking test: keep the candidates that can still form a violating pair.

    A variable of ``I_up`` with ``v <= M`` (or of ``I_low`` with ``v >= m``)
    satisfies its KKT condition against every other one; it is stuck at its
    bound and would only pad the working set.
    """
    return up_idx[up_v > M], low_idx[low_v < m]


def label_constraint_loop(gradients, prob, *, tol, q, max_iter, shrinking, callback, verbose, resume=None,
                          checkpoint=None):
    """Outer loop for ``y^T alpha = const``: SMO sub-problems, libsvm's gap.

    ``gradients`` holds the gradient (one local partition or one per Dask
    worker) and exposes ``candidates``, ``load``, ``update`` (which returns
    the next iteration's candidates), ``fill_rows``, ``state`` and the
    current ``alpha``. With the sum of each label fixed (``prob.label_sums``, libsvm's ν problems) each label is
    selected from on its own (:meth:`~._shrinking.ShrinkingGradients.candidates`), the gap is the larger of the
    labels' and the sub-problem's pairs stay within a label (:func:`~._smo.smo_nu_subproblem`). ``resume`` (a
    :class:`~._checkpoint.SolverState`)
    continues a checkpointed run where it stopped, its working-set rows read
    again into the slots they held; ``checkpoint`` (a
    :class:`~._checkpoint.CheckpointWriter`) writes the state at the start of
    an iteration when due.
    """
    y, C = prob.y, prob.C
    # Gradients in this process shrink their active set too (:class:`~._shrinking.ShrinkingGradients`).
    column_shrinking = shrinking and getattr(gradients, "shrinks", False)
    slot_map = SlotMap(q)
    kept = np.empty(0, dtype=np.intp)
    start, n_rows = 0, 0
    if resume is not None:
        start, kept, n_rows = resume.iteration, resume.kept, resume.n_kernel_rows
        slot_map.slot_of = dict(zip(kept.tolist(), resume.kept_slots.tolist()))
        if hasattr(gradients, "restore"):  # the active set and every slot's row, as the checkpointed run held them
            gradients.restore(resume)
        else:
            gradients.fill_rows(kept, resume.kept_slots)
    stop_reason, gap, it = "max_iter", np.inf, start
    progress = _Progress(verbose, tol, max_iter)
    candidates = gradients.candidates(q)
    for it in range(start, max_iter):
        if checkpoint is not None and checkpoint.due(it):
            _write_checkpoint(checkpoint, gradients, it, kept, slot_map, n_rows)
        m, M, up_idx, up_v, low_idx, low_v = candidates
        gap = m - M
        if gap <= tol and column_shrinking and gradients.unshrink():
            # Solved over the active variables: the gap over all of them decides.
            m, M, up_idx, up_v, low_idx, low_v = candidates = gradients.candidates(q)
            gap = m - M
        if callback is not None and callback(it, gradients.alpha, gap):
            stop_reason = "callback"
            break
        if gap <= tol:
            stop_reason = "tol"
            break
        if shrinking and not prob.label_sums:  # (each label's candidates are tested by its own m, M already)
            up_idx, low_idx = _shrink(up_idx, up_v, low_idx, low_v, m, M)
        if column_shrinking and it % SHRINK_INTERVAL == SHRINK_INTERVAL - 1:
            gradients.shrink(m, M)  # drops only variables the test above removed from the candidates
        new = choose_working_set(kept, up_idx, low_idx, q - kept.size)
        B = np.concatenate([kept, new])
        if new.size == 0 and kept.size == 0:
            if column_shrinking and gradients.unshrink():
                candidates = gradients.candidates(q)
                continue
            stop_reason = "stalled"
            break
        slots, new_slots = slot_map.assign(kept, new)
        n_rows += new.size
        K_BB, alpha_B, G_B = gradients.load(B, new, new_slots, slots)
        y_B = y[B]
        Q_BB = np.multiply.outer(y_B, y_B) * K_BB
        old_alpha_B = alpha_B.copy()
        n_sub, _ = (smo_nu_subproblem if prob.label_sums else smo_subproblem)(
            Q_BB, y_B, alpha_B, C[B], G_B, 0.1 * tol, INNER_RELATIVE_TOL, INNER_ITER_PER_VARIABLE * B.size
        )
        candidates = gradients.update(B, slots, y_B * (alpha_B - old_alpha_B), alpha_B, q)
        if progress.due():
            progress.show(it, gap, gradients.alpha, C)
        kept = B[B.size - min(q // 2, B.size) :] if q >= 4 else np.empty(0, dtype=np.intp)
    else:
        it = max(max_iter, start)
    # A run stopped before its solution (max_iter, the callback) is resumed from the state it stopped in, as it
    # was before the shrunk variables' gradient is rebuilt for the result.
    unsolved = _snapshot(gradients) if checkpoint is not None and stop_reason not in ("tol", "stalled") else None
    alpha, G = gradients.state()
    progress.close(it, stop_reason, gap, alpha, C)
    intercept = label_sum_multipliers(alpha, G, y, C, prob.E) if prob.label_sums else svc_intercept(alpha, G, y, C)
    if checkpoint is not None:
        from ._checkpoint import SolverState

        saved = (alpha, G, None, None, None) if unsolved is None else unsolved
        checkpoint.write(SolverState(it, *saved[:2], kept, _slots_of(slot_map, kept), n_rows, stop_reason, gap,
                                     intercept, *saved[2:]))
    return alpha, G, intercept, it, stop_reason, gap, n_rows


def _slots_of(slot_map, kept):
    return np.asarray([slot_map.slot_of[i] for i in kept.tolist()], dtype=np.intp)


def _snapshot(gradients):
    """``(alpha, G, active, held, upper_sums)`` of ``gradients``, read without changing them (the gradients of the
    Dask workers, never shrunk, record no shrinking state)."""
    snapshot = getattr(gradients, "snapshot", None)
    if snapshot is not None:
        return snapshot()
    alpha, G = gradients.state()
    return np.array(alpha, copy=True), np.array(G, copy=True), None, None, None


def _write_checkpoint(checkpoint, gradients, it, kept, slot_map, n_rows):
    """Write the state at the start of iteration ``it``: ``alpha``, ``G`` as held, the kept rows' slots and the
    shrinking state (:meth:`~._shrinking.ShrinkingGradients.snapshot`).

    A pure read: the loop goes on exactly as if nothing were written. (It used to take the exact gradient of
    every variable, :meth:`~._shrinking.ShrinkingGradients.state`, which unshrinks: the next iterations then ran
    over every variable, and the fit's path depended on when checkpoints were written.)
    """
    from ._checkpoint import SolverState

    alpha, G, active, held, upper_sums = _snapshot(gradients)
    checkpoint.write(SolverState(it, alpha, G, kept, _slots_of(slot_map, kept), n_rows, active=active, held=held,
                                 upper_sums=upper_sums))


def general_equality_loop(rows, prob, *, tol, q, max_iter, callback, verbose):
    """Outer loop for several equality rows: exact active-set sub-problems."""
    y, C, E = prob.y, prob.C, prob.E
    alpha = prob.alpha0.copy()
    G = initial_gradient(rows, y, prob.p, *starting_support(y, alpha), 0, prob.n)
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
        K_B = provider_submatrix(rows, B, 0, prob.n)
        n_rows += B.size
        y_B = y[B]
        H = np.multiply.outer(y_B, y_B) * K_B[:, B]
        delta, n_sub = solve_box_equality_qp(
            H, G[B], -alpha[B], C[B] - alpha[B], E[:, B], kkt_tol=1e-3 * tol
        )
        delta = _apply_step(alpha, B, delta, C)
        descent = float(G[B] @ delta + 0.5 * delta @ H @ delta)
        G += y * (K_B.T @ (y_B * delta))
        if not np.isfinite(G).all():
            raise_nonfinite_rows(B, K_B)
        if progress.due():
            progress.show(it, gap, alpha, C)
        new_mu, new_gap, support = minimax_multipliers(alpha, G, C, E)
        if new_gap >= gap and not descent < -STALL_RTOL * float(np.abs(G[B]) @ np.abs(delta)):
            # A degenerate sub-problem (a singular H, many variables at their bounds) can leave the active-set
            # method without a step, or with one that moves only rounding errors, where a pair of variables with
            # the same equality columns still descends.
            B, K_B, delta = _pair_step(rows, alpha, G, y, C, E, prob.n)
            if not np.any(delta):
                stop_reason, mu, gap = "stalled", new_mu, new_gap
                break
            n_rows += B.size
            G += y * (K_B.T @ (y[B] * delta))
            new_mu, new_gap, support = minimax_multipliers(alpha, G, C, E)
        mu, gap = new_mu, new_gap
    else:
        it = max_iter
    progress.close(it, stop_reason, gap, alpha, C)
    intercept = equality_multipliers(alpha, G, C, E, mu)
    if intercept.shape[0] == 1:
        intercept = float(intercept[0])
    return alpha, G, intercept, it, stop_reason, gap, n_rows


def _pair_step(rows, alpha, G, y, C, E, n):
    """The step of the maximal violating pair among variables with the same equality columns (libsvm's
    ``Solver_NU`` pairs, one per class of ``E``'s columns), applied to ``alpha``.

    Moving ``alpha_i`` up and ``alpha_j`` down by the same amount keeps ``E alpha`` when columns ``i`` and ``j``
    of ``E`` are equal. Returns ``(B, K_B, delta)``: the pair, its kernel rows and the change made (empty when
    no pair descends).
    """
    _, group = np.unique(E.T, axis=0, return_inverse=True)
    group = group.reshape(-1)
    best = None
    for g in np.unique(group):
        up = np.flatnonzero((group == g) & (alpha < C))
        down = np.flatnonzero((group == g) & (alpha > 0))
        if up.size == 0 or down.size == 0:
            continue
        i, j = up[np.argmin(G[up])], down[np.argmax(G[down])]
        violation = G[j] - G[i]
        if i != j and violation > 0 and (best is None or violation > best[0]):
            best = (violation, i, j)
    if best is None:
        return np.empty(0, dtype=np.intp), np.empty((0, n)), np.empty(0)
    violation, i, j = best
    B = np.array([i, j], dtype=np.intp)
    K_B = provider_submatrix(rows, B, 0, n)
    Q = np.multiply.outer(y[B], y[B]) * K_B[:, B]
    curvature = Q[0, 0] + Q[1, 1] - 2.0 * Q[0, 1]
    limit = min(C[i] - alpha[i], alpha[j])
    t = limit if curvature <= 0 else min(violation / curvature, limit)
    delta = _apply_step(alpha, B, np.array([t, -t]), C)
    return B, K_B, delta


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
