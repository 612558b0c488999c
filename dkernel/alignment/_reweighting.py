"""Alignment-optimal eigen-reweighting (Kandola, Shawe-Taylor & Cristianini, eqs. 2–6, Algorithm 1).

Given the eigendecomposition ``K = Σ λ_i v_i v_iᵀ``, the kernels
``G = Σ α_i v_i v_iᵀ`` (eq. 2) have the alignment with a target ``t`` (eq. 4)

.. math::

    A(G, tt^T) = \\frac{\\sum_i \\alpha_i \\langle v_i, t \\rangle^2}{\\|t\\|^2 \\sqrt{\\sum_i \\alpha_i^2}},

maximized under ``Σ α_i² = 1`` (eq. 5) by ``α_i = ⟨v_i, t⟩² / sqrt(Σ_j ⟨v_j, t⟩⁴)``,
with the alignment (eq. 6) ``A* = sqrt(Σ_i ⟨v_i, t⟩⁴) / ‖t‖²``. The target is
that of :func:`dkernel.alignment.alignment_target`: ``±1`` labels, the uneven
classes of eq. 9 (``1/n₊``, ``-1/n₋``) or centered outputs (eq. 7).

Transductive use (Algorithm 1): the eigenvectors are those of the Gram of all
points, labelled and unlabelled; ``⟨v_i, t⟩`` is summed over the labelled
rows ``I`` only, and ``G`` is defined on every point. The paper gives the
weights in two forms, which differ when some rows are unlabelled
(``weighting``):

``"eq5"``
    ``α_i ∝ ⟨v_i, t⟩²`` over the labelled rows, the maximizer of eq. (5);
``"algorithm1"``
    Algorithm 1's line ``a(n) = (V(I,n)'·y(I))² / (V(I,n)'·V(I,n))²``: each
    weight divided by ``‖v_i‖⁴`` on the labelled rows, which amplifies the
    eigenvectors that live mostly on the unlabelled points.

Both are normalized to ``Σ α_i² = 1`` (the alignment is scale-free). When
every row is labelled ``‖v_i‖ = 1`` and the two coincide.

Algorithm 1 runs over every eigenvector (``for n = 1:length of Kernel``):
``tol=None``. Those of numerically zero eigenvalues are then an arbitrary
basis of ``K``'s null space (the one the eigensolver returns), and ``G``
depends on it; the default ``tol`` drops eigenvalues below ``tol · λ_max``
so that ``G`` is determined by ``K``.
"""

from numbers import Real

import numpy as np

from ._inputs import check_finite_gram, check_symmetric_gram, gram_input
from ._measures import alignment_target
from ..gram._sources import source_n
from .._runtime.validation import check_labels
from ..exceptions import InvalidLabelsError
from ._adapted_gram import AdaptedGram
from ._spectrum import top_eigenpairs

__all__ = ["WEIGHTINGS", "alignment_weights", "numerical_rank_tol", "optimal_alignment", "transductive_adaptation",
           "labelled_target"]

#: The default cut-off of :func:`transductive_adaptation`: eigenvalues below ``TOL · λ_max`` are dropped, so that
#: ``G`` does not depend on the eigensolver's choice of a basis of the null space (Algorithm 1 keeps them: ``tol=None``).
TOL = 1e-10

#: The two forms of the weights (module docstring): eq. (5) and Algorithm 1's line.
WEIGHTINGS = ("eq5", "algorithm1")


def numerical_rank_tol(n):
    """The relative cut-off of a numerically zero eigenvalue of an ``n × n`` matrix: ``n · ε`` (``λ < n ε λ_max``).

    MATLAB's ``rank`` and ``pinv`` tolerance, ``max(size(A)) · eps(norm(A))``, as a fraction of ``λ_max``: the
    eigenvalues it drops are round-off, the others are resolved by the eigensolver.
    """
    return float(n) * float(np.finfo(np.float64).eps)


def adaptation_target(y, target):
    """:func:`~dkernel.alignment.alignment_target`, refusing class labels given as regression outputs.

    Outputs with only two distinct values are class labels: eq. (7) would
    centre them into a classification target in disguise, so
    ``target="regression"`` asks for real outputs.
    """
    values = np.unique(np.asarray(y))
    if target == "regression" and len(values) == 2:
        raise InvalidLabelsError(
            f"target='regression' needs real outputs, but y holds only two values ({values[0].item()!r} and "
            f"{values[1].item()!r}): class labels. Use target='classification' (±1) or target='uneven' (eq. 9).")
    return alignment_target(y, target)


def _check_weighting(weighting):
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {list(WEIGHTINGS)} (eq. 5 or Algorithm 1's line); got "
                         f"{weighting!r}.")


def _projections(vectors, t):
    """``Vᵀ t`` after checking that ``vectors`` (m, k) and ``t`` (m,) match and are finite."""
    vectors, t = np.asarray(vectors, dtype=np.float64), np.asarray(t, dtype=np.float64)
    if vectors.ndim != 2 or t.ndim != 1 or vectors.shape[0] != t.shape[0]:
        raise ValueError(f"vectors must be (m, k) and t (m,) on the same m labelled rows; got shapes "
                         f"{vectors.shape} and {t.shape}.")
    if not (np.isfinite(vectors).all() and np.isfinite(t).all()):
        raise ValueError("vectors and t must be finite; they hold NaN or infinite entries.")
    return vectors.T @ t


def alignment_weights(vectors, t, weighting="eq5"):
    """The weights ``α_i = ⟨v_i, t⟩² / sqrt(Σ_j ⟨v_j, t⟩⁴)`` of eq. (5), ``Σ α_i² = 1``, or Algorithm 1's.

    Parameters
    ----------
    vectors : ndarray of shape (m, k)
        The eigenvectors' entries on the labelled rows.
    t : ndarray of shape (m,)
        The target on those rows.
    weighting : {"eq5", "algorithm1"}, default="eq5"
        ``"algorithm1"``: ``⟨v_i, t⟩² / ‖v_i‖⁴`` (``‖v_i‖`` over these rows; 0 for a column that is zero on
        them), then normalized to ``Σ α_i² = 1``.
    """
    _check_weighting(weighting)
    projections = _projections(vectors, t)
    squares = projections**2
    if weighting == "algorithm1":
        norms = np.sum(np.asarray(vectors, dtype=np.float64) ** 2, axis=0)
        squares = np.divide(squares, norms**2, out=np.zeros_like(squares), where=norms > 0)
    norm = np.sqrt(np.sum(squares**2))
    if norm == 0:
        raise ValueError("the target is orthogonal to every eigenvector kept, so no reweighting aligns with it; "
                         "keep more eigenvectors (a larger rank or mass).")
    return squares / norm


def optimal_alignment(vectors, t):
    """Eq. (6): ``sqrt(Σ_i ⟨v_i, t⟩⁴) / ‖t‖²``, the alignment of the reweighted ``G`` with ``ttᵀ``.

    Exact for orthonormal ``vectors`` (all rows labelled, or the inductive
    algorithm's training eigenvectors).
    """
    projections = _projections(vectors, t)
    t = np.asarray(t, dtype=np.float64)
    return float(np.sqrt(np.sum(projections**4)) / (t @ t))


def _check_labelled_dtype(labelled):
    """Refuse a ``labelled`` that is neither a boolean mask nor integer indices (floats would be truncated)."""
    if labelled.ndim != 1:
        raise InvalidLabelsError(f"labelled must be 1-D (a boolean mask of the rows or row indices); got shape "
                                 f"{labelled.shape}.")
    if labelled.dtype.kind not in "biu":
        raise InvalidLabelsError(f"labelled must be a boolean mask of the rows or integer row indices; got dtype "
                                 f"{labelled.dtype} ({labelled[:3].tolist()}...), which would be truncated to "
                                 f"other rows. Pass np.flatnonzero(mask) or integer indices.")


def _check_not_an_integer_mask(labelled, n, n_labels):
    """Refuse a 0/1 mask of the ``n`` rows given as integers where ``y`` has another length: read as indices it
    names rows 0 and 1 again and again."""
    if labelled.dtype.kind in "iu" and labelled.shape == (n,) and n_labels != n and np.isin(labelled, (0, 1)).all():
        raise InvalidLabelsError(f"labelled holds only 0 and 1 over the {n} rows of the Gram matrix, and y has "
                                 f"{n_labels} labels: a mask must be boolean (labelled.astype(bool)); integers are "
                                 f"row indices.")


def _labelled_rows(labelled, n, n_labels):
    """The rows named by ``labelled`` (a boolean mask of the ``n`` rows, or distinct indices in ``[0, n)``)."""
    labelled = np.asarray(labelled)
    if labelled.size == 0:
        raise InvalidLabelsError("labelled names no rows; pass the rows that carry the labels y.")
    _check_labelled_dtype(labelled)
    if labelled.dtype == bool:
        if labelled.shape != (n,):
            raise InvalidLabelsError(f"the labelled mask has shape {labelled.shape}; the Gram matrix has {n} rows.")
        return np.flatnonzero(labelled)
    _check_not_an_integer_mask(labelled, n, n_labels)
    rows = labelled.astype(np.intp)
    if rows.min() < 0 or rows.max() >= n:
        raise InvalidLabelsError(f"labelled indices must lie in [0, {n}); got {rows.min()}..{rows.max()}.")
    values, counts = np.unique(rows, return_counts=True)
    if (counts > 1).any():
        raise InvalidLabelsError(f"labelled must name distinct rows; row {values[counts > 1][0]} appears "
                                 f"{counts[counts > 1][0]} times.")
    return rows


def labelled_target(y, n, labelled, target):
    """The rows ``I`` that carry labels and the target ``t`` on them.

    ``labelled`` is a boolean mask of the ``n`` rows or distinct integer indices, one per label of ``y``;
    ``None`` means every row (``len(y) == n``).
    """
    rows = np.arange(n) if labelled is None else _labelled_rows(labelled, n, len(np.atleast_1d(y)))
    y = check_labels(y, len(rows))
    return rows, adaptation_target(y, target)


def check_tol(tol):
    """``tol``: None, or a fraction of ``λ_max`` in ``[0, 1)`` (eigenvalues below ``tol · λ_max`` are dropped, so
    ``tol >= 1`` would drop them all)."""
    if tol is None:
        return None
    if isinstance(tol, bool) or not isinstance(tol, Real) or not 0 <= tol < 1:
        raise ValueError(f"tol must be None or a fraction of λ_max in [0, 1) (eigenvalues below tol · λ_max are "
                         f"dropped); got {tol!r}.")
    return float(tol)


def keep_significant(values, vectors, tol):
    """The eigenpairs with ``λ > tol · λ_max`` (all when ``tol`` is None)."""
    if tol is None or len(values) == 0:
        return values, vectors
    keep = values > tol * max(float(values[0]), 0.0)
    if not keep.any():
        raise ValueError("the Gram matrix is zero (every eigenvalue is below tol · λ_max); it cannot be adapted.")
    return values[keep], vectors[:, keep]


def transductive_adaptation(source, y, labelled=None, *, target="classification", weighting="eq5", rank=None,
                            mass=None, method="auto", tol=TOL, spectrum=None, random_state=None, client=None,
                            **solver_options):
    """Kandola's Algorithm 1: adapt the Gram of labelled and unlabelled points to the labels.

    Parameters
    ----------
    source : Gram source
        ``K`` on every point (labelled and not): ndarray, GramMatrix, lazy
        view, ``KernelGram``.
    y : array-like
        Labels of the rows ``labelled`` (of every row when it is None).
    labelled : bool mask of shape (n,) or distinct integer indices, optional
    target : {"classification", "uneven", "regression"}, default="classification"
    weighting : {"eq5", "algorithm1"}, default="eq5"
        The weights of eq. (5) or of Algorithm 1's line (divided by ``‖v_i‖⁴`` on the labelled rows); the same
        when every row is labelled.
    rank, mass, method, random_state, client, **solver_options
        The eigensolver (:func:`~dkernel.alignment.top_eigenpairs`).
    tol : float in [0, 1) or None, default=1e-10
        Drop eigenvalues below ``tol · λ_max``. ``None`` keeps every eigenvector, as Algorithm 1 does (those of
        zero eigenvalues are then the eigensolver's basis of the null space).
    spectrum : Spectrum, optional
        The eigenpairs of ``source`` from :func:`~dkernel.alignment.top_eigenpairs`, reused: Algorithm 1
        decomposes ``K`` once, before its runs, and only the labelled rows change from run to run.

    Returns
    -------
    AdaptedGram
        ``G = U diag(α) Uᵀ`` as a lazy low-rank view over every point.

    Raises
    ------
    NonFiniteInputError
        ``source`` holds NaN or infinities (the message names the first row holding one).
    ValueError
        ``source`` is not symmetric beyond round-off (the largest ``|K - Kᵀ|``, its row and column), or the
        eigensolver's parameters are invalid.
    """
    _check_weighting(weighting)
    tol = check_tol(tol)
    source = gram_input(source)
    n = source_n(source)
    if isinstance(source, np.ndarray):  # in memory: NaN and asymmetry named before any eigensolver reads it
        check_finite_gram(source, "source")
        check_symmetric_gram(source, "source")
    rows, t = labelled_target(y, n, labelled, target)
    if spectrum is None:
        spectrum = top_eigenpairs(source, rank, mass=mass, method=method, random_state=random_state, client=client,
                                  **solver_options)
    elif spectrum.vectors.shape[0] != n:
        raise ValueError(f"the spectrum's eigenvectors have {spectrum.vectors.shape[0]} rows; the Gram matrix has "
                         f"{n}. Pass the top_eigenpairs of this Gram matrix.")
    values, vectors = keep_significant(spectrum.values, spectrum.vectors, tol)
    weights = alignment_weights(vectors[rows], t, weighting)
    return AdaptedGram(vectors, weights, base=source, eigenvalues=values, target=target, method=spectrum.method,
                       mass=float(values.sum() / spectrum.trace) if spectrum.trace > 0 else float("nan"))
