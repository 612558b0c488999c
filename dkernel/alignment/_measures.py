"""Kernel alignment: exact in one streaming pass over the blocks, or estimated from samples.

.. math::

    A(K_1, K_2) = \\frac{\\langle K_1, K_2 \\rangle_F}
                       {\\sqrt{\\langle K_1, K_1 \\rangle_F \\langle K_2, K_2 \\rangle_F}},
    \\qquad
    A(K, tt^T) = \\frac{t^T K t}{\\|t\\|^2 \\|K\\|_F}

(Kandola et al., Definition 1 and eq. 1; with ±1 labels ``‖t‖² = m``).
The target ``t`` is the label vector for classification, the uneven-class
vector of Kandola's eq. (9) (``1/n₊`` and ``-1/n₋``), or the centered outputs
``y - ȳ`` for regression (eq. 7).

For ``c > 2`` classes the papers define no target; two are offered. The
multiclass target ``T = YYᵀ`` (``target="multiclass"``) takes for ``Y`` the
simplex code of the labels, ``Y_ik = 1`` when ``y_i`` is class ``k`` and
``−1/(c−1)`` otherwise, so that ``T_ij = c/(c−1)`` within a class and
``−c/(c−1)²`` between classes (scaled, ``1`` and ``−1/(c−1)``); for two classes ``T = 2yyᵀ``,
the binary target up to a scale, which the alignment ignores. Then
``A(K, T) = tr(YᵀKY) / (‖YᵀY‖_F ‖K‖_F)``, the same one pass with ``c``
columns. :func:`one_vs_rest_alignment` gives instead the ``c`` binary
alignments ``A(K, t_k t_kᵀ)`` of class ``k`` (``+1``) against the rest
(``−1``), in one pass too.

The exact functions accept any Gram source (:class:`~dkernel.gram.GramMatrix`,
the lazy views of :mod:`dkernel.views`, a dask array or a small ndarray)
and reduce over its ``.dask`` blocks in parallel: each block contributes
``t_iᵀ K_ij t_j`` and ``‖K_ij‖²_F``, so no ``n × n`` array is formed and the
matrix is read once.

References
----------
.. [1] J. Kandola, J. Shawe-Taylor and N. Cristianini, "On the extensions of
   kernel alignment", NeuroCOLT Technical Report, 2002, sections 2–4.
.. [2] N. Cristianini, J. Shawe-Taylor, A. Elisseeff and J. Kandola, "On
   kernel-target alignment", NIPS 14, 2002.
"""

import dataclasses
import math
from numbers import Integral

import dask
import dask.array as da
import numpy as np

# One pass over a block in its dtype, compiled at install time.
from _dkernel_compiled.alignment import target_sums

from .._runtime.client import client_for, compute_with_progress, put_data
from .._runtime.validation import check_labels, random_generator
from ..centering._origins import SampleSizeError
from ..exceptions import InvalidLabelsError
from ._inputs import check_finite_block, gram_input, real_block
from ..gram._sources import (
    KernelGram,
    principal_submatrix,
    source_dask,
    source_diag,
    source_n,
)

__all__ = [
    "AlignmentEstimate",
    "alignment",
    "alignment_target",
    "frobenius_norm",
    "multiclass_target",
    "one_vs_rest_alignment",
    "sampled_target_alignment",
    "target_alignment",
]

TARGETS = ("classification", "uneven", "regression")
#: The targets of :func:`target_alignment` and :func:`sampled_target_alignment`: the vector ones and ``YYᵀ``.
MATRIX_TARGETS = (*TARGETS, "multiclass")

_STRIP = 512


def alignment_target(y, target="classification"):
    """The target vector ``t`` of ``A(K, ttᵀ)``.

    Parameters
    ----------
    y : array-like of shape (n,)
        Labels (two classes) or real outputs (regression).
    target : {"classification", "uneven", "regression"}, default="classification"
        ``"classification"``: ``t_i = ±1`` (the larger label is +1);
        ``"uneven"``: ``t_i = 1/n₊`` or ``-1/n₋`` (Kandola eq. 9);
        ``"regression"``: ``t = y - ȳ`` (eq. 7).

    Returns
    -------
    t : ndarray of shape (n,)
    """
    y = check_labels(y)
    if target == "multiclass":
        raise ValueError("the multiclass target YYᵀ has rank c, not one: it is no vector t. Its alignment is "
                         "target_alignment(K, y, target='multiclass'); one vector per class is "
                         "one_vs_rest_alignment(K, y).")
    if target == "regression":
        if y.dtype.kind not in "iuf":
            raise InvalidLabelsError(f"the regression target needs numeric outputs; y has dtype {y.dtype}.")
        t = y.astype(np.float64) - float(np.mean(y))
        if not np.any(t):
            raise InvalidLabelsError("the outputs are all equal, so y - mean(y) is zero; alignment is undefined.")
        return t
    if target not in TARGETS:
        raise ValueError(f"target must be one of {list(TARGETS)}; got {target!r}.")
    classes = np.unique(y)
    if len(classes) != 2:
        raise InvalidLabelsError(
            f"the {target} target needs exactly two classes; the labels have {len(classes)} "
            f"({classes[:5].tolist()}{'...' if len(classes) > 5 else ''}). Use target='regression' for real "
            f"outputs, or one-vs-rest labels."
        )
    pos = y == classes[1]
    if target == "classification":
        return np.where(pos, 1.0, -1.0)
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    return np.where(pos, 1.0 / n_pos, -1.0 / n_neg)


def multiclass_target(y):
    """The factor ``Y`` (n × c) of the multiclass target ``T = YYᵀ``: the simplex code of the labels.

    ``Y_ik = 1`` when ``y_i`` is the k-th class, ``−1/(c−1)`` otherwise.
    """
    y = check_labels(y)
    classes, index = np.unique(y, return_inverse=True)
    c = len(classes)
    if c < 2:
        raise InvalidLabelsError(f"the multiclass target needs at least two classes; the labels have {c}.")
    Y = np.full((len(y), c), -1.0 / (c - 1))
    Y[np.arange(len(y)), index] = 1.0
    return Y


def one_vs_rest_targets(y):
    """``(classes, T)``: column k of ``T`` (n × c) is ``+1`` on class k and ``−1`` on the rest."""
    y = check_labels(y)
    classes, index = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        raise InvalidLabelsError(f"one-vs-rest alignment needs at least two classes; the labels have {len(classes)}.")
    T = -np.ones((len(y), len(classes)))
    T[np.arange(len(y)), index] = 1.0
    return classes, T


def _target_factor(y, target):
    """``t`` of ``T = ttᵀ``: a vector (:func:`alignment_target`) or, for ``"multiclass"``, the n × c ``Y``."""
    if target not in MATRIX_TARGETS:
        raise ValueError(f"target must be one of {list(MATRIX_TARGETS)}; got {target!r}.")
    if target == "multiclass":
        return multiclass_target(y)
    return alignment_target(y, target)


def _target_norm(t):
    """``‖ttᵀ‖_F = ‖tᵀt‖_F``: ``‖t‖²`` for a vector."""
    return float(t @ t) if t.ndim == 1 else float(np.linalg.norm(t.T @ t))


def _target_block_stats(K, t, rows, cols):
    """``(t_Iᵀ K_IJ t_J, ‖K_IJ‖²_F)``; for a target of c columns the c values ``(t_Iᵀ K_IJ t_J)_kk``, then the norm.

    A complex block is refused; a block with NaN or infinities (its ``‖K_IJ‖²_F`` non-finite) raises
    :class:`~dkernel.exceptions.NonFiniteInputError` naming its rows.
    """
    K = real_block(K, "the Gram matrix K")
    if t.ndim == 2:
        K = np.asarray(K, dtype=np.float64)
        products = K @ t[cols[0] : cols[1]]
        stats = np.append(np.einsum("ik,ik->k", t[rows[0] : rows[1]], products), np.vdot(K, K))
    else:
        if K.dtype not in (np.float32, np.float64):
            K = K.astype(np.float64)
        t = np.ascontiguousarray(t, dtype=np.float64)
        stats = np.array(target_sums(K, t[rows[0] : rows[1]], t[cols[0] : cols[1]]))
    if not np.isfinite(stats[-1]):
        check_finite_block(K, rows[0], "the Gram matrix K")
    return stats


def _summed(*parts):
    return np.sum(parts, axis=0)


def _pair_block_stats(K1, K2, rows):
    """``(⟨K₁,K₂⟩_F, ‖K₁‖²_F, ‖K₂‖²_F)`` of one block pair, whose rows are ``rows``; complex blocks and blocks with
    NaN or infinities are refused."""
    K1, K2 = real_block(K1, "source1"), real_block(K2, "source2")
    out = np.zeros((1, 1, 3))
    for s in range(0, K1.shape[0], _STRIP):
        a = np.asarray(K1[s : s + _STRIP], dtype=np.float64)
        b = np.asarray(K2[s : s + _STRIP], dtype=np.float64)
        out[0, 0] += (np.vdot(a, b), np.vdot(a, a), np.vdot(b, b))
    if not np.isfinite(out).all():
        first_row = int(rows[0]) if len(rows) else 0
        check_finite_block(K1, first_row, "source1")
        check_finite_block(K2, first_row, "source2")
    return out


def _target_alignment_value(sums, tt):
    """``tᵀKt / (‖t‖² ‖K‖_F)`` from the sums of :func:`_target_sums` (``ValueError`` for a zero ``K``)."""
    q, f = float(np.sum(sums[:-1])), float(sums[-1])
    if f == 0:
        raise ValueError("the Gram matrix is zero, so its alignment is undefined.")
    return q / (tt * math.sqrt(f))


def _pair_alignment_value(stats):
    """``⟨K₁,K₂⟩_F / sqrt(‖K₁‖²_F ‖K₂‖²_F)`` from the sums of :func:`_pair_block_stats` (``ValueError`` for a zero
    Gram)."""
    s12, s11, s22 = (float(v) for v in stats)
    if s11 == 0 or s22 == 0:
        raise ValueError("one of the Gram matrices is zero, so the alignment is undefined.")
    return s12 / math.sqrt(s11 * s22)


def _target_row_tasks(source, t, client):
    """One task per row block ``I``: ``(Σ_j t_Iᵀ K_Ij t_j, Σ_j ‖K_Ij‖²_F)``, one block at a time.

    ``t`` enters the graph once (:func:`put_data`, scattered with a client);
    each block task slices its rows and columns of it.
    """
    K = source_dask(source, client)
    t = put_data(np.asarray(t, dtype=np.float64), client, name="alignment-target-" + dask.base.tokenize(t))
    row_bounds, col_bounds = (np.cumsum((0,) + chunks).tolist() for chunks in K.chunks)
    return [
        dask.delayed(_summed, pure=True)(*[
            dask.delayed(_target_block_stats, pure=True)(
                block, t, (row_bounds[i], row_bounds[i + 1]), (col_bounds[j], col_bounds[j + 1]))
            for j, block in enumerate(row)
        ])
        for i, row in enumerate(K.to_delayed(optimize_graph=False))  # keeps the futures of K's scattered data
    ]


def _target_sums(source, t, client=None, progress=False):
    """``(tᵀKt, ‖K‖²_F)`` in one pass over the blocks, on ``client`` (None: Dask's local scheduler).

    For a target of c columns: the c diagonal values of ``tᵀKt``, then ``‖K‖²_F``.
    """
    parts = compute_with_progress(_target_row_tasks(source, t, client), client, progress, label="row blocks")
    return np.sum(parts, axis=0)


def target_alignment(source, y, target="classification", *, compute=True, client=None, progress=False):
    """Exact kernel-target alignment ``tᵀKt / (‖t‖² ‖K‖_F)`` in one streaming pass (Kandola eq. 1).

    Parameters
    ----------
    source : Gram source
        GramMatrix, lazy view (centered, normalized ...), dask array or ndarray.
    y : array-like of shape (n,)
    target : {"classification", "uneven", "regression", "multiclass"}, default="classification"
        See :func:`alignment_target`; ``"multiclass"``: ``T = YYᵀ`` with the simplex code ``Y`` of any number
        of classes (:func:`multiclass_target`).
    compute : bool, default=True
        ``False`` returns a lazy 0-d dask array (``client`` is not used).
    client : distributed.Client, str, None or False, default=None
        Where to compute (:func:`dkernel._runtime.client.resolve_client`: None is the
        current default client if any, else this process). Each task reduces
        one block to two numbers; the sums of each row block are gathered
        as they complete.
    progress : bool, default=False
        Show the row blocks finished so far.

    Returns
    -------
    float

    Raises
    ------
    NonFiniteInputError
        ``K`` holds NaN or infinities (at compute time for a lazy result).
    ValueError
        ``K`` is zero, so the alignment is undefined (at compute time for a lazy result), or complex.
    """
    source = gram_input(source)
    n = source_n(source)
    t = _target_factor(check_labels(y, n), target)
    tt = _target_norm(t)
    if not compute:
        sums = dask.delayed(_summed, pure=True)(*_target_row_tasks(source, t, None))
        return da.from_delayed(dask.delayed(_target_alignment_value, pure=True)(sums, tt), shape=(),
                               dtype=np.float64)
    with client_for(client) as client:
        sums = _target_sums(source, t, client, progress)
    return _target_alignment_value(sums, tt)


def one_vs_rest_alignment(source, y, *, client=None, progress=False):
    """The c binary alignments ``A(K, t_k t_kᵀ)``, class k (``+1``) against the rest (``−1``), in one pass.

    Parameters
    ----------
    source : Gram source
    y : array-like of shape (n,)
        Labels of two or more classes.
    client, progress
        As :func:`target_alignment`.

    Returns
    -------
    classes : ndarray of shape (c,)
    alignments : ndarray of shape (c,)
        ``t_kᵀKt_k / (n ‖K‖_F)``; for two classes both equal the binary alignment.
    """
    source = gram_input(source)
    n = source_n(source)
    classes, T = one_vs_rest_targets(check_labels(y, n))
    with client_for(client) as client:
        sums = _target_sums(source, T, client, progress)
    if sums[-1] == 0:
        raise ValueError("the Gram matrix is zero, so its alignment is undefined.")
    return classes, sums[:-1] / (n * math.sqrt(float(sums[-1])))


def frobenius_norm(source, *, client=None):
    """``‖K‖_F`` in one streaming pass (float64 accumulation), on ``client`` (see :func:`target_alignment`)."""
    source = gram_input(source)
    with client_for(client) as client:
        return math.sqrt(float(_target_sums(source, np.zeros(source_n(source)), client)[1]))


def alignment(source1, source2, *, compute=True):
    """Exact alignment ``⟨K₁,K₂⟩_F / sqrt(⟨K₁,K₁⟩_F ⟨K₂,K₂⟩_F)`` in one pass over both matrices.

    Parameters
    ----------
    source1, source2 : Gram sources of the same shape
        The second is rechunked to the blocks of the first if they differ.
    compute : bool, default=True
        ``False`` returns a lazy 0-d dask array; the errors below are then raised when it is computed.

    Raises
    ------
    NonFiniteInputError
        A Gram matrix holds NaN or infinities.
    ValueError
        A Gram matrix is zero (the alignment is undefined), or complex; the shapes differ.
    """
    K1, K2 = source_dask(gram_input(source1, "source1")), source_dask(gram_input(source2, "source2"))
    if K1.shape != K2.shape:
        raise ValueError(f"the Gram matrices have shapes {K1.shape} and {K2.shape}; they must be equal.")
    if K2.chunks != K1.chunks:
        K2 = K2.rechunk(K1.chunks)
    rows = da.arange(K1.shape[0], chunks=(K1.chunks[0],))
    stats = da.blockwise(
        _pair_block_stats, "ijk", K1, "ij", K2, "ij", rows, "i",
        new_axes={"k": 3}, adjust_chunks={"i": 1, "j": 1}, dtype=np.float64,
    ).sum(axis=(0, 1))
    if not compute:
        return da.from_delayed(dask.delayed(_pair_alignment_value, pure=True)(stats), shape=(), dtype=np.float64)
    return _pair_alignment_value(stats.compute())


@dataclasses.dataclass(frozen=True)
class AlignmentEstimate:
    """A sampled alignment estimate.

    Attributes
    ----------
    value : float
        Mean of the per-sample estimates.
    stderr : float
        Standard error of ``value``: the standard deviation of the
        per-sample estimates over ``sqrt(n_repeats)``.
    n_sample : int
        ``n'``, points per sample.
    n_repeats : int
        Number of independent samples.
    stratified : bool
        Whether each sample was drawn class by class (see :func:`sampled_target_alignment`).
    """

    value: float
    stderr: float
    n_sample: int
    n_repeats: int
    stratified: bool = False

    def __str__(self):
        how = ", stratified by class" if self.stratified else ""
        return f"{self.value:.6g} ± {self.stderr:.2g} (n'={self.n_sample}, {self.n_repeats} samples{how})"


def sampled_target_alignment(source, y, n_sample, *, n_repeats=10, target="classification", stratify="auto",
                             random_state=None, client=None, progress=False):
    """Kernel-target alignment estimated from ``n_repeats`` random ``n' × n'`` submatrices.

    Each sample ``S`` of ``n'`` points (without replacement) gives the
    off-diagonal sums ``Σ_{i≠j∈S} t_i t_j K_ij`` and ``Σ_{i≠j∈S} K_ij²``,
    each pair weighted by the inverse of its probability of being drawn
    (Horvitz–Thompson), which makes them unbiased estimates of the full
    off-diagonal sums of Kandola's eq. (1). The diagonal terms ``Σ t_i² K_ii``
    and ``Σ K_ii²`` are exact (``diag()`` costs ``O(n)``), and ``t`` is built
    from all labels. Estimating the diagonal from the sample instead would
    overweight it by a factor ``n/n'``, which biases the alignment of kernels
    with a dominant diagonal (RBF with a small width).

    A class target (``"classification"``, ``"uneven"``, ``"multiclass"``) is
    constant on the pairs of two given classes, and the sums of ``K`` over
    within-class and between-class pairs differ most. Sampling stratified by
    class removes the variance that comes from how many points of each class a
    sample happens to hold: class ``c`` of ``n_c`` points gives ``m_c`` of them
    (``n'`` shared in proportion to the class sizes, at least two per class), and
    a pair of classes ``(c, d)`` is weighted by ``n_c n_d / (m_c m_d)``, a pair
    within class ``c`` by ``n_c (n_c − 1) / (m_c (m_c − 1))``. A uniform sample
    is the case of one stratum: every pair weighs ``n (n − 1) / (n' (n' − 1))``.

    Parameters
    ----------
    source : Gram source
    y : array-like of shape (n,)
    n_sample : int
        ``n'``, with ``2 <= n' <= n``.
    n_repeats : int, default=10
        Independent samples (at least 2, for the standard error).
    target : {"classification", "uneven", "regression", "multiclass"}, default="classification"
        As :func:`target_alignment`.
    stratify : {"auto", True, False}, default="auto"
        Draw each sample class by class. ``"auto"``: for a class target when
        ``n'`` allows two points of every class, uniform otherwise (always
        for ``"regression"``). ``True`` raises where it cannot be done.
    random_state : int, Generator or None
    client : distributed.Client, str, None or False, default=None
        Where to compute (:func:`dkernel._runtime.client.resolve_client`). On a
        cluster, one task per sample reduces its ``n' × n'`` submatrix to its
        sums per pair of classes: a :class:`~dkernel.gram._sources.KernelGram`
        (with a :class:`Kernel`) ships ``X_S`` once per sample and the worker
        evaluates ``K(X_S, X_S)``; a store or a lazy view is read by the
        workers. Matrices held in this process (ndarray, ``DenseGram``, views
        with ``principal_submatrix`` other than a ``KernelGram``) are sampled here.
    progress : bool, default=False
        Show the samples finished so far.

    Returns
    -------
    AlignmentEstimate

    Examples
    --------
    >>> import numpy as np
    >>> from dkernel import KernelGram
    >>> from dkernel.alignment import sampled_target_alignment, target_alignment
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(600, 3)); y = np.repeat([0, 1, 2], 200)
    >>> X[:, 0] += y
    >>> K = KernelGram(X, "rbf", gamma=0.5)
    >>> est = sampled_target_alignment(K, y, 150, target="multiclass", random_state=0, client=False)
    >>> est.stratified, abs(est.value - target_alignment(K, y, "multiclass", client=False)) < 4 * est.stderr
    (True, True)
    """
    source = gram_input(source)
    n = source_n(source)
    y = check_labels(y, n)
    t = _target_factor(y, target)
    if isinstance(n_sample, bool) or not isinstance(n_sample, Integral) or not (2 <= n_sample <= n):
        raise SampleSizeError(
            f"n_sample must be an integer in [2, n={n}]; got {n_sample!r}. Use target_alignment for the exact value."
        )
    if isinstance(n_repeats, bool) or not isinstance(n_repeats, Integral) or n_repeats < 2:
        raise SampleSizeError(f"n_repeats must be an integer >= 2 (for a standard error); got {n_repeats!r}.")
    strata = _strata(y, target, stratify, n_sample)
    sizes = np.bincount(strata)
    allocation = proportional_allocation(sizes, n_sample)
    pair_weights = horvitz_thompson_pair_weights(sizes, allocation)
    rng = random_generator(random_state)
    d = source_diag(source)
    if not np.isfinite(d).all():
        check_finite_block(d[:, None], 0, "the diagonal of the Gram matrix K", "estimating its alignment")
    weights = t**2 if t.ndim == 1 else np.sum(t**2, axis=1)  # ‖t_i‖², the diagonal of T
    q_diag, f_diag, tt = float(weights @ d), float(d @ d), _target_norm(t)
    members = [np.flatnonzero(strata == c) for c in range(len(sizes))]
    samples = [_stratified_sample(rng, members, allocation) for _ in range(n_repeats)]
    with client_for(client) as client:
        sums = _off_diagonal_sums_of_samples(source, t, strata, samples, client, progress)
    values = []
    for q_pairs, f_pairs in sums:
        f = f_diag + float(np.sum(pair_weights * f_pairs))
        if not f > 0:
            raise ValueError("the sampled Gram matrix is zero, so its alignment is undefined.")
        values.append((q_diag + float(np.sum(pair_weights * q_pairs))) / (tt * math.sqrt(f)))
    values = np.asarray(values)
    return AlignmentEstimate(float(values.mean()), float(values.std(ddof=1) / math.sqrt(n_repeats)),
                             int(n_sample), int(n_repeats), len(sizes) > 1)


def _strata(y, target, stratify, n_sample):
    """The stratum of each point (its class index), or all zeros for a uniform sample."""
    if stratify not in ("auto", True, False):
        raise ValueError(f"stratify must be 'auto', True or False; got {stratify!r}.")
    uniform = np.zeros(len(y), dtype=np.intp)
    if stratify is False:
        return uniform
    if target == "regression":
        if stratify is True:
            raise ValueError("stratify=True needs classes; the regression target has real outputs. "
                             "Use stratify='auto' or False.")
        return uniform
    _, strata = np.unique(y, return_inverse=True)
    needed = int(np.sum(np.minimum(np.bincount(strata), 2)))
    if needed > n_sample:
        if stratify is True:
            raise SampleSizeError(f"a sample stratified by class needs two points of each class: n_sample >= "
                                  f"{needed}; got {n_sample}.")
        return uniform
    return strata.astype(np.intp, copy=False)


def proportional_allocation(sizes, n_sample):
    """Points drawn from each stratum: ``n'`` shared in proportion to ``sizes`` (largest remainders), at least two
    of every stratum (all of a stratum with fewer), never more than a stratum holds; they sum to ``n'``."""
    sizes = np.asarray(sizes, dtype=np.int64)
    share = n_sample * sizes / sizes.sum()
    floor = np.minimum(sizes, 2)
    m = np.clip(np.floor(share).astype(np.int64), floor, sizes)
    while m.sum() < n_sample:  # give the next point to the stratum furthest below its share
        room = np.where(m < sizes, share - m, -np.inf)
        m[int(np.argmax(room))] += 1
    while m.sum() > n_sample:  # take one back from the stratum furthest above its share
        excess = np.where(m > floor, m - share, -np.inf)
        m[int(np.argmax(excess))] -= 1
    return m


def horvitz_thompson_pair_weights(sizes, allocation):
    """``W[c, d]``: the inverse probability that a given pair of points of strata ``c`` and ``d`` is in a sample
    holding ``allocation[c]`` of the ``sizes[c]`` points of each stratum; ``0`` for a stratum of one point."""
    n, m = np.asarray(sizes, dtype=np.float64), np.asarray(allocation, dtype=np.float64)
    W = np.outer(n, n) / np.outer(m, m)
    pairs = m * (m - 1)
    np.fill_diagonal(W, np.divide(n * (n - 1), pairs, out=np.zeros_like(n), where=pairs > 0))
    return W


def _stratified_sample(rng, members, allocation):
    return np.sort(np.concatenate([rng.choice(idx, size=int(m), replace=False)
                                   for idx, m in zip(members, allocation)]))


def _off_diagonal_sums(K, tS, labels, k):
    """``(Q, F)``, each ``k × k``: ``Q[c, d] = Σ t_i·t_j K_ij`` and ``F[c, d] = Σ K_ij²`` over the pairs
    ``i ≠ j`` of one sample's submatrix ``K = K[S][:, S]`` with ``i`` of stratum ``c`` and ``j`` of stratum ``d``."""
    K = np.asarray(real_block(K, "the Gram matrix K"), dtype=np.float64)
    tS = tS.reshape(len(tS), -1)
    dS = np.diagonal(K)
    Q, F = np.zeros((k, k)), np.zeros((k, k))
    for c in range(k):
        rows = np.flatnonzero(labels == c)
        if rows.size == 0:
            continue
        whole = rows.size == len(K)  # one stratum (a uniform sample): the rows read in place, not copied
        Kc = K if whole else K[rows]
        tc = tS if whole else tS[rows]
        Q[c] = np.bincount(labels, np.einsum("jl,jl->j", (tc.T @ Kc).T, tS), minlength=k)
        F[c] = np.bincount(labels, np.einsum("ij,ij->j", Kc, Kc), minlength=k)
    Q[np.diag_indices(k)] -= np.bincount(labels, np.sum(tS**2, axis=1) * dS, minlength=k)
    F[np.diag_indices(k)] -= np.bincount(labels, dS * dS, minlength=k)
    if not np.isfinite(F).all():
        check_finite_block(K, 0, "a sampled submatrix of the Gram matrix K", "estimating its alignment")
    return Q, F


def _kernel_sample_sums(XS, tS, labels, k, kernel):
    return _off_diagonal_sums(kernel.block(XS, XS, symmetric=True), tS, labels, k)


def _off_diagonal_sums_of_samples(source, t, strata, samples, client, progress):
    """:func:`_off_diagonal_sums` of every sample, in this process or one task per sample on ``client``."""
    k = int(strata.max()) + 1
    on_cluster_kernel = client is not None and isinstance(source, KernelGram) and source.kernel is not None
    if not on_cluster_kernel and (isinstance(source, np.ndarray) or hasattr(source, "principal_submatrix")
                                  or hasattr(source, "submatrix")):  # a store: the samples' rows alone
        return [_off_diagonal_sums(principal_submatrix(source, S), t[S], strata[S], k) for S in samples]
    if not on_cluster_kernel:
        # The submatrices as arrays, in one computation: Dask's array optimizations then read only the sampled
        # rows of each stored chunk, and each chunk once, not once per sample.
        K = source_dask(source)
        submatrices = compute_with_progress([K[S][:, S] for S in samples], client, progress, label="samples")
        return [_off_diagonal_sums(sub, t[S], strata[S], k) for sub, S in zip(submatrices, samples)]
    tasks = []
    for j, S in enumerate(samples):
        tS = put_data(t[S], client, name=f"alignment-sample-target-{j}-" + dask.base.tokenize(t, S))
        XS = put_data(source.X[S], client, name=f"alignment-sample-X-{j}-" + dask.base.tokenize(S))
        labels = put_data(strata[S], client, name=f"alignment-sample-strata-{j}-" + dask.base.tokenize(strata, S))
        tasks.append(dask.delayed(_kernel_sample_sums, pure=True)(XS, tS, labels, k, source.kernel))
    return compute_with_progress(tasks, client, progress, label="samples")
