"""The gradient of a problem solved in this process, restricted to its active variables (libsvm's shrinking).

Most variables of an SVM end at a bound (``alpha_i = 0`` far from the
margin, ``alpha_i = C`` deep on the wrong side), and libsvm's shrinking test
says when one is stuck there: at a bound, and unable to form a violating pair
with any other (``v_i < M`` for a variable that can only go up, ``v_i > m``
for one that can only go down, ``v = -y G``; Fan, Chen & Lin 2005, §5). Every
:data:`SHRINK_INTERVAL` outer iterations those variables leave the *active
set*: the gradient update ``G_A += y_A (K_BA^T w)`` and the search for
violating pairs then cost ``|A|`` instead of ``n`` per iteration, and the
working-set rows are held over the active columns only.

The gradient of the inactive variables is stale. When the active problem is
solved to the tolerance it is rebuilt, ``G_I = p_I + y_I K_{S,I}^T
(y_S alpha_S)`` over the support ``S`` (:meth:`ShrinkingGradients.unshrink`;
from a matrix in memory in compiled passes that read each support row
once, the gradient step's :func:`~._gradient_compiled.weighted_rows_step`),
every variable becomes active again, and the loop checks the gap over all of
them: the stopping test is always made on the whole problem, as libsvm's.

Where the rows lie in memory, the part of the support at its upper bound
is kept up to date as libsvm's ``G_bar``: ``sum_{alpha_j = C_j} C_j y_j
K[j, :]``, changed by a variable's full row when it reaches ``C_j`` or
leaves it (that row is held then: the variable is in the working set).
Rebuilding the gradient then reads the rows of the free support vectors
only. With rows on demand in a bounded row cache
(:class:`~dkernel.gram._in_memory.OnDemandGram`), the rows of the many
support vectors at ``C`` of an overlapping problem would otherwise be
computed again at each rebuild.
"""

import numpy as np

from .._runtime.threads import SplitRange
from ._gradient import GRADIENT_BLOCK_ROWS, initial_gradient, starting_support
from ._gradient_compiled import add_gradient_step, gather_block_into, weighted_rows_step
from ._rows import raise_nonfinite_rows
from ._select import violation_sets
from ._select_compiled import active_candidates

__all__ = ["SHRINK_INTERVAL", "SPLIT_STEP_VALUES", "ShrinkingGradients", "rows_read_from_memory"]

#: Outer iterations between two shrinking tests (about libsvm's ``min(n, 1000)`` two-variable steps
#: at the default working set of 128 variables).
SHRINK_INTERVAL = 16

#: Support rows asked for in one request when the gradient is rebuilt from rows in memory (each request asks for
#: the working set's rows too, and a bounded row cache holds both: :data:`~dkernel.gram._in_memory.MIN_CACHED_ROWS`).
SUPPORT_BLOCK_ROWS = 256

#: Values read by one gradient step (columns × rows of nonzero weight) for each thread its columns are split
#: between (a step is memory-bound: one core does not read memory as fast as two).
SPLIT_STEP_VALUES = 2**18

#: A shrinking test that would keep more than this fraction of the active variables changes nothing
#: (compacting the rows held costs more than it saves).
MIN_SHRINK_GAIN = 0.9


def rows_read_from_memory(rows):
    """Whether the solver shrinks on ``rows``: a provider whose rows lie in a matrix in memory (``rows_in_memory``).

    Shrinking pays for itself only where the support vectors' rows are read
    again cheaply at the end; from a store on disk, rows computed from the
    data or a view that corrects every entry (a centered Gram) they cost more
    than the updates it saves (a centered fit at n = 20000 took 13.4 s
    shrinking against 9.6 s without).
    """
    return bool(getattr(rows, "rows_in_memory", False))


def row_source(rows, idx):
    """``(M, positions, columns)``: the rows ``idx`` of ``rows`` are ``M[positions][:, columns]`` (all columns when
    None), ``M`` a matrix in memory; None where the provider has no such matrix (the Gram protocol's optional
    ``row_source``: :mod:`dkernel.gram._sources`)."""
    source = getattr(rows, "row_source", None)
    return None if source is None else source(np.asarray(idx, dtype=np.intp))


def _alternate(first, second, k):
    """``(idx, v)`` of two candidate lists taken in turn (``first[0]``, ``second[0]``, ``first[1]``, ...), ``k`` at
    most."""
    (idx1, v1), (idx2, v2) = first, second
    shared = min(idx1.size, idx2.size)
    idx = np.concatenate([np.column_stack([idx1[:shared], idx2[:shared]]).ravel(), idx1[shared:], idx2[shared:]])
    v = np.concatenate([np.column_stack([v1[:shared], v2[:shared]]).ravel(), v1[shared:], v2[shared:]])
    return idx[:k], v[:k]


class ShrinkingGradients:
    """The gradient of all samples in this process, with the working-set rows held over the active columns.

    The interface of the gradient strategies of :mod:`._gradient`
    (``candidates``, ``load``, ``update``, ``fill_rows``, ``state``,
    ``alpha``) plus :meth:`shrink` and :meth:`unshrink`. Indices given and
    returned are global (``0 .. n-1``); only active variables are ever
    candidates. Without ``shrinks`` every variable stays active.

    Where the rows lie in a matrix in memory (:func:`row_source`: a Gram held
    whole, or the rows computed so far of an on-demand Gram), the working set's
    rows are read there in place, as libsvm reads its cached rows: a slot holds
    a row's position in that matrix, the gradient update reads the rows of
    nonzero weight once each (:func:`weighted_rows_step`), and neither
    shrinking nor its undoing copies a row. From any other provider the rows
    are copied into a ``q × |A|`` array, compacted when the active set shrinks.

    Parameters
    ----------
    rows : row provider
    prob : the prepared problem (``y``, ``C``, ``p``, ``alpha0``, ``n``)
    q : int
        Working-set size (rows held).
    G : ndarray of shape (n,), optional
        The gradient at ``prob.alpha0`` (a resumed checkpoint).
    shrinks : bool, default=False
        Whether the loop shrinks the active set (:func:`rows_read_from_memory`).
    upper_sums : ndarray of shape (n,), optional
        libsvm's ``G_bar`` at ``prob.alpha0`` as a checkpointed run accumulated it (summed again from ``alpha``
        when not given).
    """

    def __init__(self, rows, prob, q, G=None, *, shrinks=False, upper_sums=None):
        self.shrinks = bool(shrinks)
        self.rows, self.n = rows, prob.n
        self.y, self.C, self.p = prob.y, prob.C, prob.p
        self.alpha = prob.alpha0.copy()
        # With the sum of each label fixed (libsvm's ν problems) each label is selected from on its own.
        self.labels = (1.0, -1.0) if getattr(prob, "label_sums", False) else None
        self._label_active = None  # the active variables of each label (:meth:`_active_by_label`)
        self.extremes = {}  # label: (m, M) of its variables, found by the last :meth:`candidates`
        self.in_place = row_source(rows, np.empty(0, dtype=np.intp)) is not None
        self._split = SplitRange(getattr(rows, "threads", 1), "dkernel-step")
        self.active = np.arange(self.n)
        self.column_of = np.arange(self.n)  # position of each variable among the active ones, -1 if shrunk
        self.weights = np.zeros(q)
        self.row_in_slot = np.full(q, -1, dtype=np.intp)
        if self.in_place:
            self._matrix = self._matrix_index = None  # the matrix the held rows lie in, its subset's index
            self.position_in_slot = np.full(q, -1, dtype=np.intp)
            self._matrix_columns = None  # the active columns among the matrix's columns
            self._step_plan = None  # the columns the gradient step sums over (:meth:`_step_columns`)
        else:
            self.K = np.zeros((q, self.n))
            self._slots = np.arange(q)
        # libsvm's G_bar where rows lie in memory and the loop shrinks: the gradient's part from the variables at
        # their upper bound, sum_{alpha_j = C_j} C_j y_j K[j, :] (:meth:`unshrink`).
        self._upper_sums = np.zeros(self.n) if self.shrinks and self.in_place else None
        if G is None:
            self.G = self._starting_gradient()
        else:
            self.G = np.array(G, dtype=np.float64)
            if self._upper_sums is not None and upper_sums is not None:  # as the checkpointed run accumulated it
                self._upper_sums = np.array(upper_sums, dtype=np.float64)
            elif self._upper_sums is not None:
                self._upper_sums = self._sum_at_upper(*starting_support(self.y, self.alpha))[0]

    @property
    def shrunk(self):
        """Whether some variables are out of the active set."""
        return self.active.size < self.n

    def close(self):
        """Stop the threads that split the gradient steps (the gradient itself lives in this process)."""
        self._split.close()

    def _weighted_rows_step(self, M, positions, weights, columns, all_columns, step):
        """:func:`weighted_rows_step`, its columns split between the threads of ``_split`` (this one included) where
        the step reads :data:`SPLIT_STEP_VALUES` values or more for each.

        Each thread sums its own columns over the rows in the same order:
        the step is the same to the last bit. One fit in a fresh process on
        2 cores, ``n = 40000``: 64 features, 12.3 s in one thread against
        11.2–11.5 s in two; 20 features, 4.33–4.35 against 4.02–4.10 s.
        """
        def part(a, b):
            if all_columns:
                weighted_rows_step(M[:, a:b], positions, weights, columns, True, step[a:b])
            else:
                weighted_rows_step(M, positions, weights, columns[a:b], False, step[a:b])

        self._split.run(part, step.size, step.size * int(np.count_nonzero(weights)) // SPLIT_STEP_VALUES)

    def candidates(self, k):
        """``(m, M, up_idx, up_v, low_idx, low_v)`` over the active variables (global indices).

        With the sum of each label fixed (``labels``: libsvm's ``Solver_NU``,
        whose pairs stay within one label) each label is a problem of its own
        for the selection: ``m`` and ``M`` are those of the label whose
        violation ``m − M`` is the largest (every label's in :attr:`extremes`),
        and the candidates of both labels alternate in each list, that label's first, those that
        cannot form a violating pair within their label left out (libsvm's
        shrinking test, by the label's own ``m`` and ``M``).
        """
        if self.labels is None:
            m, M, up_idx, up_v, low_idx, low_v = active_candidates(self.alpha, self.y, self.C, self.G, self.active,
                                                                   k)
            return float(m), float(M), up_idx, up_v, low_idx, low_v
        found = []
        for label, active in zip(self.labels, self._active_by_label()):
            m, M, up_idx, up_v, low_idx, low_v = active_candidates(self.alpha, self.y, self.C, self.G, active, k)
            self.extremes[label] = (float(m), float(M))
            found.append((m, M, up_idx[up_v > M], up_v[up_v > M], low_idx[low_v < m], low_v[low_v < m]))
        # The label of the larger violation first: a working set of two is its maximal violating pair, as
        # libsvm's Solver_NU selects it (the other label's pair would be picked again and again, its gap gone).
        found.sort(key=lambda label: label[0] - label[1], reverse=True)
        m, M = found[0][:2]
        return (float(m), float(M), *_alternate(found[0][2:4], found[1][2:4], k),
                *_alternate(found[0][4:6], found[1][4:6], k))

    def _active_by_label(self):
        """The active variables of each of :attr:`labels` (found once per active set)."""
        if self._label_active is None:
            positive = self.y[self.active] > 0
            self._label_active = tuple(np.ascontiguousarray(self.active[mask]) for mask in (positive, ~positive))
        return self._label_active

    def held_rows(self, slots):
        """The kernel rows held in ``slots`` over the active columns, as float64."""
        slots = np.asarray(slots, dtype=np.intp)
        if not self.in_place:
            return self.K[slots]
        return np.asarray(self._matrix[np.ix_(self.position_in_slot[slots], self._columns())], dtype=np.float64)

    def _full_rows(self, idx):
        """Kernel rows of ``idx`` in the provider's dtype (a float32 Gram is converted by the copy that stores it)."""
        block = np.asarray(self.rows.rows(idx))
        if block.shape != (len(idx), self.n):
            raise ValueError(f"The row provider returned shape {block.shape} for {len(idx)} rows of a Gram of "
                             f"{self.n} samples; expected ({len(idx)}, {self.n}).")
        return block

    def _read_rows(self, idx):
        """Kernel rows of ``idx`` over the active columns."""
        block = self._full_rows(idx)
        return block if not self.shrunk else np.take(block, self.active, axis=1)

    def _columns(self):
        """The active columns among the columns of the matrix the rows lie in (found once per active set)."""
        if self._matrix_columns is None:
            index = self._matrix_index
            columns = self.active if index is None else index[self.active]
            self._matrix_columns = np.ascontiguousarray(columns, dtype=np.intp)
        return self._matrix_columns

    def _step_columns(self):
        """``(columns, expand, all_columns)`` of the gradient step in place (found once per active set).

        Where two variables read the same column of the matrix (ε-SVR's ``α_i``
        and ``α*_i``, both on row ``i`` of ``K``: :class:`~dkernel.svm.EpsilonSVRGram`),
        the step sums over the distinct columns once and ``expand`` gives each
        variable its column's sum, the same sum to the bit (a column's sum
        does not depend on the other columns summed). ``all_columns``: the
        columns are all the matrix's, in order, read contiguously.
        """
        if self._step_plan is None:
            columns = self._columns()
            if self._matrix_index is None and not self.shrunk:
                self._step_plan = (columns, None, True)
            else:
                distinct, expand = np.unique(columns, return_inverse=True)
                if distinct.size == columns.size:
                    self._step_plan = (columns, None, False)
                else:  # distinct and all below the matrix's width: all its columns when as many
                    distinct = np.ascontiguousarray(distinct, dtype=np.intp)
                    self._step_plan = (distinct, expand, distinct.size == self._matrix.shape[1])
        return self._step_plan

    def _store_rows(self, idx, slots):
        """Hold the rows of ``idx`` in ``slots``: their positions in the matrix they lie in, or else a copy."""
        idx, slots = np.asarray(idx, dtype=np.intp), np.asarray(slots, dtype=np.intp)
        if not self.in_place:
            self.K[slots] = self._read_rows(idx)
            return
        self.position_in_slot[slots] = self._place_rows(idx, kept=slots)

    def _place_rows(self, idx, kept=()):
        """The positions of the rows of ``idx`` in the matrix they lie in, asked for with the rows held in the slots
        (but ``kept``) in one request.

        Positions hold until the next request; a request that moves rows (rows
        on demand becoming the whole Gram, a bounded row cache making room)
        returns a new matrix, and the held rows' positions are those it gives.
        """
        held = np.flatnonzero(self.row_in_slot >= 0)
        held = np.setdiff1d(held, kept, assume_unique=True) if len(kept) else held
        matrix, positions, index = row_source(self.rows, np.concatenate([self.row_in_slot[held], idx]))
        if matrix is not self._matrix:
            self._matrix, self._matrix_index, self._matrix_columns, self._step_plan = matrix, index, None, None
        self.position_in_slot[held] = positions[: held.size]
        return positions[held.size :]

    def load(self, B, new, new_slots, slots):
        """Fetch the rows of ``new`` into ``new_slots``; return ``(K_BB, alpha_B, G_B)``."""
        if new.size:
            self._store_rows(new, new_slots)
            self.row_in_slot[new_slots] = new
        K_BB = np.empty((B.size, B.size))
        if self.in_place:
            finite = gather_block_into(self._matrix, self.position_in_slot[slots], self._columns()[self.column_of[B]],
                                       K_BB)
        else:
            finite = gather_block_into(self.K, slots, self.column_of[B], K_BB)
        if not finite:
            raise_nonfinite_rows(B, K_BB)
        return K_BB, self.alpha[B].copy(), self.G[B].copy()

    def fill_rows(self, idx, slots):
        """Read the kernel rows of ``idx`` into ``slots`` (a resumed run's kept rows)."""
        if len(idx):
            self._store_rows(np.asarray(idx, dtype=np.intp), slots)
            self.row_in_slot[slots] = idx

    def update(self, B, slots, weights, alpha_B, k):
        """``G_A += y_A (K_BA^T w)``, ``alpha_B`` stored; return the next :meth:`candidates`."""
        self.weights[:] = 0.0
        self.weights[slots] = weights
        A = self.active
        step = np.empty(A.size)
        if self.in_place:
            columns, expand, all_columns = self._step_columns()
            if expand is None:
                self._weighted_rows_step(self._matrix, self.position_in_slot, self.weights, columns, all_columns, step)
            else:
                sums = np.empty(columns.size)
                self._weighted_rows_step(self._matrix, self.position_in_slot, self.weights, columns, all_columns, sums)
                np.take(sums, expand, out=step)
        else:  # the same sums over the rows copied into the slots
            weighted_rows_step(self.K, self._slots, self.weights, self._slots, True, step)
        if not add_gradient_step(self.G, self.y, A, step):
            raise_nonfinite_rows(B, self.held_rows(slots))
        if self._upper_sums is not None:
            self._track_upper_bound(B, slots, alpha_B)
        self.alpha[B] = alpha_B
        return self.candidates(k)

    def _at_upper(self, idx, alpha=None):
        """Whether each variable of ``idx`` is at its upper bound ``C_i`` (libsvm's ``is_upper_bound``), at
        :attr:`alpha` or at the values ``alpha`` of those variables."""
        return (self.alpha[idx] if alpha is None else alpha) >= self.C[idx]

    def _sum_at_upper(self, support, support_weights):
        """``(sum over the support at C, mask of those)``: the gradient's part from the variables at their upper
        bound (libsvm's ``G_bar``), summed from their rows."""
        upper = self._at_upper(support)
        return self._support_products(support[upper], support_weights[upper], np.arange(self.n)), upper

    def _track_upper_bound(self, B, slots, alpha_B):
        """Keep :attr:`_upper_sums` as the variables of ``B`` reach their upper bound or leave it (libsvm's update
        of ``G_bar``: the full rows of those variables, held in their slots)."""
        was, now = self._at_upper(B), self._at_upper(B, alpha_B)
        changed = was != now
        if not changed.any():
            return
        C_B = self.C[B]
        weights = np.zeros(self.weights.size)
        weights[np.asarray(slots)[changed]] = (np.where(now, C_B, -C_B) * self.y[B])[changed]
        index = self._matrix_index
        columns = np.empty(0, dtype=np.intp) if index is None else np.ascontiguousarray(index, dtype=np.intp)
        sums = np.empty(self.n)
        self._weighted_rows_step(self._matrix, self.position_in_slot, weights, columns, index is None, sums)
        self._upper_sums += sums

    def shrink(self, m, M):
        """Drop the active variables stuck at a bound (libsvm's test with the current ``m``, ``M``).

        Variables whose rows are held in the working-set slots stay active.
        Returns the number of variables dropped.
        """
        A = self.active
        alpha, y, C = self.alpha[A], self.y[A], self.C[A]
        if self.labels is not None:  # each label's own m and M
            (m_pos, M_pos), (m_neg, M_neg) = (self.extremes[label] for label in self.labels)
            m, M = np.where(y > 0, m_pos, m_neg), np.where(y > 0, M_pos, M_neg)
        up, low = violation_sets(alpha, y, C)
        v = -y * self.G[A]
        stuck = (up & ~low & (v < M)) | (low & ~up & (v > m))
        held = self.row_in_slot[self.row_in_slot >= 0]
        stuck[self.column_of[held]] = False
        keep = np.flatnonzero(~stuck)
        if keep.size > MIN_SHRINK_GAIN * A.size:
            return 0
        if self.in_place:
            self._matrix_columns = self._step_plan = None
        else:
            self.K = np.ascontiguousarray(self.K[:, keep])
        self.column_of[A[stuck]] = -1
        self.active = A[keep]
        self._label_active = None
        self.column_of[self.active] = np.arange(keep.size)
        return int(A.size - keep.size)

    def _starting_gradient(self):
        """``G = Q alpha0 + p``, the support's rows read in place where they lie in memory (no float64 copy of
        them: a start with ``nu n`` support vectors, as the one-class and ν problems', reads ``nu n`` rows)."""
        support, support_weights = starting_support(self.y, self.alpha)
        if support.size == 0:
            return self.p.astype(np.float64, copy=True)
        if not self.in_place:
            return np.array(initial_gradient(self.rows, self.y, self.p, support, support_weights, 0, self.n),
                            dtype=np.float64)
        every = np.arange(self.n)
        if self._upper_sums is None:
            return self.p + self.y * self._support_products(support, support_weights, every)
        self._upper_sums, upper = self._sum_at_upper(support, support_weights)
        free = self._support_products(support[~upper], support_weights[~upper], every)
        return self.p + self.y * (self._upper_sums + free)

    def unshrink(self):
        """Rebuild the gradient of the shrunk variables and make every variable active again.

        ``G_I = p_I + y_I K_{S,I}^T (y_S alpha_S)`` over the support ``S``,
        read in blocks of rows. Returns False when nothing was shrunk.
        """
        if not self.shrunk:
            return False
        inactive = np.flatnonzero(self.column_of < 0)
        support, support_weights = starting_support(self.y, self.alpha)
        if self._upper_sums is None:
            sums = self._support_products(support, support_weights, inactive)
        else:  # libsvm's G_bar: of the support, only the free variables' rows are read
            free = ~self._at_upper(support)
            sums = self._upper_sums[inactive] + self._support_products(support[free], support_weights[free], inactive)
        self.G[inactive] = self.p[inactive] + self.y[inactive] * sums
        self.active = np.arange(self.n)
        self.column_of = np.arange(self.n)
        self._label_active = None
        if self.in_place:
            self._matrix_columns = self._step_plan = None
            return True
        held = np.flatnonzero(self.row_in_slot >= 0)
        self.K = np.zeros((self.K.shape[0], self.n))
        if held.size:
            self.K[held] = self._full_rows(self.row_in_slot[held])
        return True

    def _support_products(self, support, weights, columns):
        """``K[support, columns]^T weights``: in place where the rows lie in memory, else from blocks of rows.

        In place (:func:`row_source`: a Gram held whole, or the rows computed
        so far of an on-demand Gram), one compiled pass reads each support row
        once, in the order of the gradient step.
        """
        if self.in_place:
            products = np.zeros(columns.size)
            part = np.empty(columns.size)
            for s in range(0, support.size, SUPPORT_BLOCK_ROWS):
                idx = support[s : s + SUPPORT_BLOCK_ROWS]
                positions = self._place_rows(idx)
                at = columns if self._matrix_index is None else self._matrix_index[columns]
                self._weighted_rows_step(self._matrix, positions, weights[s : s + SUPPORT_BLOCK_ROWS], at, False, part)
                products += part
                if not np.isfinite(part).all():
                    raise_nonfinite_rows(idx, self._matrix[positions[:1]])
            return products
        products = np.zeros(columns.size)
        for s in range(0, support.size, GRADIENT_BLOCK_ROWS):
            idx = support[s : s + GRADIENT_BLOCK_ROWS]
            block = np.take(self._full_rows(idx), columns, axis=1).astype(np.float64, copy=False)
            products += weights[s : s + GRADIENT_BLOCK_ROWS] @ block
            if not np.isfinite(products).all():
                raise_nonfinite_rows(idx, block)
        return products

    def snapshot(self):
        """The state the next iterations depend on, copied and left as it is (a checkpoint's write reads it only).

        Returns ``(alpha, G, active, held, upper_sums)``: ``G`` as held (exact over the active variables, as last
        updated over the shrunk ones), ``active`` the active set's mask (None when every variable is active),
        ``held`` the variable whose row each slot holds (-1: none), ``upper_sums`` libsvm's ``G_bar`` (None when
        not kept). Unlike :meth:`state`, nothing is unshrunk: rebuilding the gradient of the shrunk variables
        early would change the run's path (the variables active, the rounding of ``G``).
        """
        active = None
        if self.shrunk:
            active = np.zeros(self.n, dtype=np.int8)
            active[self.active] = 1
        upper = None if self._upper_sums is None else self._upper_sums.copy()
        return self.alpha.copy(), self.G.copy(), active, self.row_in_slot.copy(), upper

    def restore(self, state):
        """Take up a checkpoint's shrinking state (:meth:`snapshot`): the active set, then the rows held in every
        slot (only the kept rows where ``state`` does not record them). ``G`` and ``upper_sums`` were given to
        the constructor."""
        if state.active is not None and not np.all(state.active):
            keep = np.flatnonzero(state.active)
            self.active = keep
            self.column_of = np.full(self.n, -1, dtype=np.intp)
            self.column_of[keep] = np.arange(keep.size)
            self._label_active = None
            if self.in_place:
                self._matrix_columns = self._step_plan = None
            else:
                self.K = np.zeros((self.K.shape[0], keep.size))
        if state.held is None:
            self.fill_rows(state.kept, state.kept_slots)
        else:
            slots = np.flatnonzero(state.held >= 0)
            self.fill_rows(state.held[slots], slots)
        if not self.shrinks:  # a shrunk state resumed where the loop does not shrink: the exact gradient first
            self.unshrink()

    def state(self):
        """``(alpha, G)`` of all samples, ``G`` exact (shrunk variables rebuilt first)."""
        self.unshrink()
        return self.alpha, self.G
