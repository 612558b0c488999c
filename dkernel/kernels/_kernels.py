"""Kernel functions as small serializable objects.

A kernel evaluates a block ``K(X, Z)`` through one BLAS product ``X Zᵀ`` and an
element-wise map, gives its diagonal ``K(x, x)`` without forming a block, and
round-trips through JSON as ``{"name": ..., "params": {...}}``. Every algorithm
in dkernel (Gram store, centering, alignment, solver) works with every kernel
through this narrow interface, user-defined kernels included (subclass
:class:`Kernel` and decorate it with :func:`register_kernel`).

Parameter names and defaults follow :func:`sklearn.metrics.pairwise_kernels`:

=========== ============================================ =======================
name        K(x, z)                                      parameters
=========== ============================================ =======================
linear      xᵀz
poly        (gamma xᵀz + coef0)^degree                   gamma, coef0=1, degree=3
rbf         exp(-gamma |x - z|²)                         gamma
sigmoid     tanh(gamma xᵀz + coef0)                      gamma, coef0=1
normalized  K(x, z) / sqrt(K(x, x) K(z, z))              kernel (any of the above)
=========== ============================================ =======================

``gamma=None`` means ``1 / n_features``, resolved when the kernel is applied
(:meth:`Kernel.resolve`).

:class:`dkernel.SVC` and the ``dkernel gram`` / ``dkernel fit`` commands use
scikit-learn's SVC conventions instead (:data:`ESTIMATOR_DEFAULTS`, applied by
:func:`estimator_kernel`): ``gamma="scale"``, ``coef0=0``, ``degree=3``.

The papers' RBF width σ² becomes ``gamma`` by :func:`dkernel.kernels.gamma_from_sigma2` (:mod:`._widths`).
"""

import math
from numbers import Integral, Real

import numpy as np
from sklearn.utils.extmath import row_norms

from ._blocks import (
    direct_rows_into,
    dot_block,
    dot_block_into,
    map_block,
    map_mirrored_tiles,
    map_strips,
    mirror_upper,
    transposed_columns,
)
from .._runtime.validation import check_data, check_same_features
from ..exceptions import InvalidKernelParameterError

__all__ = [
    "Kernel",
    "LinearKernel",
    "PolynomialKernel",
    "RBFKernel",
    "SigmoidKernel",
    "NormalizedKernel",
    "get_kernel",
    "kernel_from_dict",
    "register_kernel",
    "describe_kernel",
    "KERNELS",
]

KERNELS = {}


def register_kernel(cls):
    """Class decorator: make a :class:`Kernel` subclass known by its ``name``.

    Registered kernels can be built with :func:`get_kernel` and restored with
    :func:`kernel_from_dict`, e.g. from a Gram store's attributes.
    """
    KERNELS[cls.name] = cls
    return cls


def output_dtype(X, Z=None):
    """The dtype of kernel values between ``X`` and ``Z`` (``X`` itself when None): float32 only when both
    inputs are float32, float64 otherwise."""
    if X.dtype == np.float32 and (Z is None or Z.dtype == np.float32):
        return np.float32
    return np.float64


def _as_pair(X, Z):
    X = check_data(X, name="X", what="evaluating a kernel")
    if Z is None:
        return X, X, True
    Z = check_data(Z, name="Z", what="evaluating a kernel")
    check_same_features(X, Z)
    dtype = output_dtype(X, Z)
    return X.astype(dtype, copy=False), Z.astype(dtype, copy=False), False


class Kernel:
    """Base class of dkernel kernels.

    Subclasses set ``name`` and ``_param_names``, implement ``_map_dot`` (the
    element-wise map applied to a block of inner products, in place) and
    ``_diag``, and may override ``__call__`` when the kernel is not a function
    of ``xᵀz`` alone (RBF).
    """

    name = None
    _param_names = ()

    def __init__(self, **params):
        unknown = set(params) - set(self._param_names)
        if unknown:
            raise InvalidKernelParameterError(
                f"{type(self).__name__} got unknown parameter(s) {sorted(unknown)}; "
                f"valid parameters are {list(self._param_names)}."
            )
        self._params = {k: params.get(k) for k in self._param_names}
        self._validate()

    # ----------------------------------------------------------------- params
    @property
    def params(self):
        """The kernel parameters as a dict (a copy)."""
        return dict(self._params)

    def __getattr__(self, item):
        params = self.__dict__.get("_params")
        if params is not None and item in params:
            return params[item]
        raise AttributeError(item)

    def _validate(self):
        pass

    def get_params(self, deep=True):
        """The parameters, as a scikit-learn estimator's: ``SVC(kernel=RBFKernel()).set_params(kernel__gamma=0.5)``
        and ``GridSearchCV(svc, {"kernel__gamma": [...]})`` reach them (``deep``: those of a kernel it holds, too)."""
        params = self.params
        if deep:
            for key, value in self.params.items():
                if isinstance(value, Kernel):
                    params.update({f"{key}__{name}": sub for name, sub in value.get_params().items()})
        return params

    def set_params(self, **params):
        """Set parameters (``name`` or ``kernel__name`` of a kernel it holds), checked as the constructor checks
        them; returns the kernel. As a scikit-learn estimator's, this changes the kernel in place: set it on a copy
        (``sklearn.base.clone``), not on a kernel a fitted model or a Gram store uses."""
        merged = dict(self._params)
        for key, value in sorted(params.items()):  # a kernel before its own parameters
            name, _, sub = key.partition("__")
            if name not in self._param_names:
                raise InvalidKernelParameterError(
                    f"{type(self).__name__} has no parameter {name!r}; its parameters are {list(self._param_names)}.")
            inner = merged[name]
            merged[name] = type(inner)(**inner.get_params(deep=False)).set_params(**{sub: value}) if sub else value
        self._params = type(self)(**merged)._params
        return self

    def resolve(self, n_features):
        """Return a copy with data-dependent defaults (``gamma=None``) made concrete."""
        return self

    def _gamma(self, n_features):
        gamma = self._params.get("gamma")
        return 1.0 / n_features if gamma is None else float(gamma)

    # --------------------------------------------------------- serialization
    def to_dict(self):
        """JSON-serializable description: ``{"name": ..., "params": {...}}``."""
        return {"name": self.name, "params": self.params}

    @classmethod
    def from_dict(cls, spec):
        """Rebuild a kernel from :meth:`to_dict` output."""
        return kernel_from_dict(spec)

    def __eq__(self, other):
        return type(self) is type(other) and self.to_dict() == other.to_dict()

    def __hash__(self):
        return hash(repr(self))

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._params.items())
        return f"{type(self).__name__}({args})"

    # ------------------------------------------------------------ evaluation
    def __call__(self, X, Z=None):
        """Evaluate the block ``K(X, Z)``; ``Z=None`` means ``Z = X`` (symmetric block).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, d)
        Z : array-like or sparse matrix of shape (m, d), default=None

        Returns
        -------
        K : ndarray of shape (n, m)
            float32 when both inputs are float32, float64 otherwise.
        """
        X, Z, symmetric = _as_pair(X, Z)
        return self.block(X, Z, symmetric=symmetric)

    def block(self, X, Z, *, symmetric=False):
        """Evaluate ``K(X, Z)`` on already validated inputs (no checks).

        ``symmetric=True`` states that ``Z`` is ``X``: the block is then made
        exactly symmetric (its upper triangle copied onto the lower one:
        rounding may make ``K_ij`` and ``K_ji`` differ in the last bit), and
        kernels may make its diagonal exact (RBF: exactly 1.0).
        """
        K = dot_block(X, Z)
        self._map_dot(K, X.shape[1])
        return mirror_upper(K) if symmetric else K

    def _map_dot(self, K, n_features):
        raise NotImplementedError

    def evaluate_into(self, X, Z, out, *, symmetric=False, on_strip=None, z_sq_norms=None):
        """Write :meth:`block` ``(X, Z, symmetric=symmetric)`` into ``out``, a C-contiguous array of its shape.

        ``symmetric=True`` states that ``Z`` is ``X``: ``out`` is then made
        exactly symmetric (its upper triangle copied onto the lower one:
        rounding may make ``K_ij`` and ``K_ji`` differ in the last bit).
        ``on_strip(a, S)``, when given, is called with each finished strip
        ``S`` of rows ``a:a + len(S)`` of ``out`` (the whole of it here, and
        for a symmetric block) while it is in cache; ``z_sq_norms``: the squared norms of ``Z``'s rows
        where the caller holds them (rows of one ``Z`` asked for again and
        again), for a kernel that uses them. Here the block is evaluated, then
        copied into ``out`` (in ``out``'s dtype); a kernel with a faster path
        (:class:`RBFKernel`: the product written into ``out``, then mapped
        strip by strip) overrides it.
        """
        out[...] = self.block(X, Z, symmetric=symmetric)
        _finish_into(out, symmetric, on_strip)

    def direct_columns(self, Z):
        """``Zᵀ`` where rows against ``Z`` are evaluated without a product (:class:`RBFKernel`); None here."""
        return None

    def evaluate_mirrored_into(self, X, Z, K, row0, col0):
        """Write ``K(X, Z)`` at ``K[row0:, col0:]`` and its transpose at ``K[col0:, row0:]`` (a symmetric Gram's
        block above the diagonal and its mirror below).

        Here from one evaluated block; a kernel with a faster path (:class:`RBFKernel`: one compiled pass
        per tile, no block in between) overrides it.
        """
        block = self.block(X, Z)
        K[row0 : row0 + block.shape[0], col0 : col0 + block.shape[1]] = block
        K[col0 : col0 + block.shape[1], row0 : row0 + block.shape[0]] = block.T

    def diag(self, X):
        """The diagonal ``K(x_i, x_i)`` for each row of ``X``, without forming a block."""
        X = check_data(X, name="X", what="evaluating a kernel")
        return self._diag(X)

    def _diag(self, X):
        raise NotImplementedError

    @staticmethod
    def _sq_norms(X):
        return np.asarray(row_norms(X, squared=True))


def _finish_into(out, symmetric, on_strip):
    """A block evaluated into ``out``: made exactly symmetric where it is ``K(X, X)``, then handed to ``on_strip``."""
    if symmetric:
        mirror_upper(out)
    if on_strip is not None:
        on_strip(0, out)


def _check_gamma(gamma):
    if gamma is None:
        return
    if isinstance(gamma, bool) or not isinstance(gamma, Real) or not (gamma > 0) or not math.isfinite(gamma):
        raise InvalidKernelParameterError(
            f"gamma must be a finite number > 0 (or None for 1/n_features); got {gamma!r}."
        )


def _check_coef0(coef0):
    if isinstance(coef0, bool) or not isinstance(coef0, Real) or not math.isfinite(coef0):
        raise InvalidKernelParameterError(f"coef0 must be a finite number; got {coef0!r}.")


@register_kernel
class LinearKernel(Kernel):
    """Linear kernel ``K(x, z) = xᵀz``."""

    name = "linear"

    def _map_dot(self, K, n_features):
        pass

    def _diag(self, X):
        return self._sq_norms(X)


class _GammaKernel(Kernel):
    """A kernel with a ``gamma`` (and, if it takes one, a ``coef0``) parameter."""

    def _validate(self):
        _check_gamma(self.gamma)
        if "coef0" in self._params:
            _check_coef0(self.coef0)
            self._params["coef0"] = float(self.coef0)
        if self.gamma is not None:
            self._params["gamma"] = float(self.gamma)

    def resolve(self, n_features):
        if self._params.get("gamma") is not None:
            return self
        return type(self)(**{**self._params, "gamma": 1.0 / n_features})

    def _scale_dot(self, K, n_features):
        """``gamma xᵀz + coef0`` in place, from a block of inner products."""
        K *= self._gamma(n_features)
        K += self.coef0


@register_kernel
class PolynomialKernel(_GammaKernel):
    """Polynomial kernel ``K(x, z) = (gamma xᵀz + coef0)^degree``.

    Meilă's "poly2" kernel ``(1 + xᵀz)²`` is ``PolynomialKernel(gamma=1, coef0=1, degree=2)``.

    Parameters
    ----------
    gamma : float > 0 or None, default=None (1/n_features)
    coef0 : float, default=1.0
    degree : int >= 1, default=3
    """

    name = "poly"
    _param_names = ("gamma", "coef0", "degree")

    def __init__(self, gamma=None, coef0=1.0, degree=3):
        super().__init__(gamma=gamma, coef0=coef0, degree=degree)

    def _validate(self):
        super()._validate()
        degree = self.degree
        if isinstance(degree, bool) or not isinstance(degree, Integral) or degree < 1:
            raise InvalidKernelParameterError(f"degree must be an integer >= 1; got {degree!r}.")
        self._params["degree"] = int(degree)

    def _map_dot(self, K, n_features):
        self._scale_dot(K, n_features)
        K **= self.degree

    def _diag(self, X):
        return (self._gamma(X.shape[1]) * self._sq_norms(X) + self.coef0) ** self.degree


@register_kernel
class RBFKernel(_GammaKernel):
    """Gaussian RBF kernel ``K(x, z) = exp(-gamma |x - z|²)``.

    Squared distances use ``|x|² + |z|² - 2xᵀz`` (one BLAS product), clipped
    at zero so rounding never yields a negative distance, and set to exactly
    zero on the diagonal of a symmetric block so that ``K(x, x) = 1.0`` exactly.
    Rows over few features may be summed directly instead (:meth:`direct_columns`, :func:`~dkernel.kernels._blocks.direct_rows_into`).
    σ² conventions of the papers: :func:`dkernel.kernels.gamma_from_sigma2`.

    Parameters
    ----------
    gamma : float > 0 or None, default=None (1/n_features)
    """

    name = "rbf"
    _param_names = ("gamma",)

    def __init__(self, gamma=None):
        super().__init__(gamma=gamma)

    def block(self, X, Z, *, symmetric=False, x_sq_norms=None, z_sq_norms=None):
        x_sq = self._sq_norms(X) if x_sq_norms is None else x_sq_norms
        z_sq = x_sq if symmetric else (self._sq_norms(Z) if z_sq_norms is None else z_sq_norms)
        K = map_block(dot_block(X, Z), x_sq, z_sq, self._gamma(X.shape[1]), diagonal_offset=0 if symmetric else -1)
        return mirror_upper(K) if symmetric else K

    def evaluate_into(self, X, Z, out, *, symmetric=False, on_strip=None, z_sq_norms=None):
        """:meth:`block` computed into ``out``: the BLAS product written into ``out``, then the element-wise map of
        :meth:`block` on strips of rows, the whole map on one strip while it is in cache
        (:func:`dkernel.kernels._blocks.map_strips`).

        Dense ``X`` and ``Z`` of ``out``'s dtype (float32 or float64) and this
        class itself; a subclass, sparse data and other dtypes go through
        :meth:`Kernel.evaluate_into`.
        """
        if not (self._own_dense_path(X, Z) and X.dtype == Z.dtype == out.dtype
                and out.dtype in (np.float32, np.float64) and out.flags.c_contiguous):
            return super().evaluate_into(X, Z, out, symmetric=symmetric, on_strip=on_strip)
        x_sq = self._sq_norms(X).astype(out.dtype, copy=False)
        z_sq = x_sq if symmetric else (self._sq_norms(Z) if z_sq_norms is None else z_sq_norms).astype(
            out.dtype, copy=False)
        dot_block_into(X, Z, out)
        map_strips(out, x_sq, z_sq, self._gamma(X.shape[1]), symmetric=symmetric,
                   on_strip=None if symmetric else on_strip)
        if symmetric:
            _finish_into(out, symmetric, on_strip)

    def direct_columns(self, Z):
        """:func:`~dkernel.kernels._blocks.transposed_columns` for this class itself, else None."""
        return transposed_columns(Z) if type(self) is RBFKernel else None

    def evaluate_direct_into(self, X, Zt, out):
        """``out = K(X, Z)`` from ``Zt = Zᵀ`` (:meth:`direct_columns`, or a slice of its columns), each value
        written once (:func:`~dkernel.kernels._blocks.direct_rows_into`)."""
        direct_rows_into(X, Zt, self._gamma(X.shape[1]), out)

    def evaluate_mirrored_into(self, X, Z, K, row0, col0):
        """``K(X, Z)`` at ``K[row0:, col0:]`` and its transpose at ``K[col0:, row0:]`` in one compiled pass per tile
        (:func:`dkernel.kernels._blocks.map_mirrored_tiles`): dense float64 X and Z, a ``K`` of float32 or
        float64; otherwise through :meth:`Kernel.evaluate_mirrored_into`."""
        if not (self._own_dense_path(X, Z) and X.dtype == Z.dtype == np.float64
                and K.dtype in (np.float32, np.float64)):
            return super().evaluate_mirrored_into(X, Z, K, row0, col0)
        map_mirrored_tiles(X, Z, self._sq_norms(X), self._sq_norms(Z), self._gamma(X.shape[1]), K, row0, col0)

    def _own_dense_path(self, X, Z):
        """Dense data and this class itself (a subclass evaluates through its own :meth:`block`)."""
        return type(self) is RBFKernel and isinstance(X, np.ndarray) and isinstance(Z, np.ndarray)

    def _diag(self, X):
        return np.ones(X.shape[0], dtype=X.dtype)


@register_kernel
class SigmoidKernel(_GammaKernel):
    """Sigmoid kernel ``K(x, z) = tanh(gamma xᵀz + coef0)`` (not positive semi-definite in general).

    Parameters
    ----------
    gamma : float > 0 or None, default=None (1/n_features)
    coef0 : float, default=1.0
    """

    name = "sigmoid"
    _param_names = ("gamma", "coef0")

    def __init__(self, gamma=None, coef0=1.0):
        super().__init__(gamma=gamma, coef0=coef0)

    def _map_dot(self, K, n_features):
        self._scale_dot(K, n_features)
        np.tanh(K, out=K)

    def _diag(self, X):
        return np.tanh(self._gamma(X.shape[1]) * self._sq_norms(X) + self.coef0)


@register_kernel
class NormalizedKernel(Kernel):
    """Feature-space normalization of any kernel (Graf & Borer 2001, eq. 2).

    .. math::

        \\tilde K(x, z) = \\frac{K(x, z)}{\\sqrt{K(x, x)\\,K(z, z)}}

    which maps every point to the unit sphere in feature space (the cosine
    kernel when ``K`` is linear). The diagonal of a symmetric block is exactly
    1.0. Points with ``K(x, x) = 0`` (e.g. empty documents under a linear
    kernel) have no direction: their row and diagonal are 0, as in
    :func:`sklearn.metrics.pairwise.cosine_similarity`.

    Parameters
    ----------
    kernel : Kernel or dict or str
        The kernel to normalize.

    References
    ----------
    .. [1] A. B. A. Graf and S. Borer, "Normalization in support vector
       machines", DAGM 2001, eq. (2).
    """

    name = "normalized"
    _param_names = ("kernel",)

    def __init__(self, kernel):
        base = get_kernel(kernel)
        if isinstance(base, NormalizedKernel):
            base = base.kernel
        super().__init__(kernel=base)

    def resolve(self, n_features):
        return NormalizedKernel(self.kernel.resolve(n_features))

    def to_dict(self):
        return {"name": self.name, "params": {"kernel": self.kernel.to_dict()}}

    @staticmethod
    def _inv_sqrt(diag):
        inv = np.zeros_like(diag, dtype=np.float64)
        positive = diag > 0
        inv[positive] = 1.0 / np.sqrt(diag[positive])
        return inv

    def block(self, X, Z, *, symmetric=False):
        K = self.kernel.block(X, Z, symmetric=symmetric)
        dx = self.kernel._diag(X)
        inv_x = self._inv_sqrt(dx).astype(K.dtype, copy=False)
        inv_z = inv_x if symmetric else self._inv_sqrt(self.kernel._diag(Z)).astype(K.dtype, copy=False)
        K *= inv_x.reshape(-1, 1)
        K *= inv_z.reshape(1, -1)
        if symmetric:
            np.fill_diagonal(K, (dx > 0).astype(K.dtype))
            mirror_upper(K)  # the scaled triangles may differ in the last bit again
        return K

    def _diag(self, X):
        return (self.kernel._diag(X) > 0).astype(X.dtype)


_NAME_ALIASES = {"polynomial": "poly", "gaussian": "rbf", "cosine": "normalized"}


def get_kernel(kernel, **params):
    """Build a kernel from a name (with parameters), a dict spec, or pass a :class:`Kernel` through.

    Parameters
    ----------
    kernel : str, dict or Kernel
        ``"linear"``, ``"poly"``, ``"rbf"``, ``"sigmoid"``, ``"normalized"``
        (or a registered user kernel), a :meth:`Kernel.to_dict` spec, or a
        kernel instance.
    **params
        Kernel parameters. Parameters that a kernel does not take and whose
        value is ``None`` are ignored, so that an estimator can pass its full
        ``gamma/coef0/degree`` set. None with a kernel instance; none but
        ``None`` values with a dict spec (it carries its own).

    Examples
    --------
    >>> from dkernel.kernels import get_kernel
    >>> get_kernel("rbf", gamma=0.5)
    RBFKernel(gamma=0.5)
    >>> get_kernel({"name": "poly", "params": {"gamma": 1.0, "coef0": 1.0, "degree": 2}})
    PolynomialKernel(gamma=1.0, coef0=1.0, degree=2)
    """
    if isinstance(kernel, (Kernel, dict)):
        given = sorted(params) if isinstance(kernel, Kernel) else sorted(k for k, v in params.items() if v is not None)
        if given:
            where = "on the instance" if isinstance(kernel, Kernel) else "in its 'params'"
            raise InvalidKernelParameterError(f"parameters {given} were given with a kernel {kernel!r}, which "
                                              f"carries its own parameters; set them {where} instead.")
        return kernel if isinstance(kernel, Kernel) else kernel_from_dict(kernel)
    if not isinstance(kernel, str):
        raise InvalidKernelParameterError(
            f"kernel must be a name, a dict spec or a Kernel instance; got {type(kernel).__name__}."
        )
    name = _NAME_ALIASES.get(kernel, kernel)
    try:
        cls = KERNELS[name]
    except KeyError:
        raise InvalidKernelParameterError(
            f"unknown kernel {kernel!r}; known kernels are {sorted(KERNELS)}."
        ) from None
    params = {k: v for k, v in params.items() if k in cls._param_names or v is not None}
    unknown = sorted(set(params) - set(cls._param_names))
    if unknown:
        raise InvalidKernelParameterError(
            f"{cls.__name__} got unknown parameter(s) {unknown}; "
            f"valid parameters are {list(cls._param_names)}."
        )
    return cls(**params)


def kernel_from_dict(spec):
    """Rebuild a kernel from ``{"name": ..., "params": {...}}`` (see :meth:`Kernel.to_dict`)."""
    try:
        name, params = spec["name"], dict(spec.get("params", {}))
    except (KeyError, TypeError, AttributeError):
        raise InvalidKernelParameterError(
            f"a kernel spec is a dict with 'name' and 'params'; got {spec!r}."
        ) from None
    if name == NormalizedKernel.name:
        return NormalizedKernel(kernel_from_dict(params["kernel"]))
    return get_kernel(name, **params)


def describe_kernel(spec):
    """A kernel spec (:meth:`Kernel.to_dict`) as text: ``rbf(gamma=0.5)``, ``normalized(poly(...))``.

    The one description of a kernel shown by error messages, ``dkernel info``
    and reports.
    """
    name = spec.get("name")
    params = spec.get("params", {})
    if name == NormalizedKernel.name and "kernel" in params:
        return f"normalized({describe_kernel(params['kernel'])})"
    return f"{name}(" + ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items()
    ) + ")"
