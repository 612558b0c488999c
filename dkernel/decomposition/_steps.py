"""The steps of a :class:`~dkernel.decomposition.KernelPCA` fit, each one equation, and what they evaluate.

The origin of a centering (:func:`training_origin`), the lazy centered
Gram (:func:`centered_operator`), scikit-learn's post-processing of the
eigenpairs (:func:`finished_eigenpairs`, with eigenvalues of rounding taken
as 0: :func:`zero_eigenvalue_tolerance`), the projection coefficients and the
centered test rows; scikit-learn's evaluation of a kernel function
(:class:`PairwiseKernel`); the origin a model of a precomputed Gram keeps
(:class:`FittedOrigin`); and the memory rule of ``eigen_solver="auto"``
(:func:`gram_fits_in_memory`).
"""

import numpy as np
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.utils.extmath import svd_flip
from sklearn.utils.validation import _check_psd_eigenvalues

from .._runtime.validation import check_labels
from ..centering._origins import Centering, InvalidLabelsError, origin_products
from ..gram._sources import as_gram
from ..svm._inputs import is_gram_source
from ..views._centered import CenteredGram

__all__ = ["GRAM_MEMORY_SHARE", "FittedOrigin", "PairwiseKernel", "centered_operator", "centered_test_rows",
           "finished_eigenpairs", "gram_fits_in_memory", "projection_coefficients", "training_origin",
           "zero_eigenvalue_tolerance"]

#: ``eigen_solver="auto"`` holds the ``n × n`` float64 Gram in memory (scikit-learn's choice of ARPACK or LAPACK)
#: while it takes at most this share of the memory available when ``fit`` starts; beyond it, the randomized solver.
GRAM_MEMORY_SHARE = 0.25


def _available_memory():
    """Bytes of memory available to this process now."""
    import psutil

    return int(psutil.virtual_memory().available)


def gram_fits_in_memory(n, share=GRAM_MEMORY_SHARE):
    """Whether an ``n × n`` float64 Gram takes at most ``share`` of the memory available now."""
    return 8.0 * n * n <= share * _available_memory()


def zero_eigenvalue_tolerance(n, scale, dtype=np.float64):
    """``10 · n · eps · max_i |K_ii|``: eigenvalues of the centered Gram below it in absolute value are rounding,
    taken as 0.

    ``scale`` is the largest diagonal entry of the base Gram in absolute value, ``eps`` the machine precision of
    the Gram's dtype (float32 for a kernel evaluated on float32 data). Centering a constant Gram leaves entries of a
    few ``eps · scale``, all alike, whose one eigenvalue is ``n`` times that: the factor 10 covers them.
    """
    return 10 * n * np.finfo(np.float32 if dtype == np.float32 else np.float64).eps * scale


class PairwiseKernel:
    """``K(A, B) = pairwise_kernels(A, B, metric=metric, filter_params=True, **params)``, scikit-learn's kernel.

    How scikit-learn's KernelPCA evaluates a callable ``kernel`` (on each pair
    of samples, with ``kernel_params``) and a named kernel with parameters
    dkernel's kernels do not take (``gamma=0``, a non-integer ``degree``).
    Blocks of rows in, a block of kernel values out: what a
    :class:`~dkernel.gram.KernelGram` evaluates on the fly, in this process
    or on the Dask workers (it is sent there with its function, as
    scikit-learn's ``n_jobs`` workers receive it).
    """

    def __init__(self, metric, params=None):
        self.metric = metric
        self.params = dict(params or {})

    def __call__(self, A, B):
        return pairwise_kernels(A, B, metric=self.metric, filter_params=True, **self.params)

    def __repr__(self):
        name = self.metric if isinstance(self.metric, str) else getattr(self.metric, "__name__", repr(self.metric))
        return f"PairwiseKernel({name!r}, {self.params!r})"


class FittedOrigin:
    """The origin of a fitted KernelPCA on a precomputed Gram, as :meth:`KernelPCA.transform` needs it: its weights
    ``γ``, ``h = Kγ`` and ``h0 = γᵀKγ`` (Meilă eqs. 14, 17–18), not the training Gram."""

    def __init__(self, centering, h, h0):
        self.centering = centering
        self.h = np.asarray(h, dtype=np.float64)
        self.h0 = float(h0)
        self.n = self.h.shape[0]

    def center_test(self, K_test):
        """``K_a(x, x_i) = K(x, x_i) - Σ_j γ_j K(x, x_j) - h_i + h0`` from base-kernel rows ``K_test`` (m × n)."""
        K_test = np.asarray(K_test, dtype=np.float64)
        h_test = K_test[:, self.centering.support] @ self.centering.weights
        return K_test - h_test[:, np.newaxis] - self.h[np.newaxis, :] + self.h0


# --------------------------------------------------------------------------- #
# The steps of a fit, each one equation
# --------------------------------------------------------------------------- #


def training_origin(center, n, y=None, *, n_sample=None, random_state=None):
    """The origin ``a = Σ γ_i φ(x_i)`` of ``center`` for ``n`` training points, or None (no centering).

    Only ``"class-balanced"`` and ``"multiclass"`` read ``y``; otherwise it is
    ignored (any shape or values), as by an unsupervised scikit-learn estimator.
    ``"standard"``: ``γ_i = 1/n`` (the centre of gravity); ``"class-balanced"``:
    ``γ_i = 1/(2 n^±)`` (Meilă eq. 13); ``"multiclass"``: ``γ_i = 1/(c n_{class(i)})``;
    with ``n_sample``, the origin of a random sample of ``n'`` points (Meilă §5,
    :meth:`Centering.sampled`). A :class:`Centering` is used as given.
    """
    if center is None or isinstance(center, Centering):
        if n_sample is not None:
            raise ValueError(f"n_sample={n_sample} draws a sampled origin for a named center ('standard', "
                             f"'class-balanced', 'multiclass'); center={center!r} has none to draw. Remove n_sample "
                             f"or name the scheme.")
        if center is not None and center.n != n:
            raise ValueError(f"the Centering is defined for n={center.n} points but there are {n} training "
                             f"samples; build it for this training set.")
        return center
    if center == "standard":
        y = None  # unsupervised: y is ignored, as by scikit-learn
    elif y is None:
        raise InvalidLabelsError(f"center={center!r} needs the class labels: call fit(X, y), or use "
                                 f"center='standard'.")
    else:
        y = check_labels(y)
        if y.shape[0] != n:
            raise ValueError(f"y has {y.shape[0]} labels but there are {n} training samples.")
    return Centering.from_scheme(center, None if center == "standard" else y, n=n, n_sample=n_sample,
                                 random_state=random_state)


def centered_operator(source, centering, client=None):
    """``K_a``, the lazy centered view of ``source`` on the origin ``centering`` (Meilă eq. 14); ``source`` itself
    when ``centering`` is None.

    ``h = Kγ`` and ``h0 = γᵀKγ`` (eqs. 17–18) are computed once, on ``client``
    (:func:`~dkernel.centering.origin_products`: only ``K[:, S]`` for a sampled origin).
    """
    source = as_gram(source)
    if centering is None:
        return source
    h, h0 = origin_products(source, centering, client=client)
    return CenteredGram(source, centering, h=h, h0=h0)


def finished_eigenpairs(values, vectors, *, remove_zero_eig=False):
    """scikit-learn's post-processing: PSD clean-up, deterministic signs, decreasing order, null space removed.

    Eigenvalues tiny against the largest (or slightly negative) become 0
    (``_check_psd_eigenvalues``); each eigenvector is flipped so that its
    largest entry in absolute value is positive (``svd_flip``); with
    ``remove_zero_eig`` the eigenpairs of a zero eigenvalue are dropped.
    """
    values = _check_psd_eigenvalues(values, enable_warnings=False)
    vectors, _ = svd_flip(u=np.asarray(vectors), v=None)
    order = values.argsort()[::-1]
    values, vectors = values[order], vectors[:, order]
    if remove_zero_eig:
        vectors, values = vectors[:, values > 0], values[values > 0]
    return values, vectors


def projection_coefficients(values, vectors):
    """``v_k / √λ_k``: the coefficients of the unit-norm feature-space component ``k``; 0 for ``λ_k = 0``."""
    coefficients = np.zeros_like(vectors)
    nonzero = np.flatnonzero(values)
    coefficients[:, nonzero] = vectors[:, nonzero] / np.sqrt(values[nonzero])
    return coefficients


def centered_test_rows(operator, X_new, precomputed, rows):
    """``K_a(x, x_i)`` for the test points ``rows`` (Meilă eq. 14 for test rows, against the fitted origin).

    ``X_new`` holds the points (the kernel is evaluated through the view's
    ``cross``), or, with ``precomputed``, the base-kernel rows
    ``K(x, x_i)`` (an ndarray or a Gram source read by ``rows``), centered
    with ``h(x) = Σ_j γ_j K(x, x_j)``.
    """
    if not precomputed:
        return np.asarray(operator.cross(X_new[rows]), dtype=np.float64)
    K = X_new.rows(np.arange(rows.start, rows.stop)) if is_gram_source(X_new) else X_new[rows]
    if isinstance(operator, (CenteredGram, FittedOrigin)):
        return operator.center_test(K)
    return np.asarray(K, dtype=np.float64)
