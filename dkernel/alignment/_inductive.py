"""Inductive kernel adaptation by alignment (Kandola, Shawe-Taylor & Cristianini, §5, Algorithm 2).

The training Gram is decomposed, ``K_II = V Λ Vᵀ``; eigenvalues below
``tol · λ_max`` are dropped ("threshold small eigenvalues"); the weights
``α`` of eq. (5) are computed from the training labels. A point ``x`` is
projected onto the eigenvectors through the kernel,

.. math::

    v_i(x) = \\frac{1}{\\lambda_i} \\sum_j V_{ji} K(x, x_j),

(``v_i(x_j) = V_ji`` on the training points) and the adapted kernel is
``G(x, z) = Σ_i α_i v_i(x) v_i(z)``: Algorithm 2's ``G(I, I) = V diag(α) Vᵀ``,
``G(I, J) = V Λ⁻¹ diag(α) Vᵀ K(I, J)``, ``G(J, J) = K(J, I) V diag(α) Λ⁻² Vᵀ K(I, J)``.
The training eigenvectors are orthonormal, so Algorithm 2's weight
``a(n) = (V(:,n)'·y(I))² / (V(:,n)'·V(:,n))²`` is that of eq. (5): the two
readings of Algorithm 1 (:mod:`~dkernel.alignment._reweighting`) coincide.
It is the linear kernel of the features ``φ(x) = √α ⊙ Λ⁻¹ Vᵀ k(x)``, so
:class:`KernelAligner` is a scikit-learn transformer (``transform`` gives
``φ``) and its ``adapted_kernel_`` a kernel function for ``dkernel.SVC`` or
scikit-learn estimators.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import ClassifierTags
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from .._runtime.client_parameter import ClientParameterMixin
from .._runtime.validation import check_data, check_finite, check_labels, materialize
from ..kernels._kernels import kernel_from_dict
from ..kernels._parameters import check_kernel_object_parameters, named_kernel
from ._reweighting import alignment_weights, keep_significant, optimal_alignment
from ._inputs import check_finite_gram, check_symmetric_gram
from ._spectrum import top_eigenpairs

__all__ = ["AdaptedKernel", "KernelAligner"]

#: KernelAligner's kernel parameters' defaults (``None``: the kernel's own); other values beside a kernel object
#: are refused.
_KERNEL_DEFAULTS = {"gamma": None, "coef0": None, "degree": None}

#: The default threshold of Algorithm 2's "threshold small eigenvalues", whose value the paper does not give:
#: eigenvalues below ``INDUCTIVE_TOL · λ_max`` are dropped before projecting new points. ``v_i(x)`` divides by
#: ``λ_i``, so an eigenvalue near round-off multiplies the round-off of ``K(x, X)`` by ``1/λ_i``; 10⁻⁶ bounds that
#: factor by 10⁶ relative to ``λ_max``. :func:`~dkernel.alignment.numerical_rank_tol` gives the smallest
#: threshold that drops only numerically zero eigenvalues.
INDUCTIVE_TOL = 1e-6


class AdaptedKernel:
    """The fitted kernel ``G(x, z) = φ(x) · φ(z)``, ``φ(x) = k(x, X_fit) P`` with ``P = V Λ⁻¹ diag(√α)``.

    A callable ``G(A, B)`` (what ``dkernel.SVC(kernel=...)`` and scikit-learn's
    ``SVC(kernel=...)`` call); ``features`` gives ``φ``. With a precomputed base
    kernel it maps rows ``K(new, train)`` instead of data.
    """

    def __init__(self, kernel, X_fit, projection):
        self.kernel = kernel
        self.X_fit = X_fit
        self.projection = projection

    @property
    def precomputed(self):
        return self.kernel is None

    def features(self, X):
        """``φ(X)``: ``K(X, X_fit) P`` (``X`` is that kernel block when the base kernel is precomputed)."""
        if self.precomputed:
            K = np.asarray(X, dtype=np.float64)
            if K.ndim != 2 or K.shape[1] != self.projection.shape[0]:
                raise ValueError(f"with kernel='precomputed' pass K(X, X_train) of shape (n, "
                                 f"{self.projection.shape[0]}); got shape {K.shape}.")
            check_finite_gram(K, "the kernel block K(X, X_train)", what="transforming")
        else:
            K = np.asarray(self.kernel.block(check_data(X), self.X_fit), dtype=np.float64)
        return K @ self.projection

    def __call__(self, A, B=None):
        """``G(A, B)`` (``G(A, A)`` without ``B``)."""
        if self.precomputed:
            raise TypeError("this adapted kernel was fitted on a precomputed Gram, so it maps Gram rows, not data; "
                            "use features(K(X, X_train)) or KernelAligner.gram.")
        FA = self.features(A)
        FB = FA if B is None else self.features(B)
        return FA @ FB.T

    def __repr__(self):
        return f"AdaptedKernel(kernel={self.kernel!r}, n_fit={self.projection.shape[0]}, rank={self.projection.shape[1]})"

    #: The ``name`` of :meth:`to_dict`'s spec.
    SPEC_NAME = "adapted"

    def to_dict(self):
        """The JSON part of this kernel: its base kernel's spec and the shapes of its two arrays. A model file keeps
        ``X_fit`` and ``P`` as arrays beside it (:meth:`from_dict` takes them back)."""
        return {"name": self.SPEC_NAME, "kernel": None if self.precomputed else self.kernel.to_dict(),
                "n_fit": int(self.projection.shape[0]), "rank": int(self.projection.shape[1])}

    @classmethod
    def from_dict(cls, spec, X_fit, projection):
        """The kernel of :meth:`to_dict`'s ``spec`` with its arrays; ``ValueError`` if they do not fit the spec."""
        projection = np.asarray(projection, dtype=np.float64)
        if projection.shape != (spec["n_fit"], spec["rank"]) or (X_fit is not None and X_fit.shape[0] != spec["n_fit"]):
            raise ValueError(f"the adapted kernel's arrays (X_fit {None if X_fit is None else X_fit.shape}, P "
                             f"{projection.shape}) do not fit its spec (n_fit={spec['n_fit']}, rank={spec['rank']})")
        return cls(None if spec["kernel"] is None else kernel_from_dict(spec["kernel"]), X_fit, projection)


class KernelAligner(ClientParameterMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Kandola's inductive alignment (Algorithm 2): a kernel adapted to the training labels, defined everywhere.

    Parameters
    ----------
    kernel : str, dict, Kernel or "precomputed", default="rbf"
        The base kernel ``k`` (``get_kernel`` names). ``"precomputed"``:
        ``fit`` takes ``K(X_train, X_train)`` and ``transform`` ``K(X, X_train)``.
    gamma, coef0, degree : kernel parameters (scikit-learn's names)
    target : {"classification", "uneven", "regression"}, default="classification"
        The target of the alignment (``±1``, eq. 9, eq. 7).
    rank, mass : optional
        How many eigenpairs to keep (:func:`~dkernel.alignment.top_eigenpairs`);
        default all above ``tol``.
    method : {"auto", "exact", "randomized", "nystroem"}, default="auto"
    tol : float in (0, 1), default=1e-6
        Drop eigenvalues below ``tol · λ_max`` ("threshold small eigenvalues", Algorithm 2; the paper gives no
        value). Positive: new points are projected through ``1/λ_i``.
        :func:`~dkernel.alignment.numerical_rank_tol` ``(n)`` drops only the numerically zero ones.
    random_state : int, Generator or None
    client : distributed.Client, str, None or False, default=None
        Where the randomized eigensolver's passes run.

    Attributes
    ----------
    eigenvalues_ : ndarray of shape (r,)
    weights_ : ndarray of shape (r,)
        ``α`` of eq. (5), ``Σ α² = 1``.
    alignment_ : float
        The training alignment of ``G`` (eq. 6).
    adapted_kernel_ : AdaptedKernel
    n_features_in_ : int
        Features seen in ``fit`` (the number of training points with ``kernel="precomputed"``).
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined only when ``X`` has feature names that are all strings (a pandas DataFrame).

    Notes
    -----
    It follows scikit-learn's estimator conventions (``check_estimator``): data are checked by scikit-learn's
    ``validate_data`` (its messages for complex, object, empty or wrongly shaped input; CSR/CSC/COO input is
    accepted except with a precomputed kernel), NaN and infinities by dkernel's :class:`NonFiniteInputError`.
    ``y`` is required; the ``"classification"`` and ``"uneven"`` targets take exactly two classes, which the
    tags declare (``classifier_tags.multi_class=False``). At least two training points are needed.
    """

    def __init__(self, kernel="rbf", *, gamma=None, coef0=None, degree=None, target="classification", rank=None,
                 mass=None, method="auto", tol=INDUCTIVE_TOL, random_state=None, client=None):
        self.kernel = kernel
        self.gamma = gamma
        self.coef0 = coef0
        self.degree = degree
        self.target = target
        self.rank = rank
        self.mass = mass
        self.method = method
        self.tol = tol
        self.random_state = random_state
        self.client = client

    def _base_kernel(self, X):
        if self._is_precomputed():
            return None
        check_kernel_object_parameters(self.kernel, gamma=self.gamma, coef0=self.coef0, degree=self.degree,
                                       defaults=_KERNEL_DEFAULTS)
        return named_kernel(self.kernel, gamma=self.gamma, coef0=self.coef0, degree=self.degree).resolve(X.shape[1])

    def _training_gram(self, X, kernel):
        if kernel is None:
            if hasattr(X, "rows") and hasattr(X, "n"):
                return X  # a Gram source (a store's rows, a view): read blockwise by the eigensolver
            K = np.asarray(X, dtype=np.float64)
            if K.ndim != 2 or K.shape[0] != K.shape[1]:
                raise ValueError(f"with kernel='precomputed' fit takes the square training Gram; got shape {K.shape}.")
            return K
        if self.method in ("randomized", "nystroem"):
            from ..gram._sources import KernelGram

            return KernelGram(X, kernel)
        return np.asarray(kernel.block(X, X, symmetric=True), dtype=np.float64)

    def _is_precomputed(self):
        return isinstance(self.kernel, str) and self.kernel == "precomputed"

    def _validate_X(self, X, reset):
        """``X`` checked as scikit-learn's estimators do; NaN and infinities as dkernel's error.

        A precomputed training Gram in memory is also checked for symmetry, to the round-off of its dtype
        (:func:`~dkernel.alignment._inputs.check_symmetric_gram`). A precomputed Gram source (a store's rows, a
        view: ``rows`` and ``n``) is left to the eigensolver, which reads it blockwise; its NaN are the eigensolver's
        error, as those of a precomputed array (and, in ``transform``, :class:`AdaptedKernel`'s).
        """
        if reset and self._is_precomputed() and hasattr(X, "rows") and hasattr(X, "n"):
            self.n_features_in_ = int(X.shape[1]) if hasattr(X, "shape") else int(X.n)
            if hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
            return X
        X = materialize(X)
        what = "fitting" if reset else "transforming"
        if self._is_precomputed():
            # Converted first, so that NaN are named before a wrong width (as scikit-learn's checks order them).
            K = check_array(X, accept_sparse=False, dtype=np.float64, ensure_all_finite=False,
                            ensure_min_samples=2 if reset else 1, input_name="X")
            if reset:
                check_finite(K, name="the precomputed Gram matrix", what=what)
                check_symmetric_gram(K, "X, the precomputed Gram matrix,", dtype=getattr(X, "dtype", None))
                K = (K + K.T) / 2  # symmetric to the round-off of X's dtype, as the eigensolver reads it
            else:
                check_finite_gram(K, "the kernel block K(X, X_train)", what="transforming")
                if K.shape[1] != self.n_features_in_:
                    # scikit-learn's message, and what a test kernel is.
                    raise ValueError(f"X has {K.shape[1]} features, but {type(self).__name__} is expecting "
                                     f"{self.n_features_in_} features as input: with kernel='precomputed' pass "
                                     f"K(X, X_train) of shape (n, {self.n_features_in_}); got shape {K.shape}.")
            validate_data(self, X, reset=reset, skip_check_array=True)  # n_features_in_, feature names
            return K
        X = validate_data(self, X, reset=reset, accept_sparse="csr", dtype=[np.float64, np.float32],
                          ensure_all_finite=False, order="C", ensure_min_samples=2 if reset else 1)
        check_finite(X, name="X", what=what)
        return X

    def fit(self, X, y):
        """Decompose the training Gram, reweight its eigenvectors to the labels ``y`` and keep the projection."""
        from ._reweighting import adaptation_target

        if self.rank is not None and (isinstance(self.rank, bool) or not isinstance(self.rank, Integral)):
            raise ValueError(f"rank must be a positive integer; got {self.rank!r}.")
        if isinstance(self.tol, bool) or not isinstance(self.tol, Real) or not 0 < self.tol < 1:
            raise ValueError(f"tol must be a positive number below 1, a fraction of λ_max in (0, 1); got "
                             f"{self.tol!r}. Eigenvalues below tol · λ_max are dropped, and new points are projected "
                             f"through 1/λ_i, so eigenvalues at zero must be: pass tol=numerical_rank_tol(n) (only "
                             f"the numerically zero ones) or a larger fraction of λ_max such as 1e-6.")
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None.")
        X = self._validate_X(X, reset=True)
        kernel = self._base_kernel(X)
        y = check_labels(y, X.shape[0])
        t = adaptation_target(y, self.target)
        spectrum = top_eigenpairs(self._training_gram(X, kernel), self.rank, mass=self.mass, method=self.method,
                                  random_state=self.random_state, client=self.client)
        values, vectors = keep_significant(spectrum.values, spectrum.vectors, self.tol)
        self.eigenvalues_ = values
        self.eigenvectors_ = vectors
        self.weights_ = alignment_weights(vectors, t)
        self.alignment_ = optimal_alignment(vectors, t)
        self.adapted_kernel_ = AdaptedKernel(kernel, None if kernel is None else X,
                                             vectors / values * np.sqrt(self.weights_))
        return self

    @property
    def _n_features_out(self):
        """The count of :meth:`transform`'s features, one per kept eigenvector (named ``kernelaligner0, ...`` by
        ``get_feature_names_out``, scikit-learn's names for the components of a decomposition)."""
        return self.eigenvectors_.shape[1]

    def transform(self, X):
        """The features ``φ(X)`` (``G(X, Z) = φ(X) φ(Z)ᵀ``); ``X`` is ``K(X, X_train)`` for a precomputed kernel."""
        check_is_fitted(self, "adapted_kernel_")
        return self.adapted_kernel_.features(self._validate_X(X, reset=False))

    def gram(self, X, Z=None):
        """``G(X, Z)`` (``G(X, X)`` without ``Z``); kernel blocks against the training set when precomputed."""
        FX = self.transform(X)
        return FX @ (FX if Z is None else self.transform(Z)).T

    def training_gram(self):
        """``G(I, I) = V diag(α) Vᵀ`` on the training points."""
        check_is_fitted(self, "adapted_kernel_")
        return (self.eigenvectors_ * self.weights_) @ self.eigenvectors_.T

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self._is_precomputed()
        # The kernels take CSR matrices (sparse products); a precomputed Gram is dense.
        tags.input_tags.sparse = not self._is_precomputed()
        tags.target_tags.required = True
        if self.target in ("classification", "uneven"):
            # Two classes only (the ±1 target); declared as scikit-learn's binary classifiers declare it.
            tags.classifier_tags = ClassifierTags(multi_class=False)
        return tags
