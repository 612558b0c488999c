"""Kernel PCA: the eigenvectors of the Gram matrix centered in feature space, as scikit-learn's ``KernelPCA``.

Kernel PCA (Schölkopf, Smola & Müller 1998) is the PCA of the mapped data
``φ(x_i) - a``: its components are the eigenvectors of the centered Gram

.. math::

    K_a = K - 1 h^T - h 1^T + h_0, \\qquad h = K\\gamma,\\; h_0 = \\gamma^T K \\gamma

(Meilă eq. 14), here a lazy :class:`~dkernel.views.CenteredGram` over any
Gram source, for any origin ``a = Σ γ_i φ(x_i)``: the centre of gravity
(``γ = 1/n``, what scikit-learn's ``KernelCenterer`` does), the class-balanced
origin (eq. 13), the mean of the class centres, or an origin represented by a
sample of ``n'`` points (Meilă §5), whose ``h`` costs ``O(n n')``.

With ``K_a v_k = λ_k v_k`` (``‖v_k‖ = 1``), a point ``x`` projects on the
``k``-th component as

.. math::

    z_k(x) = \\sum_i \\frac{v_{ik}}{\\sqrt{\\lambda_k}} K_a(x, x_i), \\qquad
    K_a(x, x_i) = K(x, x_i) - h(x) - h_i + h_0, \\; h(x) = \\sum_j \\gamma_j K(x, x_j)

(the test-row correction of Meilă's Δb, eqs. 14–19), and a training point
as ``z_k(x_i) = √λ_k v_{ik}``.

The eigensolvers read the Gram only through the origin's ``h`` and ``h0``
and the base Gram: ``"dense"`` and ``"arpack"`` hold ``K_a`` in memory (the
base Gram evaluated once, ``h`` and ``h0`` taken from it, centered in place,
as scikit-learn's ``KernelCenterer``); ``"randomized"`` (Halko et al.'s subspace iteration) and ``"lobpcg"``
(Knyazev's block method, iterated to a residual tolerance) have as their only
access to the Gram blockwise products ``K Q`` with a tall thin ``Q``, each
block read from the source (a zarr store, a kernel evaluated on the fly) on
the Dask workers when a client is given, the centering applied to the
``n × k`` product (:mod:`._eigensolvers`): never an ``n × n`` array.

References
----------
.. [1] B. Schölkopf, A. Smola and K.-R. Müller, "Nonlinear component analysis
   as a kernel eigenvalue problem", Neural Computation 10(5), 1998.
.. [2] M. Meilă, "Data centering in feature space", AISTATS 2003, eqs. 12–19, §5.
.. [3] N. Halko, P.-G. Martinsson and J. A. Tropp, "Finding structure with
   randomness", SIAM Review 53(2), 2011, Algs. 4.4 and 5.3.
"""

import warnings
from numbers import Integral, Real

import numpy as np
from dask.utils import format_bytes
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from .._runtime.client import client_for
from .._runtime.client_parameter import ClientParameterMixin
from .._runtime.validation import check_finite, check_gram, materialize, random_generator
from ..centering._origins import Centering
from ..gram._sources import KernelGram, as_gram, source_diag
from ..kernels._kernels import Kernel, LinearKernel, NormalizedKernel
from ..kernels._parameters import resolve_kernel
from ..svm._inputs import is_gram_source
from ..svm._model_files import ModelFileMixin
from ..views._centered import CenteredGram
from ._eigensolvers import (arpack_eigenpairs, dense_eigenpairs, lobpcg_eigenpairs, materialized_gram,
                            randomized_eigenpairs)
from ._inverse import fit_preimage_map, inverse_transform, refuse_sparse
from ._steps import (GRAM_MEMORY_SHARE, FittedOrigin, PairwiseKernel, centered_operator, centered_test_rows,
                     finished_eigenpairs, gram_fits_in_memory, projection_coefficients, training_origin,
                     zero_eigenvalue_tolerance)

#: KernelPCA's own kernel parameter defaults (scikit-learn's KernelPCA): what a kernel object may come with.
_KERNEL_DEFAULTS = {"gamma": None, "coef0": 1, "degree": 3}

__all__ = ["KernelPCA", "centered_operator", "centered_test_rows", "finished_eigenpairs", "projection_coefficients",
           "training_origin"]

#: Bytes of one batch of test-kernel rows in :meth:`KernelPCA.transform` (m × n float64 values at a time).
TEST_BATCH_BYTES = 256 * 2**20

_CENTERS = ("standard", "class-balanced", "multiclass")

#: The named kernels, as scikit-learn's KernelPCA takes them.
_KERNEL_NAMES = ("linear", "poly", "rbf", "sigmoid", "cosine", "precomputed")


# --------------------------------------------------------------------------- #
# The estimator
# --------------------------------------------------------------------------- #


class KernelPCA(ClientParameterMixin, ModelFileMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Kernel principal component analysis with the centering in feature space chosen (Meilă 2002).

    A drop-in for :class:`sklearn.decomposition.KernelPCA` (all its parameters;
    its attributes, signs,
    zero-eigenvalue handling, ``n_components`` clipped to ``n_samples``,
    float32 kept, and ``inverse_transform`` learned by kernel ridge regression
    with ``fit_inverse_transform=True``) whose Gram is any dkernel
    source (a :class:`~dkernel.gram.GramMatrix` store, a kernel evaluated on
    the fly) and whose centering is an origin of :class:`~dkernel.centering.Centering`,
    applied lazily (:class:`~dkernel.views.CenteredGram`), never as a second
    ``n × n`` matrix. The components are the eigenvectors of ``K_a``
    (Meilă eq. 14); new points go through the centered test kernel against
    the same origin.

    Parameters
    ----------
    n_components : int, default=None
        Number of components; more than the number of training samples is
        clipped to it, as scikit-learn does. None keeps all of them (those of
        a zero eigenvalue removed), as scikit-learn. An eigenvalue below
        ``10 · n_samples · eps · max_i |K_ii|`` in absolute value (the base
        Gram's scale, ``eps`` of its dtype: :func:`zero_eigenvalue_tolerance`)
        is rounding and counts as zero.
    kernel : {"linear", "poly", "rbf", "sigmoid", "cosine", "precomputed"}, Kernel, dict or callable, default="linear"
        With ``"precomputed"``, ``fit`` takes the Gram matrix (a square ndarray
        or a :class:`~dkernel.gram.GramMatrix` / Gram source) and
        ``transform`` the test kernel ``K(X_test, X_train)``. ``"cosine"`` is
        the linear kernel normalized by the norms
        (:class:`~dkernel.kernels.NormalizedKernel` of the linear kernel). A
        callable is scikit-learn's: ``f(x, y, **kernel_params) -> float`` on
        two samples (1-D rows), evaluated on every pair by
        ``sklearn.metrics.pairwise_kernels(A, B, metric=f, filter_params=True,
        **kernel_params)`` (:class:`PairwiseKernel`), here on blocks of rows,
        in this process or on the workers of ``client``.
    gamma : float >= 0, default=None
        Of ``rbf``, ``poly`` and ``sigmoid``; None is ``1 / n_features``.
    degree : float >= 0, default=3
        Of ``poly`` (a non-integer one, or 0, evaluated by scikit-learn's
        ``pairwise_kernels``, as ``gamma=0``).
    coef0 : float, default=1
        Of ``poly`` and ``sigmoid``.
    kernel_params : dict, default=None
        Keyword arguments of a callable ``kernel`` (scikit-learn's; ignored by the other kernels, as there).
    alpha : float, default=1.0
        Ridge of the pre-image map learned with ``fit_inverse_transform``.
    fit_inverse_transform : bool, default=False
        Learn the pre-image map (:mod:`._inverse`): kernel ridge regression,
        with this kernel, from the training projections to the training data,
        so that :meth:`inverse_transform` is available (not with a precomputed
        kernel, nor sparse data, as scikit-learn).
    eigen_solver : {"auto", "dense", "arpack", "randomized", "lobpcg"}, default="auto"
        ``"dense"``: LAPACK on the materialized ``K_a``; ``"arpack"``: ARPACK
        on it; ``"randomized"``: subspace iteration through blockwise products
        with ``K_a`` (out of core, on the workers of ``client``), a fixed
        number of passes; ``"lobpcg"``: LOBPCG through the same products, one
        pass per iteration until the residuals are below ``tol`` (fewer than
        ``n_samples / 5`` components). ``"arpack"`` asked for all
        ``n_samples`` components uses the dense solver, with a
        ``RuntimeWarning`` (scikit-learn's, through scipy's ``eigsh``).
        ``"auto"``: scikit-learn's choice (ARPACK above 200 samples for fewer
        than 10 components, else dense) while the ``n × n`` float64 Gram takes
        at most :data:`GRAM_MEMORY_SHARE` (a quarter) of the memory available
        when ``fit`` starts; beyond that, randomized (out of core).
    n_oversamples : int, default=10
        Extra columns of the randomized solver.
    iterated_power : int >= 0 or "auto", default="auto"
        Power iterations of the randomized solver, each two products with
        ``K_a`` as scikit-learn's; ``"auto"``: 7 for ``n_components < 0.1 n``,
        else 4 (scikit-learn's rule).
    tol : float, default=0
        ARPACK's tolerance (0: machine precision), or LOBPCG's on the
        residual norms (0: scipy's default).
    max_iter : int, default=None
        ARPACK's iteration limit, or LOBPCG's (None: 100).
    remove_zero_eig : bool, default=False
        Drop the components of a zero eigenvalue (always done when
        ``n_components`` is None).
    random_state : int, RandomState, Generator or None, default=None
        ARPACK's starting vector, the randomized solver's test matrix and the
        sample of a sampled origin.
    copy_X : bool, default=True
        Copy the training data into ``X_fit_``; False keeps a reference to
        ``X`` when it is already a C-ordered float array (then changing ``X``
        afterwards changes the projections of new points), as scikit-learn's.
    n_jobs : int, default=None
        Accepted for scikit-learn's signature; it has no effect: the kernel
        blocks run on the threads of NumPy's BLAS, and the blockwise products
        on the Dask workers of ``client``.
    center : {"standard", "class-balanced", "multiclass"}, Centering or None, default="standard"
        The origin in feature space: the centre of gravity (scikit-learn's
        centering), halfway between the two class centres (Meilă eq. 13,
        needs ``y``), the mean of the class centres (needs ``y``), a
        :class:`~dkernel.centering.Centering` for these ``n`` points, or None
        (no centering: the uncentered second-moment eigenvectors).
    n_sample : int, default=None
        Represent the named origin by a random sample of ``n'`` training points
        (Meilă §5): ``h = Kγ`` then costs ``O(n n')`` kernel values.
    client : distributed.Client, str, None or False, default=None
        Where the blockwise products run (``h`` and the randomized solver's
        passes): None is the current default client if any, else this
        process; False is this process; a string is a cluster spec.

    Attributes
    ----------
    eigenvalues_ : ndarray of shape (n_components,)
        Eigenvalues of ``K_a`` in decreasing order. Computed in float64; stored, as the eigenvectors, the
        projections and the pre-image map, in float32 when the data (or the precomputed Gram) are float32.
    eigenvectors_ : ndarray of shape (n_samples, n_components)
        Unit-norm eigenvectors of ``K_a``, signs as ``svd_flip``.
    centering_ : Centering or None
        The origin used.
    dual_coef_ : ndarray of shape (n_samples, n_features)
        The pre-image map's coefficients (``fit_inverse_transform=True``).
    X_transformed_fit_ : ndarray of shape (n_samples, n_components)
        The training projections, the pre-image map's inputs (``fit_inverse_transform=True``).
    X_fit_ : ndarray or sparse matrix of shape (n_samples, n_features)
        The training data (the precomputed Gram matrix or Gram source with ``kernel="precomputed"``).
    gamma_ : float or None
        ``gamma``, or ``1 / n_features`` when it is None, for every kernel, as
        scikit-learn's (``n_samples`` features for a precomputed Gram); the
        kernel object's own ``gamma`` (None if it has none) for a :class:`~dkernel.kernels.Kernel`.
    n_features_in_ : int
        Features seen in ``fit`` (``n_samples`` for a precomputed kernel).
    feature_names_in_ : ndarray of str
        When ``X`` has string column names.

    A fitted KernelPCA is saved by :meth:`save` (zarr + JSON, no pickle) and
    read back by :meth:`load` or :func:`dkernel.load_model`; one of a Python
    kernel function cannot be saved. One of a precomputed Gram keeps what
    ``transform`` needs (the origin's ``h``, ``h0`` and the eigenpairs), not
    the Gram: ``X_fit_`` is None once loaded.

    References
    ----------
    .. [1] B. Schölkopf, A. Smola and K.-R. Müller, "Nonlinear component
       analysis as a kernel eigenvalue problem", Neural Computation 10(5), 1998.
    .. [2] M. Meilă, "Data centering in feature space", AISTATS 2003.
    .. [3] N. Halko, P.-G. Martinsson and J. A. Tropp, "Finding structure
       with randomness", SIAM Review 53(2), 2011.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.decomposition import KernelPCA as SklearnKernelPCA
    >>> from dkernel.decomposition import KernelPCA
    >>> X = np.random.default_rng(0).normal(size=(300, 5))
    >>> kpca = KernelPCA(n_components=3, kernel="rbf", gamma=0.1, eigen_solver="dense")
    >>> Z = kpca.fit_transform(X)
    >>> Z.shape
    (300, 3)
    >>> reference = SklearnKernelPCA(n_components=3, kernel="rbf", gamma=0.1, eigen_solver="dense")
    >>> bool(np.allclose(Z, reference.fit_transform(X), rtol=0, atol=1e-10))
    True

    The origin halfway between two class centres (Meilă eq. 13), represented
    by a sample of 100 points, projecting new points against it:

    >>> y = np.where(X[:, 0] > 0.5, 1, -1)
    >>> kpca = KernelPCA(n_components=2, kernel="rbf", gamma=0.1, center="class-balanced", n_sample=100,
    ...                  random_state=0).fit(X, y)
    >>> kpca.centering_
    Centering(scheme='sampled-class-balanced', n=300, n_support=100)
    >>> kpca.transform(X[:4]).shape
    (4, 2)
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "kernel": [StrOptions(set(_KERNEL_NAMES)), Kernel, dict, callable],
        "gamma": [Interval(Real, 0, None, closed="left"), None],
        "degree": [Interval(Real, 0, None, closed="left")],
        "coef0": [Interval(Real, None, None, closed="neither")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "fit_inverse_transform": ["boolean"],
        "eigen_solver": [StrOptions({"auto", "dense", "arpack", "randomized", "lobpcg"})],
        "n_oversamples": [Interval(Integral, 0, None, closed="left")],
        "iterated_power": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "remove_zero_eig": ["boolean"],
        "random_state": ["random_state"],
        "center": [StrOptions(set(_CENTERS)), Centering, None],
        "n_sample": [Interval(Integral, 1, None, closed="left"), None],
        "client": "no_validation",
        "kernel_params": [dict, None],
        "copy_X": ["boolean"],
        "n_jobs": [Integral, None],
    }

    def __init__(self, n_components=None, *, kernel="linear", gamma=None, degree=3, coef0=1, alpha=1.0,
                 fit_inverse_transform=False, eigen_solver="auto", n_oversamples=10, iterated_power="auto", tol=0,
                 max_iter=None, remove_zero_eig=False, random_state=None, center="standard", n_sample=None,
                 client=None, kernel_params=None, copy_X=True, n_jobs=None):
        self.n_components = n_components
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.alpha = alpha
        self.fit_inverse_transform = fit_inverse_transform
        self.eigen_solver = eigen_solver
        self.n_oversamples = n_oversamples
        self.iterated_power = iterated_power
        self.tol = tol
        self.max_iter = max_iter
        self.remove_zero_eig = remove_zero_eig
        self.random_state = random_state
        self.center = center
        self.n_sample = n_sample
        self.client = client
        self.kernel_params = kernel_params
        self.copy_X = copy_X
        self.n_jobs = n_jobs

    @property
    def _precomputed(self):
        return isinstance(self.kernel, str) and self.kernel == "precomputed"

    @property
    def _is_function(self):
        return callable(self.kernel) and not isinstance(self.kernel, Kernel)

    @staticmethod
    def _fitted_origin(centering, h, h0):
        """What ``transform`` centers a precomputed test kernel with: the origin, ``h`` and ``h0`` (a saved model)."""
        return FittedOrigin(centering, h, h0)

    def _kernel_evaluator(self, X):
        """The kernel of the estimator's parameters on ``X``: a dkernel :class:`Kernel`, or a :class:`PairwiseKernel`
        (scikit-learn's ``pairwise_kernels``) for a callable and for parameters dkernel's kernels do not take."""
        if self._is_function:
            return PairwiseKernel(self.kernel, self.kernel_params)
        if isinstance(self.kernel, str) and self.kernel == "cosine":
            return NormalizedKernel(LinearKernel())
        degree = self.degree
        if isinstance(self.kernel, str):
            gamma = 1.0 / X.shape[1] if self.gamma is None else float(self.gamma)
            integral = isinstance(degree, Integral) or float(degree).is_integer()
            if (self.kernel != "linear" and gamma == 0) or (self.kernel == "poly" and not (integral and degree >= 1)):
                return PairwiseKernel(self.kernel, {"gamma": gamma, "degree": degree, "coef0": self.coef0})
            if integral and not isinstance(degree, Integral):
                degree = int(degree)
        # gamma=None is 1 / n_features for a kernel name; beside a kernel object, only the defaults are no conflict.
        gamma = "auto" if self.gamma is None and not isinstance(self.kernel, (Kernel, dict)) else self.gamma
        return resolve_kernel(self.kernel, X, gamma=gamma, coef0=self.coef0, degree=degree,
                              defaults=_KERNEL_DEFAULTS)

    # -------------------------------------------------------------- fitting
    def _training_gram(self, X):
        """The Gram source of the training data: the user's matrix (precomputed) or ``K(X, X)`` on the fly."""
        if self._precomputed:
            if is_gram_source(X):
                n = int(X.n)
                if tuple(X.shape) != (n, n):
                    raise ValueError(f"a precomputed Gram matrix must be square (n_samples, n_samples); got shape "
                                     f"{tuple(X.shape)}.")
                self.n_features_in_ = n
                self.X_fit_ = X
                return X
            X = materialize(X)
            if sp.issparse(X):
                raise TypeError("a sparse precomputed kernel is not supported: pass the Gram matrix as a dense "
                                "array.")
            K = validate_data(self, X, dtype=np.float64, ensure_all_finite=False, order="C")
            check_finite(K, name="the precomputed Gram matrix", what="fitting")
            self.X_fit_ = check_gram(K)
            return self.X_fit_
        X = validate_data(self, materialize(X), accept_sparse="csr", dtype=[np.float64, np.float32], order="C",
                          ensure_all_finite=False)
        check_finite(X, name="X", what="fitting")
        self.X_fit_ = X = X.copy() if self.copy_X else X
        return KernelGram(X, self._kernel_evaluator(X))

    def _n_components(self, n):
        # More components than samples are clipped to n_samples, as scikit-learn's KernelPCA does.
        return n if self.n_components is None else min(n, self.n_components)

    def _solver(self, n, k):
        if self.eigen_solver == "arpack" and k >= n:
            # scikit-learn's eigsh call falls back to LAPACK here, with scipy's RuntimeWarning.
            warnings.warn(f"eigen_solver='arpack' computes fewer than n_samples={n} components; n_components="
                          f"{self.n_components} asks for {k}{' (clipped to n_samples)' if k != self.n_components else ''}"
                          f": the dense solver (LAPACK eigh) is used instead, as scikit-learn does.", RuntimeWarning,
                          stacklevel=4)
            return "dense"
        if self.eigen_solver in ("dense", "arpack") and not gram_fits_in_memory(n, share=1.0):
            raise MemoryError(f"eigen_solver={self.eigen_solver!r} holds the {n}×{n} float64 Gram in memory "
                              f"({format_bytes(8 * n * n)}), more than this machine has available; use "
                              f"eigen_solver='randomized' or 'lobpcg', which read it blockwise, or 'auto'.")
        if self.eigen_solver != "auto":
            return self.eigen_solver
        if not gram_fits_in_memory(n):
            if self.n_components is None:
                raise ValueError(f"n_components=None keeps all {n} components, which needs the dense "
                                 f"{n}×{n} eigendecomposition, above {GRAM_MEMORY_SHARE:g} of the memory available; "
                                 f"pass n_components (the randomized solver then computes only those) or "
                                 f"eigen_solver='dense'.")
            return "randomized"
        return "arpack" if n > 200 and k < 10 else "dense"

    def _eigenpairs(self, operator, k, solver, client):
        if solver == "dense":
            return dense_eigenpairs(operator, k, client)
        if solver == "arpack":
            return arpack_eigenpairs(operator, k, tol=self.tol, max_iter=self.max_iter,
                                     random_state=self.random_state, client=client)
        if solver == "lobpcg":
            return lobpcg_eigenpairs(operator, k, tol=self.tol, max_iter=self.max_iter,
                                     random_state=self.random_state, client=client)
        return randomized_eigenpairs(operator, k, n_oversamples=self.n_oversamples,
                                     iterated_power=self.iterated_power, random_state=self.random_state,
                                     client=client)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Compute the eigenpairs of the centered training Gram ``K_a``.

        Parameters
        ----------
        X : array-like, sparse matrix or dask array of shape (n_samples, n_features)
            Training data; with ``kernel="precomputed"``, the Gram matrix
            (a square ndarray or a :class:`~dkernel.gram.GramMatrix`).
        y : array-like of shape (n_samples,), default=None
            Class labels, needed by ``center="class-balanced"`` and ``"multiclass"``; ignored otherwise (as by
            scikit-learn: any ``y`` a pipeline passes).

        Returns
        -------
        self
        """
        if self.fit_inverse_transform and self._precomputed:
            raise ValueError("Cannot fit_inverse_transform with a precomputed kernel.")
        source = self._training_gram(X)
        # float32 data give float32 attributes and projections, as scikit-learn's (computed in float64 here).
        dtype = getattr(source, "X", None).dtype if not self._precomputed else getattr(X, "dtype", None)
        dtype = np.float32 if dtype == np.float32 else np.float64
        if self.fit_inverse_transform:
            refuse_sparse(source.X)
        n = int(source.shape[0])
        k = self._n_components(n)
        solver = self._solver(n, k)
        self.centering_ = training_origin(self.center, n, y, n_sample=self.n_sample,
                                          random_state=random_generator(self.random_state))
        with client_for(self.client) as client:
            client = client if client is not None else False  # resolved once: a spec opens one cluster per fit
            if solver in ("dense", "arpack"):
                # K_a in memory: the base Gram evaluated once, h and h0 taken from it, centered in place.
                K_a, h, h0, scale = materialized_gram(source, self.centering_, client)
                operator = as_gram(source) if self.centering_ is None else CenteredGram(source, self.centering_,
                                                                                          h=h, h0=h0)
                values, vectors = self._eigenpairs(K_a, k, solver, client)
                del K_a
            else:
                operator = centered_operator(source, self.centering_, client=client)
                values, vectors = self._eigenpairs(operator, k, solver, client)
                base = operator.base if isinstance(operator, CenteredGram) else operator
                scale = float(np.max(np.abs(source_diag(base)))) if n else 0.0
        values = np.asarray(values, dtype=np.float64).copy()
        values[np.abs(values) < zero_eigenvalue_tolerance(n, scale, getattr(source, "dtype", np.float64))] = 0.0
        values, vectors = finished_eigenpairs(values, vectors,
                                              remove_zero_eig=self.remove_zero_eig or self.n_components is None)
        kernel = getattr(source, "kernel", None)
        evaluator = getattr(source, "_evaluator", None)
        if self.fit_inverse_transform:
            # A dkernel Kernel, or the PairwiseKernel of scikit-learn's pairwise_kernels.
            self._inverse_kernel = kernel if kernel is not None else evaluator.function
            X_transformed = vectors * np.sqrt(values)
            self.dual_coef_ = fit_preimage_map(self._inverse_kernel, X_transformed, source.X,
                                               self.alpha).astype(dtype, copy=False)
            self.X_transformed_fit_ = X_transformed.astype(dtype, copy=False)
        self.eigenvalues_, self.eigenvectors_ = values.astype(dtype, copy=False), vectors.astype(dtype, copy=False)
        if isinstance(self.kernel, (Kernel, dict)):
            self.gamma_ = getattr(kernel, "gamma", None)
        else:  # scikit-learn's: 1 / n_features when gamma is None, whatever the kernel
            self.gamma_ = 1.0 / self.n_features_in_ if self.gamma is None else self.gamma
        self.eigen_solver_ = solver
        self._operator = operator
        return self

    def fit_transform(self, X, y=None):
        """Fit, then project the training points: ``z_k(x_i) = √λ_k v_{ik}``.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
        """
        self.fit(X, y)
        return self.eigenvectors_ * np.sqrt(self.eigenvalues_)

    # ------------------------------------------------------------ projecting
    def transform(self, X):
        """Project new points: ``z_k(x) = Σ_i K_a(x, x_i) v_{ik} / √λ_k`` through the centered test kernel.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_test, n_features)
            New points; with ``kernel="precomputed"``, the test kernel
            ``K(X_test, X_train)`` of shape (n_test, n_samples) (an ndarray or a
            Gram source read by rows), which is centered here on the fitted origin.

        Returns
        -------
        X_new : ndarray of shape (n_test, n_components)
        """
        check_is_fitted(self)
        X = self._test_input(X)
        coefficients = projection_coefficients(self.eigenvalues_, self.eigenvectors_)
        n = self.eigenvectors_.shape[0]
        batch = max(1, TEST_BATCH_BYTES // (8 * n))
        m = X.shape[0]
        out = np.empty((m, coefficients.shape[1]), dtype=self.eigenvectors_.dtype)
        for start in range(0, m, batch):
            rows = slice(start, min(start + batch, m))
            out[rows] = centered_test_rows(self._operator, X, self._precomputed, rows) @ coefficients
        return out

    def _test_input(self, X):
        n = self.eigenvectors_.shape[0]
        if self._precomputed and is_gram_source(X):
            if len(X.shape) != 2 or X.shape[1] != n:
                raise ValueError(f"X should be a kernel matrix of shape (n_test, {n}) between test and training "
                                 f"points; got a Gram matrix of shape {tuple(X.shape)}.")
            return X
        if self._precomputed:
            X = check_array(materialize(X), dtype=np.float64, ensure_all_finite=False)
            # Non-finite values are named before a shape mismatch: they are the first thing to fix.
            check_finite(X, name="the precomputed test kernel", what="transforming")
            return validate_data(self, X, dtype=np.float64, reset=False, ensure_all_finite=False)
        X = validate_data(self, materialize(X), accept_sparse="csr", dtype=[np.float64, np.float32], order="C",
                          reset=False, ensure_all_finite=False)
        check_finite(X, name="X", what="transforming")
        return X

    def inverse_transform(self, X):
        """Map points of the component space back to the input space with the learned pre-image map.

        ``K(X, X_transformed_fit_) @ dual_coef_`` (:mod:`._inverse`), scikit-learn's; needs
        ``fit_inverse_transform=True`` (``NotFittedError`` otherwise). As in scikit-learn, the centered kernel
        of the fit keeps no trace of the data's mean in feature space, so a linear kernel does not restore it.

        Parameters
        ----------
        X : array-like of shape (n_points, n_components)

        Returns
        -------
        X_original : ndarray of shape (n_points, n_features)
        """
        return inverse_transform(self, X)

    @property
    def _n_features_out(self):
        return self.eigenvalues_.shape[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # The pre-image map regresses onto dense data (scikit-learn refuses sparse data with it, too).
        tags.input_tags.sparse = not self._precomputed and not self.fit_inverse_transform
        tags.input_tags.pairwise = self._precomputed
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
