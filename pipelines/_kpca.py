"""Kernel PCA features for a linear classifier on USPS (Schölkopf, Smola & Müller 1998, Table 1): the measurements.

For one degree ``d`` of the kernel ``k(x, y) = (x·y)^d``: the Gram of the
training images (computed once), the components of :class:`dkernel.KernelPCA`
on it for each centering (the centre of gravity of all training images, as
the paper; the same origin represented by a random sample of ``n'`` images,
Meilă §5), the projections of the test images through the centered test
kernel, and a linear SVM per number of components; and, for the sampled
origin, the error of the leading eigenpairs against exact centering as ``n'``
grows.
"""

import time
import warnings

import numpy as np

#: Schölkopf, Smola & Müller (1998), Neural Computation 10(5):1299–1319, Table 1: test error (%) on USPS of linear
#: SVMs on the first m kernel principal components, kernel (x·y)^d; None where the paper has "n.a." (degree 1:
#: linear PCA of 256 pixels has at most 256 components).
PAPER_TABLE = {
    32: (9.6, 8.8, 8.1, 8.5, 9.1, 9.3, 10.8),
    64: (8.8, 7.3, 6.8, 6.7, 6.7, 7.2, 7.5),
    128: (8.6, 5.8, 5.9, 6.1, 5.8, 6.0, 6.8),
    256: (8.7, 5.5, 5.3, 5.2, 5.2, 5.4, 5.4),
    512: (None, 4.9, 4.6, 4.4, 5.1, 4.6, 4.9),
    1024: (None, 4.9, 4.3, 4.4, 4.6, 4.8, 4.6),
    2048: (None, 4.9, 4.2, 4.1, 4.0, 4.3, 4.4),
}
DEGREES = (1, 2, 3, 4, 5, 6, 7)
COMPONENTS = tuple(PAPER_TABLE)

#: The linear SVM's C, the components divided by the first one's deviation (the paper does not give it).
C = 1.0
#: Iteration cap of the linear SVM (scikit-learn's LinearSVC, liblinear).
MAX_ITER = 20000
#: n', the training images representing the sampled origin beside exact centering.
N_SAMPLE = 500
#: The sampled origins of the spectrum sweep and the leading eigenpairs compared.
SWEEP = (10, 30, 100, 300, 1000, 3000)
SWEEP_COMPONENTS = 20


def pixels(X):
    """USPS's stored grey values in [0, 1] mapped to [−1, 1] (``2x − 1``), the scale USPS was distributed in."""
    return 2.0 * np.asarray(X, dtype=np.float64) - 1.0


def gram(A, B, degree):
    """``(A Bᵀ)^d``, the homogeneous polynomial kernel of the paper."""
    return (A @ B.T) ** degree


def available(degree, m, n_features):
    """Whether the paper's Table 1 has a cell for ``m`` components at ``degree`` (linear PCA has at most
    ``n_features``)."""
    return degree > 1 or m <= n_features


def components(K, K_test, n_components, *, n_sample=None, random_state=0):
    """The training and test projections on the first ``n_components`` kernel principal components.

    ``K`` is the training Gram, ``K_test`` the test kernel ``K(X_test, X)``;
    the origin is the centre of gravity of the training images, represented
    by a random sample of ``n_sample`` of them when given (Meilă §5).
    """
    from dkernel import KernelPCA

    kpca = KernelPCA(n_components, kernel="precomputed", eigen_solver="dense", n_sample=n_sample,
                     random_state=random_state, client=False)
    Z = kpca.fit_transform(K)
    return Z, kpca.transform(K_test), kpca


def linear_svm_errors(Z, y, Z_test, y_test, *, C=C, loss="hinge"):
    """One record per ``m`` in :data:`COMPONENTS` (up to the columns of ``Z``): one-vs-rest linear SVMs on the
    first ``m`` components, their test error and the images they misclassify.

    The components are divided by the first one's standard deviation on the
    training images (their relative scales, the eigenvalues, kept: a change
    of C's unit). ``loss="hinge"``: the SVM of the paper (liblinear's dual
    solver); ``"squared_hinge"``: ``LinearSVC``'s default (its primal solver).
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    scale = Z[:, 0].std() or 1.0
    records = []
    for m in (m for m in COMPONENTS if m <= Z.shape[1]):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf = LinearSVC(C=C, loss=loss, dual=loss == "hinge", max_iter=MAX_ITER, random_state=0)
            clf.fit(Z[:, :m] / scale, y)
        wrong = np.flatnonzero(clf.predict(Z_test[:, :m] / scale) != y_test)
        records.append({"n_components": m, "C": C, "loss": loss, "test_error": wrong.size / y_test.size,
                        "n_wrong": int(wrong.size), "wrong": " ".join(map(str, wrong)),
                        "n_iter": int(clf.n_iter_), "converged": bool(clf.n_iter_ < MAX_ITER),
                        "svm_seconds": time.perf_counter() - start})  # fmt: skip
    return records


def spectrum_errors(K, exact, n_samples, *, k=SWEEP_COMPONENTS, random_state=0):
    """The error of the leading ``k`` eigenpairs under a sampled origin against exact centering, per ``n'``.

    ``exact`` is the KernelPCA fitted with exact centering; for each ``n'`` the
    records hold the largest relative error of the ``k`` leading eigenvalues and
    of the training projections on the ``k`` components (relative to the first
    component's norm, up to sign), and the sine of the largest principal angle
    between the two ``k``-dimensional eigenspaces.
    """
    from dkernel import KernelPCA

    values, vectors = exact.eigenvalues_[:k], exact.eigenvectors_[:, :k]
    Z = vectors * np.sqrt(values)
    records = []
    for n_sample in (s for s in n_samples if s < K.shape[0]):
        start = time.perf_counter()
        sampled = KernelPCA(k, kernel="precomputed", eigen_solver="arpack", n_sample=n_sample,
                            random_state=random_state, client=False).fit(K)
        seconds = time.perf_counter() - start
        signs = np.sign(np.sum(sampled.eigenvectors_ * vectors, axis=0))
        Z_s = sampled.eigenvectors_ * np.sqrt(sampled.eigenvalues_) * signs
        angles = np.linalg.svd(vectors.T @ sampled.eigenvectors_, compute_uv=False)
        records.append({"n_sample": int(n_sample), "k": k,
                        "eigenvalue_error": float(np.max(np.abs(sampled.eigenvalues_ - values) / values)),
                        "projection_error": float(np.max(np.linalg.norm(Z_s - Z, axis=0)) / np.linalg.norm(Z[:, 0])),
                        "subspace_sine": float(np.sqrt(max(0.0, 1.0 - angles.min() ** 2))),
                        "eigen_seconds": seconds})  # fmt: skip
    return records
