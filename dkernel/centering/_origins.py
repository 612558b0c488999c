"""Origins in feature space: weights γ, inner products h and h0, the bias correction Δb.

An origin ``a = Σ_i γ_i φ(x_i)`` is a linear combination of training points
in feature space, given by its weights γ (Meilă 2002, eqs. 12–13). Everything
the kernel machine needs about ``a`` is

.. math::

    h_i = \\langle a, \\phi(x_i) \\rangle = (K\\gamma)_i, \\qquad
    h_0 = \\langle a, a \\rangle = \\gamma^T K \\gamma

(eqs. 17–18), from which the Gram matrix of the translated data is
``K_a = K - 1hᵀ - h1ᵀ + h0`` (eq. 14; lazy in :class:`dkernel.views.CenteredGram`),
and an SVM trained on ``K_a`` is evaluated with the original kernel after
subtracting ``Δb = (αy)ᵀh`` from its intercept (eqs. 16 and 19).

When γ is supported on a sample ``S`` of ``n'`` points (Meilă §5, or a
Nyström-style representation of ``a`` by the sample only), ``h`` needs only
the ``n × n'`` columns ``K(X, X_S)``, computed (or read) one row block at a
time: the cost is ``O(n n' d)`` and no ``n × n`` (nor ``n × n'``) array is
ever held.

The origin found by gradient ascent on a criterion (Meilă §5, eqs. 23–33) is
in :mod:`dkernel.centering`.

Sources
-------
Functions here take a *Gram source* (:mod:`dkernel.gram._sources`): a
:class:`dkernel.gram.GramMatrix`, a lazy view of :mod:`dkernel.views`, a
:class:`~dkernel.gram._sources.KernelGram` for a kernel evaluated on the fly from
``X``, or a small in-memory ndarray. Only ``n``, ``.dask`` and, where present,
``columns(S)`` are used.

References
----------
.. [1] M. Meilă, "Data centering in feature space", AISTATS 2003 (Technical
   Report 421, University of Washington, 2002), sections 3–5.
"""

import dataclasses
from numbers import Integral

import numpy as np

from ..gram._sources import source_n, weighted_column_sums
from .._runtime.validation import check_labels, random_generator
from ._bias_correction import decision_function_original_kernel, delta_b
from ..exceptions import DKernelError, InvalidLabelsError

__all__ = [
    "Centering",
    "InvalidLabelsError",
    "InvalidWeightsError",
    "SampleSizeError",
    "centered_block",
    "class_balanced_weights",
    "decision_function_original_kernel",
    "delta_b",
    "origin_products",
]


class InvalidWeightsError(DKernelError, ValueError):
    """Origin weights γ are not finite, have the wrong length, or index points that do not exist."""


class SampleSizeError(DKernelError, ValueError):
    """A sample size is impossible for the data (``n' > n``, a class without sample points ...)."""


# --------------------------------------------------------------------------- #
# Class-balanced weights
# --------------------------------------------------------------------------- #


def _label(value):
    return repr(value.item() if isinstance(value, np.generic) else value)


def _classes(y, scheme):
    classes, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
    if len(classes) < 2:
        raise InvalidLabelsError(
            f"{scheme} centering needs at least two classes, but the labels contain only the class "
            f"{_label(classes[0])}; use the standard scheme (the centre of gravity of the data) instead."
        )
    return classes, inverse, counts


def class_balanced_weights(y):
    """Weights γ_i = 1/(c n_{class(i)}): the mean of the ``c`` class centres.

    For two classes this is Meilă's eq. (13), ``1/(2n⁺)`` and ``1/(2n⁻)``, whose
    origin (eq. 12) lies halfway between the class centres of gravity and
    minimizes the between-class sum (eq. 10).

    Parameters
    ----------
    y : array-like of shape (n,)
        Class labels (any values; at least two classes).

    Returns
    -------
    gamma : ndarray of shape (n,)
    """
    y = check_labels(y)
    classes, inverse, counts = _classes(y, "class-balanced")
    return 1.0 / (len(classes) * counts[inverse].astype(np.float64))


# --------------------------------------------------------------------------- #
# Centering: the weights of an origin
# --------------------------------------------------------------------------- #

_SCHEMES_WITH_LABELS = ("class-balanced", "multiclass")


@dataclasses.dataclass(frozen=True, eq=False)
class Centering:
    """An origin ``a = Σ_{i∈S} γ_i φ(x_i)`` in the feature space of ``n`` training points.

    Build one with a constructor (:meth:`standard`, :meth:`class_balanced`,
    :meth:`multiclass`, :meth:`from_weights`, :meth:`sampled`) rather than
    directly.

    Parameters
    ----------
    n : int
        Number of training points (rows of the Gram matrix).
    weights : ndarray of shape (n,) or (n_support,)
        The weights γ of the support points.
    indices : ndarray of shape (n_support,) or None
        Sorted indices ``S`` of the support points; ``None`` means all ``n``
        points, in order (then ``weights`` has length ``n``).
    scheme : str
        How the weights were chosen (``"standard"``, ``"class-balanced"``,
        ``"multiclass"``, ``"user"``, ``"shift"``, ``"general-..."``; a
        ``"sampled-"`` prefix when supported on a sample). Informative only.

    Notes
    -----
    The representation is exact for any origin in the span of the training
    points; a sampled centering represents ``a`` by the sample only (as the
    Nyström method represents the kernel), so its ``h = Kγ`` needs the columns
    ``K(X, X_S)`` and nothing else.
    """

    n: int
    weights: np.ndarray
    indices: np.ndarray | None = None
    scheme: str = "user"

    def __post_init__(self):
        if isinstance(self.n, bool) or not isinstance(self.n, Integral) or self.n < 1:
            raise InvalidWeightsError(f"n must be a positive integer; got {self.n!r}.")
        object.__setattr__(self, "n", int(self.n))
        w = np.array(self.weights, dtype=np.float64, copy=True).reshape(-1)
        if not np.isfinite(w).all():
            bad = np.flatnonzero(~np.isfinite(w))
            raise InvalidWeightsError(
                f"the origin weights have {len(bad)} NaN or infinite values (first at position "
                f"{bad[0]}); pass finite weights."
            )
        if self.indices is None:
            if w.shape[0] != self.n:
                raise InvalidWeightsError(
                    f"weights have length {w.shape[0]} but there are n={self.n} training points; "
                    f"pass one weight per point, or give the support points as indices."
                )
        else:
            idx = np.asarray(self.indices)
            if idx.ndim != 1 or idx.dtype.kind not in "iu":
                raise InvalidWeightsError(f"indices must be a 1-D integer array; got {idx.dtype} with shape {idx.shape}.")
            if idx.shape[0] != w.shape[0]:
                raise InvalidWeightsError(
                    f"{idx.shape[0]} indices but {w.shape[0]} weights; pass one weight per support point."
                )
            if idx.size and (idx.min() < 0 or idx.max() >= self.n):
                raise InvalidWeightsError(
                    f"indices must lie in [0, {self.n}); got values in [{idx.min()}, {idx.max()}]."
                )
            order = np.argsort(idx, kind="stable")
            idx = idx[order].astype(np.intp)
            if np.any(idx[1:] == idx[:-1]):
                raise InvalidWeightsError("indices contain duplicates; merge the weights of repeated points.")
            w = w[order]
            idx.setflags(write=False)
            object.__setattr__(self, "indices", idx)
        w.setflags(write=False)
        object.__setattr__(self, "weights", w)

    # ----------------------------------------------------------- constructors
    @classmethod
    def standard(cls, n):
        """The centre of gravity of the data: γ_i = 1/n."""
        n = _check_n(n)
        return cls(n, np.full(n, 1.0 / n), None, "standard")

    @classmethod
    def class_balanced(cls, y):
        """Halfway between the two class centres: γ_i = 1/(2n^±) (Meilă eqs. 12–13).

        Raises
        ------
        InvalidLabelsError
            If ``y`` does not have exactly two classes.
        """
        y = check_labels(y)
        classes = np.unique(y)
        if len(classes) > 2:
            raise InvalidLabelsError(
                f"class-balanced centering is defined for two classes but the labels have "
                f"{len(classes)}; use Centering.multiclass(y) (the mean of the class centres)."
            )
        return cls(len(y), class_balanced_weights(y), None, "class-balanced")

    @classmethod
    def from_scheme(cls, scheme, y=None, *, n=None, n_sample=None, random_state=None):
        """The origin named by ``scheme``, for the labels ``y`` (or ``n`` points: ``"standard"`` needs no labels).

        ``scheme`` is ``"standard"`` (:meth:`standard`), ``"class-balanced"``
        (:meth:`class_balanced`, eq. 13) or ``"multiclass"``
        (:meth:`multiclass`); with ``n_sample``, the origin is represented by
        a sample of that many points (:meth:`sampled`, Meilă §5).

        Raises
        ------
        InvalidLabelsError
            If a class scheme is asked for without labels.
        """
        if scheme not in ("standard", "class-balanced", "multiclass"):
            raise InvalidWeightsError(
                f"unknown origin scheme {scheme!r}; use 'standard', 'class-balanced' or 'multiclass'."
            )
        if y is None and scheme != "standard":
            raise InvalidLabelsError(f"the {scheme} scheme needs labels y.")
        if n_sample is not None:
            return cls.sampled(n if y is None else y, n_sample, scheme, random_state=random_state)
        if scheme == "standard":
            return cls.standard(n if y is None else len(y))
        return cls.class_balanced(y) if scheme == "class-balanced" else cls.multiclass(y)

    @classmethod
    def multiclass(cls, y):
        """The mean of the class centres: γ_i = 1/(c n_{class(i)}), for ``c >= 2`` classes."""
        y = check_labels(y)
        return cls(len(y), class_balanced_weights(y), None, "multiclass")

    @classmethod
    def from_weights(cls, weights, indices=None, n=None, scheme="user"):
        """An origin from user weights γ, on all points or on the points ``indices`` of ``n``."""
        w = np.asarray(weights, dtype=np.float64).reshape(-1)
        if indices is None:
            return cls(w.shape[0] if n is None else n, w, None, scheme)
        if n is None:
            raise InvalidWeightsError("n (the number of training points) is required with indices.")
        return cls(n, w, np.asarray(indices), scheme)

    @classmethod
    def sampled(cls, y_or_n, n_sample, scheme="class-balanced", *, stratify=True, random_state=None):
        """An origin represented by a random sample of ``n'`` training points (Meilă §5).

        Parameters
        ----------
        y_or_n : array-like of shape (n,) or int
            Labels (needed by the class schemes) or the number of points.
        n_sample : int
            The sample size ``n'``.
        scheme : {"class-balanced", "multiclass", "standard"}, default="class-balanced"
            ``"standard"``: ``n'`` points drawn uniformly, γ = 1/n' (the sample's
            centre of gravity). ``"class-balanced"`` / ``"multiclass"``: the mean
            of the sample's class centres, γ = 1/(c m_c) with ``m_c`` the number of
            sampled points of the class.
        stratify : bool, default=True
            For the class schemes, draw ``n'/c`` points from each class (Meilă's
            "n'/2 data points from each class"); a class smaller than its share
            contributes all its points. ``False`` draws ``n'`` points uniformly,
            which may miss a class.
        random_state : int, numpy Generator or None

        Raises
        ------
        SampleSizeError
            If ``n' > n``, ``n' < 1``, or a class gets no sample point.
        """
        rng = random_generator(random_state)
        if isinstance(y_or_n, Integral) and not isinstance(y_or_n, bool):
            y, n = None, _check_n(y_or_n)
        else:
            y = check_labels(y_or_n)
            n = len(y)
        if isinstance(n_sample, bool) or not isinstance(n_sample, Integral) or n_sample < 1:
            raise SampleSizeError(f"n_sample must be a positive integer; got {n_sample!r}.")
        if n_sample > n:
            raise SampleSizeError(
                f"n_sample={n_sample} exceeds the number of training points n={n}; use n_sample <= n "
                f"(or the exact centering without sampling)."
            )
        if scheme == "standard":
            idx = np.sort(rng.choice(n, size=n_sample, replace=False))
            return cls(n, np.full(n_sample, 1.0 / n_sample), idx, "sampled-standard")
        if scheme not in _SCHEMES_WITH_LABELS:
            raise ValueError(
                f"scheme must be 'standard', 'class-balanced' or 'multiclass'; got {scheme!r}."
            )
        if y is None:
            raise InvalidLabelsError(f"the {scheme} scheme needs labels; pass y instead of n.")
        classes, inverse, counts = _classes(y, scheme)
        if scheme == "class-balanced" and len(classes) > 2:
            raise InvalidLabelsError(
                f"class-balanced centering is defined for two classes but the labels have "
                f"{len(classes)}; use scheme='multiclass'."
            )
        c = len(classes)
        if stratify:
            share = np.full(c, n_sample // c)
            share[: n_sample % c] += 1
            picked = []
            for k in range(c):
                members = np.flatnonzero(inverse == k)
                take = min(share[k], len(members))
                if take == 0:
                    raise SampleSizeError(
                        f"n_sample={n_sample} leaves class {_label(classes[k])} without a sample point "
                        f"({c} classes); use n_sample >= {c}."
                    )
                picked.append(rng.choice(members, size=take, replace=False))
            idx = np.sort(np.concatenate(picked))
        else:
            idx = np.sort(rng.choice(n, size=n_sample, replace=False))
            missing = np.setdiff1d(np.arange(c), np.unique(inverse[idx]))
            if missing.size:
                raise SampleSizeError(
                    f"the sample of {n_sample} points contains no point of class "
                    f"{_label(classes[missing[0]])}; use stratify=True or a larger n_sample."
                )
        m = np.bincount(inverse[idx], minlength=c).astype(np.float64)
        weights = 1.0 / (c * m[inverse[idx]])
        return cls(n, weights, idx, f"sampled-{scheme}")

    # -------------------------------------------------------------- accessors
    @property
    def support(self):
        """Indices of the points carrying weight (all points when ``indices`` is None)."""
        return np.arange(self.n) if self.indices is None else self.indices

    @property
    def n_support(self):
        return self.n if self.indices is None else len(self.indices)

    @property
    def total_weight(self):
        """Σ γ_i (1 for every centre of gravity; the shift of Meilă §6 has any sum)."""
        return float(self.weights.sum())

    def dense(self):
        """The weights as a length-``n`` vector (zero off the support)."""
        if self.indices is None:
            return np.array(self.weights)
        w = np.zeros(self.n)
        w[self.indices] = self.weights
        return w

    def scaled(self, factor, scheme=None):
        """The origin ``factor · a``."""
        return Centering(self.n, self.weights * float(factor), self.indices, scheme or self.scheme)

    # ---------------------------------------------------------- serialization
    def to_dict(self):
        """JSON-serializable description (``scheme``, ``n``, ``weights``, ``indices``)."""
        return {
            "scheme": self.scheme,
            "n": self.n,
            "weights": self.weights.tolist(),
            "indices": None if self.indices is None else self.indices.tolist(),
        }

    @classmethod
    def from_dict(cls, spec):
        try:
            indices = spec.get("indices")
            return cls(
                int(spec["n"]),
                np.asarray(spec["weights"], dtype=np.float64),
                None if indices is None else np.asarray(indices, dtype=np.intp),
                spec.get("scheme", "user"),
            )
        except (KeyError, TypeError, AttributeError):
            raise InvalidWeightsError(
                f"a centering spec is a dict with 'n', 'weights' and optional 'indices', 'scheme'; got {spec!r}."
            ) from None

    def __repr__(self):
        return f"Centering(scheme={self.scheme!r}, n={self.n}, n_support={self.n_support})"


def _check_n(n):
    if isinstance(n, bool) or not isinstance(n, Integral) or n < 1:
        raise InvalidWeightsError(f"n must be a positive integer; got {n!r}.")
    return int(n)


def centered_block(K, h_rows, h_cols, h0):
    """A block of the centered Gram, ``K_a(i, j) = K_ij - h_i - h_j + h0`` (Meilă eq. 14), in float64.

    ``h_rows`` and ``h_cols``: ``h = Kγ`` at the block's rows and columns.
    """
    out = np.asarray(K, dtype=np.float64) - h_rows[:, None]
    out -= h_cols[None, :]
    out += h0
    return out


def origin_products(source, centering, *, compute=True, client=None, progress=False):
    """``h = Kγ`` and ``h0 = γᵀKγ``: the inner products of the origin (Meilă eqs. 17–18).

    Parameters
    ----------
    source : Gram source
        A :class:`~dkernel.gram.GramMatrix`, a lazy view, a
        :class:`~dkernel.gram._sources.KernelGram` or a small ndarray.
    centering : Centering
        The origin. A sampled centering reads only the columns ``K[:, S]``
        (computed from ``X`` by a ``KernelGram``), one row block per task.
    compute : bool, default=True
        Return ndarray / float; ``False`` returns the lazy dask expressions
        so that the caller can batch them with other computations (they run
        on whatever scheduler computes them; ``client`` is not used).
    client : distributed.Client, str, None or False, default=None
        Where to compute (:func:`dkernel._runtime.client.resolve_client`): None is the
        current default client if there is one, else this process; False is
        this process; a string is a scheduler address. On a cluster each task
        computes ``h`` on one row block, ``K[I, S] γ_S``; a ``KernelGram``'s
        ``X`` and ``X_S`` are scattered to the workers once. A task holds one
        block of ``chunk × n'`` kernel values, never ``n × n'``. A matrix
        held in this process (an ndarray, a ``DenseGram``) is multiplied
        here, by BLAS on row blocks.
    progress : bool, default=False
        Show the row blocks finished so far.

    Returns
    -------
    h : ndarray of shape (n,)
    h0 : float
    """
    n = source_n(source)
    if centering.n != n:
        raise InvalidWeightsError(
            f"the centering is defined for n={centering.n} points but the Gram matrix has {n} rows; "
            f"build the centering from this matrix's labels."
        )
    h = weighted_column_sums(source, centering.weights, centering.indices, compute=compute, client=client,
                             progress=progress, label="row blocks of h")
    if compute:
        return _origin_pair(h, centering)
    if isinstance(h, np.ndarray):  # a matrix held in this process: multiplied already
        return _origin_pair_lazy(h, centering)
    import dask.array as da

    support_h = h if centering.indices is None else h[centering.indices]
    return h, da.dot(support_h, centering.weights)


def _origin_pair(h, centering):
    """``(h, h0)`` with ``h0 = γ_Sᵀ h_S`` (eq. 18)."""
    support_h = h if centering.indices is None else h[centering.indices]
    return h, float(support_h @ centering.weights)


def _origin_pair_lazy(h, centering):
    import dask
    import dask.array as da

    h, h0 = _origin_pair(h, centering)
    return da.from_array(h, chunks=h.shape, name=False), dask.delayed(h0)
