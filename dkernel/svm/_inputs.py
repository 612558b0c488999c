"""What :class:`~dkernel.svm.SVC` checks and derives from its inputs, as scikit-learn's SVC.

Training and test data (arrays, sparse matrices, a precomputed Gram matrix
or test kernel, the Gram matrix of a kernel function), labels, the per-class weights ``class_weight_`` and the per-sample upper
bounds ``C_i = C · class weight · sample weight`` of the dual variables
(libsvm drops the samples whose weight is zero or negative), and the Gram
matrix that a user-defined kernel function gives.
"""

from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.validation import check_consistent_length, check_is_fitted, validate_data

from .._runtime.validation import check_finite, check_gram, materialize


def is_gram_source(X):
    """A Gram matrix read by rows (:class:`~dkernel.gram.GramMatrix` or an operator view), not an array."""
    return hasattr(X, "rows") and hasattr(X, "shape") and not isinstance(X, np.ndarray) and not sp.issparse(X)


def class_weights(class_weight, classes, y):
    """``class_weight_``: the multiplier of ``C`` per class, as scikit-learn's ``compute_class_weight``.

    ``"balanced"`` gives ``n / (n_classes · count)``; a dict naming a label
    that is not in ``y`` raises scikit-learn's ``ValueError``; ``None`` gives
    ones (without scikit-learn's parameter validation, which costs more than
    a small fit).
    """
    if class_weight is None:
        return np.ones(classes.shape[0])
    return compute_class_weight(class_weight, classes=classes, y=y)


def upper_bounds(C, class_weight, classes, y_index, sample_weight):
    """Per-sample upper bounds ``C_i = C · class weight · sample weight`` of the dual variables.

    A negative sample weight counts as zero: libsvm, and so scikit-learn,
    drop the samples whose weight is not positive.
    """
    n = y_index.shape[0]
    C_i = float(C) * class_weights(class_weight, classes, classes[y_index])[y_index]
    if sample_weight is not None:
        sw = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
        if sw.shape[0] != n:
            raise ValueError(
                f"sample_weight and X have incompatible shapes: sample_weight has {sw.shape[0]} entries but "
                f"there are {n} samples."
            )
        if not np.isfinite(sw).all():
            bad = np.flatnonzero(~np.isfinite(sw))
            raise ValueError(
                f"sample_weight has {bad.size} NaN or infinite values (first at position {bad[0]}); give every "
                f"sample a finite weight (zero or negative removes it)."
            )
        C_i = C_i * np.maximum(sw, 0.0)
    return C_i


def kept_samples(C_i, y_index, classes):
    """The samples with a positive upper bound; scikit-learn's errors when none or a single class is left."""
    keep = np.flatnonzero(C_i > 0)
    if keep.size == 0:
        raise ValueError(
            "Invalid input - all samples have zero or negative weights: sample_weight (times class_weight) "
            "leaves no sample to train on."
        )
    left = np.unique(y_index[keep])
    if left.shape[0] < 2:
        raise ValueError(
            f"Invalid input - all samples with positive weights belong to the same class "
            f"({_scalar(classes[left[0]])!r}); an SVM needs samples of two classes with positive weight."
        )
    return keep


def single_class_message(label):
    """scikit-learn's message for labels of one class, with the label."""
    return (
        f"The number of classes has to be greater than one; got 1 class: the training labels contain a single "
        f"class ({_scalar(label)!r}), and an SVM needs at least two classes."
    )


def check_labels(y):
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D; got shape {y.shape}.")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        bad = np.flatnonzero(~np.isfinite(y))
        raise ValueError(
            f"y has {bad.size} NaN or infinite labels (first at position {bad[0]}); drop those samples."
        )
    return y


def callable_gram(kernel, X, Y):
    """``kernel(X, Y)`` of a user-defined kernel function as a dense float64 array (scikit-learn's convention)."""
    K = kernel(X, Y)
    if sp.issparse(K):
        K = K.toarray()
    return np.asarray(K, dtype=np.float64, order="C")


def callable_test_gram(kernel, X, support_data, n_sv):
    """``kernel(X, support vectors)`` of a user-defined kernel function, checked to be (n_test, n_sv)."""
    K = callable_gram(kernel, X, support_data)
    if K.ndim != 2 or K.shape[1] != n_sv:
        raise ValueError(f"the kernel function returned shape {K.shape}; expected (n_test, {n_sv}), test "
                         f"points by the {n_sv} support vectors.")
    return K


def _scalar(value):
    """A numpy scalar as the Python value it holds (``1``, not ``np.int64(1)``, in messages)."""
    return value.item() if isinstance(value, np.generic) else value


def seed_from(random_state):
    if random_state is None or isinstance(random_state, (Integral, np.integer)):
        return random_state
    return int(random_state.randint(2**31 - 1))


def check_params_consistency(estimator):
    """Parameter combinations that cannot work together, refused before any work."""
    if estimator.normalize_bias_correction and not estimator.normalize:
        raise ValueError(
            "normalize_bias_correction=True needs normalize=True: Graf & Borer's b' is defined for a "
            "normalized kernel."
        )
    if estimator.normalize and estimator._gram_given:
        raise ValueError(
            "normalize=True is not available with kernel='precomputed' or a kernel function (prediction "
            "would need K(x, x) of the test points); normalize the Gram matrix yourself or pass a kernel."
        )
    if estimator.centering_sample is not None and estimator.centering is None:
        raise ValueError("centering_sample is set but centering is None; choose a centering scheme.")


def validate_fit_data(estimator, X, y):
    """The training data and labels as the solver takes them: checked arrays, or the user's Gram matrix."""
    if estimator._precomputed:
        return _validate_precomputed_fit(estimator, X, y)
    if estimator._callable_kernel:
        check_consistent_length(X, y)
        return check_gram(callable_gram(estimator.kernel, X, X)), np.asarray(y)
    X = materialize(X)
    X, y = validate_data(
        estimator,
        X,
        y,
        accept_sparse="csr",
        dtype=[np.float64, np.float32],
        ensure_all_finite=False,
        order="C",
    )
    check_finite(X, name="X", what="fitting or predicting")
    return X, y

def _validate_precomputed_fit(estimator, X, y):
    if hasattr(X, "rows") and hasattr(X, "diag"):
        n = int(X.n)
        if tuple(X.shape) != (n, n):
            raise ValueError(
                f"a precomputed Gram matrix must be square (n_samples, n_samples); got shape {tuple(X.shape)}."
            )
        y = np.asarray(y)
        if y.shape[0] != n:
            raise ValueError(f"y has {y.shape[0]} labels but the Gram matrix has {n} rows.")
        estimator.n_features_in_ = n
        return X, y
    X = materialize(X)
    if sp.issparse(X):
        raise TypeError("Sparse precomputed kernels are not supported: pass the Gram matrix as a dense array.")
    X, y = validate_data(estimator, X, y, dtype=np.float64, ensure_all_finite=False, order="C")
    return check_gram(X), y

def _refuse_sparse_on_dense(estimator, X):
    if sp.issparse(X) and not getattr(estimator, "_sparse", False):
        raise ValueError(f"cannot use sparse input in {type(estimator).__name__!r} trained on dense data")

def validate_predict_data(estimator, X):
    """Test data checked against the fitted estimator (features, sparsity, shape of a test kernel)."""
    check_is_fitted(estimator)
    if estimator._callable_kernel:
        return X
    if estimator._precomputed and is_gram_source(X):
        n_train = estimator.shape_fit_[0]
        if len(X.shape) != 2 or X.shape[1] != n_train:
            raise ValueError(
                f"X should be a kernel matrix of shape (n_test, {n_train}) between test and training "
                f"points; got a Gram matrix of shape {tuple(X.shape)}."
            )
        return X
    if estimator._precomputed:
        X = validate_data(estimator, materialize(X), accept_sparse="csr", dtype=np.float64, reset=False,
                          ensure_all_finite=False)
        _refuse_sparse_on_dense(estimator, X)
        n_train = estimator.shape_fit_[0]
        if X.shape[1] != n_train:
            raise ValueError(
                f"X should be a kernel matrix of shape (n_test, {n_train}) between test and training "
                f"points; got {X.shape}."
            )
        check_finite(X, name="the precomputed test kernel", what="predicting")
        return X
    X = validate_data(estimator, X, accept_sparse="csr", dtype=[np.float64, np.float32], reset=False,
                      ensure_all_finite=False, order="C")
    _refuse_sparse_on_dense(estimator, X)
    check_finite(X, name="X", what="fitting or predicting")
    return X


def sklearn_sparse(M):
    """A sparse result in the sparse interface scikit-learn is configured to return (``csr_matrix`` by default)."""
    try:
        from sklearn.utils._sparse import _align_api_if_sparse
    except ImportError:  # scikit-learn before the sparse-interface setting returns csr_matrix
        return M
    return _align_api_if_sparse(M)
