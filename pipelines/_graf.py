"""Graf & Borer's COIL protocol: the views, the three normalizations, one-vs-all SVMs and their measures.

The protocol of Graf & Borer (2001), §4: grey images reduced to 32 × 32 by
averaging 4 × 4 patches, the views at 0°, 30°, …, 330° of each object for
training and those at 15°, 45°, …, 345° for testing; one classifier per object
(+1 for its views, −1 for all others, C = 1000), a test image going to the
classifier with the largest decision value ("winner take all"); polynomial
kernels ``(1 + x·z)^p`` on raw pixels in [0, 255]. The classification error
is the mean over objects of each object's test error, with its variance over
the objects (Fig. 3).

The three variants of Fig. 3:

* ``input-normalized``: ``x / ‖x‖`` (eq. 1), then ``(1 + x̃·z̃)^p``;
* ``feature-normalized``: ``K(x, z) / sqrt(K(x, x) K(z, z))`` (eq. 2) on the
  raw pixels;
* ``feature-normalized-bprime``: the same SVMs with the threshold moved to
  Graf & Borer's b' (eq. 3).

Each variant is solved by :class:`dkernel.SVC` (one binary SVC per object) and
by libsvm (``sklearn.svm.SVC`` on the precomputed kernel matrices of
:func:`kernel_matrices`; b' from :func:`dkernel.views.graf_intercept`).
"""

import math
import re
import time
import warnings
from pathlib import Path

import numpy as np

__all__ = [
    "C",
    "DEGREES",
    "DEGREES_PER_POSE",
    "VARIANTS",
    "block_average",
    "coil100_folder",
    "coil_split",
    "input_normalized",
    "kernel_matrices",
    "libsvm_one_vs_all",
    "load_coil100",
    "mcnemar",
    "measure",
    "dkernel_one_vs_all",
    "object_errors",
]

#: The regularization parameter of the paper, set a priori.
C = 1000.0
#: The polynomial degrees of Fig. 3.
DEGREES = (1, 2, 3, 4, 5, 6, 7)
VARIANTS = ("input-normalized", "feature-normalized", "feature-normalized-bprime")
#: COIL's turntable: 72 views per object, 5° apart; pose index k (0..71) is the view at 5k°.
DEGREES_PER_POSE = 5
#: Training views every 30° from 0°, test views every 30° from 15°.
TRAIN_EVERY, TEST_OFFSET = 30, 15
#: libsvm's stopping tolerance (its default) for both solvers.
TOL = 1e-3


# --------------------------------------------------------------------------- data
def block_average(images, size=32):
    """Images reduced to ``size × size`` by averaging square patches (4 × 4 for 128 × 128 COIL images).

    ``images`` has shape ``(n, h, w)`` with ``h`` and ``w`` multiples of ``size``;
    images already ``size × size`` are returned as float64 unchanged.
    """
    images = np.asarray(images, dtype=np.float64)
    n, h, w = images.shape
    if h % size or w % size:
        raise ValueError(
            f"images of {h} × {w} pixels cannot be averaged over square patches down to {size} × {size}."
        )
    fh, fw = h // size, w // size
    return images.reshape(n, size, fh, size, fw).mean(axis=(2, 4))


def coil_split(X, y, pose):
    """Graf & Borer's split: views at 0°, 30°, …, 330° for training, 15°, 45°, …, 345° for testing.

    ``pose`` is the view index k in each object's block of 72 (the view at
    ``5k`` degrees). Returns ``X_train, y_train, X_test, y_test``.
    """
    angle = np.asarray(pose) * DEGREES_PER_POSE
    train = angle % TRAIN_EVERY == 0
    test = angle % TRAIN_EVERY == TEST_OFFSET
    return X[train], y[train], X[test], y[test]


_COIL100_NAME = re.compile(r"obj(\d+)__(\d+)\.png$")


def coil100_folder(data_home):
    """A COIL-100 copy under ``data_home`` (a folder of ``obj<i>__<angle>.png`` files), or None."""
    if data_home is None:
        return None
    for name in ("coil100", "coil-100", "COIL-100", "coil100/coil-100"):
        folder = Path(data_home) / name
        if folder.is_dir() and any(_COIL100_NAME.search(p.name) for p in folder.glob("obj*__*.png")):
            return folder
    return None


def load_coil100(folder):
    """COIL-100 from its PNG files: grey (ITU-R 601-2 luma), 32 × 32 by 4 × 4 averaging; ``X, y, pose``.

    The file ``obj<i>__<a>.png`` is object ``i`` seen at ``a`` degrees (pose index ``a / 5``).
    """
    from PIL import Image

    items = []
    for path in sorted(Path(folder).glob("obj*__*.png")):
        match = _COIL100_NAME.search(path.name)
        if match:
            items.append((int(match.group(1)), int(match.group(2)), path))
    if not items:
        raise ValueError(f"{folder} holds no COIL-100 image (files obj<i>__<angle>.png).")
    images = np.stack([np.asarray(Image.open(path).convert("L"), dtype=np.float64) for _, _, path in items])
    X = block_average(images).reshape(len(items), -1)
    y = np.array([obj for obj, _, _ in items], dtype=np.int64)
    pose = np.array([angle // DEGREES_PER_POSE for _, angle, _ in items], dtype=np.int64)
    return X, y, pose


def input_normalized(X):
    """``x / ‖x‖`` (Graf & Borer eq. 1); an all-zero image has no direction and is refused."""
    norms = np.linalg.norm(X, axis=1)
    if not (norms > 0).all():
        zero = np.flatnonzero(norms == 0)
        raise ValueError(f"input-space normalization x/‖x‖ is undefined for the all-zero images {zero}.")
    return X / norms[:, None]


# --------------------------------------------------------------------------- kernels and fits
def _poly(A, B, degree):
    return (1.0 + A @ B.T) ** degree


def kernel_matrices(X_train, X_test, variant, degree):
    """The training and test kernel matrices of ``variant`` (explicit, for libsvm and for ‖w‖)."""
    if variant == "input-normalized":
        A, B = input_normalized(X_train), input_normalized(X_test)
        return _poly(A, A, degree), _poly(B, A, degree)
    d_train = np.sqrt((1.0 + np.einsum("ij,ij->i", X_train, X_train)) ** degree)
    d_test = np.sqrt((1.0 + np.einsum("ij,ij->i", X_test, X_test)) ** degree)
    K = _poly(X_train, X_train, degree) / np.outer(d_train, d_train)
    return K, _poly(X_test, X_train, degree) / np.outer(d_test, d_train)


def _targets(y, classes):
    return [np.where(y == c, 1.0, -1.0) for c in classes]


def _svc(variant, degree, tol):
    from dkernel import SVC

    return SVC(kernel="poly", degree=degree, gamma=1.0, coef0=1.0, C=C, tol=tol, client=False,
               normalize=variant != "input-normalized",
               normalize_bias_correction=variant == "feature-normalized-bprime")  # fmt: skip


def dkernel_one_vs_all(X_train, y_train, X_test, variant, degree, *, tol=TOL):
    """One binary :class:`dkernel.SVC` per object; the decision values and each classifier's fit.

    Returns ``(decisions, fits)``: ``decisions`` of shape ``(n_test,
    n_objects)``, ``fits`` one dict per object with ``intercept`` (used for
    prediction), ``uncorrected`` (the solver's), ``dual_coef``, ``support``
    and ``fit_status`` (the estimator's ``fit_status_``: 0 converged).
    """
    classes = np.unique(y_train)
    if variant == "input-normalized":
        X_train, X_test = input_normalized(X_train), input_normalized(X_test)
    decisions, fits = [], []
    for target in _targets(y_train, classes):
        with warnings.catch_warnings():
            # A margin off the sphere is clipped (and counted by measure()); the warning would repeat it.
            warnings.simplefilter("ignore", RuntimeWarning)
            clf = _svc(variant, degree, tol).fit(X_train, target)
        decisions.append(clf.decision_function(X_test))
        fits.append({"intercept": float(clf.intercept_[0]), "uncorrected": float(clf.uncorrected_intercept_[0]),
                     "dual_coef": clf.dual_coef_[0], "support": clf.support_,
                     "fit_status": int(clf.fit_status_)})  # fmt: skip
    return np.column_stack(decisions), fits


def libsvm_one_vs_all(K_train, y_train, K_test, *, bias_correction=False, tol=TOL):
    """The same one-vs-all SVMs solved by libsvm on precomputed kernel matrices (b' by eq. 3 when asked)."""
    from sklearn.svm import SVC as LibSVC

    from dkernel.views import graf_intercept, weight_norm

    decisions, fits = [], []
    for target in _targets(y_train, np.unique(y_train)):
        clf = LibSVC(kernel="precomputed", C=C, tol=tol).fit(K_train, target)
        coef, sv = clf.dual_coef_[0], clf.support_
        uncorrected = float(clf.intercept_[0])
        intercept = uncorrected
        if bias_correction:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                intercept = graf_intercept(uncorrected, weight_norm(coef, K_train[np.ix_(sv, sv)]))
        decisions.append(K_test[:, sv] @ coef + intercept)
        fits.append({"intercept": intercept, "uncorrected": uncorrected, "dual_coef": coef, "support": sv,
                     "fit_status": int(clf.fit_status_)})
    return np.column_stack(decisions), fits


# --------------------------------------------------------------------------- measures
def object_errors(y_test, predicted, classes):
    """Each object's test error: the fraction of its test views given to another object."""
    return np.array([float(np.mean(predicted[y_test == c] != c)) for c in classes])


def _threshold_measures(fits, K_train):
    """|b − b'|/|b| of each classifier, and how many had a margin off the sphere (b ± 1/‖w‖ ∉ [−1, 1])."""
    from dkernel.views import weight_norm

    changes, clipped = [], 0
    for fit in fits:
        sv = fit["support"]
        w = weight_norm(fit["dual_coef"], K_train[np.ix_(sv, sv)])
        b = -fit["uncorrected"] / w  # the hyperplane's position along w/‖w‖ (the paper's b)
        clipped += int(abs(b) + 1.0 / w > 1.0)
        # b' = -c'/‖w‖ as b = -c/‖w‖: the ratio of positions is that of intercepts.
        changes.append(abs(fit["intercept"] - fit["uncorrected"]) / abs(fit["uncorrected"]))
    return np.array(changes), clipped


def mcnemar(right_a, right_b):
    """McNemar's exact test of two classifiers on the same test images: ``(fixed, broken, p_value)``.

    ``fixed`` counts the images ``b`` gets right and ``a`` wrong, ``broken``
    the reverse; ``p_value`` is the exact two-sided binomial test of the two
    counts with p = 1/2 (1 when no image changes).
    """
    from ._verdicts import mcnemar_p

    right_a, right_b = np.asarray(right_a, dtype=bool), np.asarray(right_b, dtype=bool)
    fixed, broken = int(np.sum(right_b & ~right_a)), int(np.sum(~right_b & right_a))
    return fixed, broken, mcnemar_p(fixed, broken)


def _bprime_measures(decisions, fits, K_train, y_test, classes):
    """What b' changed: ``|b − b'|/|b|`` over the classifiers, clipped margins, and the test images it moved.

    The same classifiers with their uncorrected thresholds give the predictions
    without b'; ``bprime_fixed`` / ``bprime_broken`` count the test images b'
    turns right / wrong, and ``bprime_p_value`` is McNemar's exact two-sided
    test of the two counts (a binomial test with p = 1/2).
    """
    changes, clipped = _threshold_measures(fits, K_train)
    shift = np.array([fit["intercept"] - fit["uncorrected"] for fit in fits])
    right = classes[np.argmax(decisions, axis=1)] == y_test
    right_before = classes[np.argmax(decisions - shift, axis=1)] == y_test
    fixed, broken, p_value = mcnemar(right_before, right)
    return {
        "b_relative_change": float(changes.mean()),
        "b_relative_change_median": float(np.median(changes)),
        "b_relative_change_max": float(changes.max()),
        "b_relative_changes": [float(c) for c in changes],
        "margins_clipped": clipped,
        "bprime_fixed": fixed,
        "bprime_broken": broken,
        "bprime_p_value": p_value,
    }


#: The b' measures of the variants without b'.
_NO_BPRIME = {"b_relative_change": math.nan, "b_relative_change_median": math.nan, "b_relative_change_max": math.nan,
              "b_relative_changes": [], "margins_clipped": 0, "bprime_fixed": 0, "bprime_broken": 0,
              "bprime_p_value": math.nan}  # fmt: skip


def measure(X_train, y_train, X_test, y_test, variant, degree, *, tol=TOL):
    """The records of one variant and degree: dkernel's and libsvm's one-vs-all SVMs.

    Each record has ``solver``, ``error`` (mean over objects of the
    per-object test error), ``error_variance`` (over objects, ``ddof=0``),
    ``object_errors``, ``correct`` (1 for each test image classified right,
    0 otherwise, in test order: what McNemar's tests between two records
    compare), ``fit_status`` (each object's classifier's ``fit_status_``) and
    ``converged`` (all of them 0), the b' measures of
    :func:`_bprime_measures` (NaN or 0 without b'), ``n_sv`` (mean per
    classifier), ``decision_gap`` (the largest difference from libsvm's
    decision values) and ``fit_seconds``.
    """
    classes = np.unique(y_train)
    K_train, K_test = kernel_matrices(X_train, X_test, variant, degree)
    bprime = variant == "feature-normalized-bprime"
    start = time.perf_counter()
    dk = dkernel_one_vs_all(X_train, y_train, X_test, variant, degree, tol=tol)
    dk_seconds = time.perf_counter() - start
    start = time.perf_counter()
    lib = libsvm_one_vs_all(K_train, y_train, K_test, bias_correction=bprime, tol=tol)
    lib_seconds = time.perf_counter() - start
    records = []
    for solver, (decisions, fits), seconds in (("dkernel", dk, dk_seconds), ("libsvm", lib, lib_seconds)):
        predicted = classes[np.argmax(decisions, axis=1)]
        errors = object_errors(y_test, predicted, classes)
        status = [fit["fit_status"] for fit in fits]
        records.append({
            "solver": solver, "error": float(errors.mean()), "error_variance": float(errors.var()),
            "object_errors": [float(e) for e in errors], "correct": [int(c) for c in predicted == y_test],
            "fit_status": status, "converged": not any(status),
            **(_bprime_measures(decisions, fits, K_train, y_test, classes) if bprime else _NO_BPRIME),
            "n_sv": float(np.mean([len(f["support"]) for f in fits])),
            "decision_gap": float(np.abs(decisions - lib[0]).max()),
            "fit_seconds": seconds,
        })  # fmt: skip
    return records
