"""The matrices K and G of one split of Kandola et al. §6, and the learners and measures on them.

``G`` is the kernel after adaptation: transductive (Algorithm 1, both forms of
its weights, every eigenvector as the paper runs it or the earlier cut at
10⁻¹⁰ λ_max) or inductive (Algorithm 2, its small eigenvalues thresholded at
the numerical rank or at 10⁻⁶ λ_max), all from :mod:`dkernel.alignment`. On
each matrix: training and test alignment; for the uneven sets the test
confusion counts of ``dkernel.SVC`` at every ``C`` of the grid (each fit's
``fit_status_`` kept) and of the Parzen window; for regression the test mean
squared error of ridge regression at every λ of the grid (each solve
checked). Choosing ``C`` or λ is left to the records' readers: by the lowest
mean test error over the runs, as the paper did (§6), or by the
cross-validation on the training points that each measure also records.
"""

import warnings

import numpy as np

__all__ = ["CUTOFFS", "C_GRID", "FOLDS", "RIDGE_GRID", "WEIGHTINGS", "blocks_of", "inductive_variants", "measure",
           "ridge_path", "transductive_variants"]

#: The SVC's C (the paper gives no grid).
C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)

#: The ridge's λ, in units of the mean diagonal of the training matrix (the paper gives no grid).
RIDGE_GRID = (1e-4, 1e-3, 1e-2, 0.1, 1.0, 10.0, 100.0)

#: Cross-validation folds on the training points ("a 10-fold procedure", §6), at most the minority class's count.
FOLDS = 10

#: The two forms of Algorithm 1's weights (:mod:`dkernel.alignment._reweighting`).
WEIGHTINGS = ("eq5", "algorithm1")

#: The eigenvalue cut-offs of each algorithm, the one run as the paper's first: Algorithm 1 keeps every
#: eigenvector; Algorithm 2 thresholds small eigenvalues (no value given) at the numerical rank.
CUTOFFS = {"transductive": ("none", "1e-10"), "inductive": ("n·ε", "1e-6")}


def blocks_of(M, train, test):
    """The training, test × training and test blocks of ``M``."""
    return M[np.ix_(train, train)], M[np.ix_(test, train)], M[np.ix_(test, test)]


def _scaled(blocks, reference):
    """``G`` scaled to the trace of ``K`` on the training points (the C and λ grids then mean the same for both)."""
    scale = float(np.trace(reference) / np.trace(blocks[0]))
    return tuple(b * scale for b in blocks), scale


def transductive_variants(K, y, train, test, target, spectrum=None):
    """``(weighting, cutoff, blocks, rank, scale, same)`` of Algorithm 1: G from the eigenvectors of every point's
    Gram (``spectrum``, else decomposed here), ``same`` naming the variant it equals when the cut drops no
    eigenvalue."""
    from dkernel.alignment import top_eigenpairs, transductive_adaptation

    K_train = K[np.ix_(train, train)]
    spectrum = top_eigenpairs(K, method="exact") if spectrum is None else spectrum
    out = []
    for weighting in WEIGHTINGS:
        for cutoff, tol in (("none", None), ("1e-10", 1e-10)):
            if cutoff != "none" and out[-1][3] == int(np.sum(G.eigenvalues > tol * G.eigenvalues[0])):
                out.append((weighting, cutoff, None, out[-1][3], out[-1][4], (weighting, "none")))
                continue
            G = transductive_adaptation(K, y[train], train, target=target, weighting=weighting, tol=tol,
                                        spectrum=spectrum)
            blocks, scale = _scaled(blocks_of(G.to_numpy(), train, test), K_train)
            out.append((weighting, cutoff, blocks, G.rank, scale, None))
    return out


def inductive_variants(K, y, train, test, target):
    """``(weighting, cutoff, blocks, rank, scale, same)`` of Algorithm 2: the training Gram's eigenvectors, new
    points projected through the kernel (the two forms of the weights coincide: ``weighting`` is ``None``)."""
    from dkernel.alignment import KernelAligner, numerical_rank_tol

    K_train, K_test_train = K[np.ix_(train, train)], K[np.ix_(test, train)]
    out = []
    for cutoff, tol in (("n·ε", numerical_rank_tol(len(train))), ("1e-6", 1e-6)):
        if out and out[-1][3] == int(np.sum(aligner.eigenvalues_ > tol * aligner.eigenvalues_[0])):
            out.append((None, cutoff, None, out[-1][3], out[-1][4], (None, "n·ε")))
            continue
        aligner = KernelAligner(kernel="precomputed", target=target, method="exact", tol=tol).fit(K_train, y[train])
        features_test = aligner.transform(K_test_train)
        blocks = (aligner.training_gram(), features_test @ aligner.transform(K_train).T, features_test @ features_test.T)
        blocks, scale = _scaled(blocks, K_train)
        out.append((None, cutoff, blocks, len(aligner.weights_), scale, None))
    return out


# --------------------------------------------------------------------------- #
# Learners
# --------------------------------------------------------------------------- #


def _confusion(predicted, y):
    """``(tp, fp, fn, tn)`` of the class +1 (the positive class of F1 and of the class-conditional errors)."""
    hit, positive = predicted == 1, y == 1
    return (int(np.sum(hit & positive)), int(np.sum(hit & ~positive)), int(np.sum(~hit & positive)),
            int(np.sum(~hit & ~positive)))


def _svc(M_train, y_train, C):
    from dkernel import SVC

    return SVC(kernel="precomputed", C=C, client=False).fit(M_train, y_train)


def _svc_grid(M_train, M_test_train, y_train, y_test):
    """The test confusion counts and ``fit_status_`` of the SVC at every C of the grid."""
    out = {"C": list(C_GRID), "tp": [], "fp": [], "fn": [], "tn": [], "status": []}
    for C in C_GRID:
        model = _svc(M_train, y_train, C)
        for key, count in zip(("tp", "fp", "fn", "tn"), _confusion(model.predict(M_test_train), y_test)):
            out[key].append(count)
        out["status"].append(int(model.fit_status_))
    return out


def _svc_cross_validated(M_train, y_train, seed):
    """C by stratified k-fold cross-validation on the training points (accuracy; ties to the smaller C)."""
    from sklearn.model_selection import StratifiedKFold

    folds = StratifiedKFold(max(2, min(FOLDS, int(np.bincount(y_train > 0).min()))), shuffle=True, random_state=seed)
    accuracy, unconverged, fits = [], 0, 0
    for C in C_GRID:
        correct = 0
        for fit_rows, held_out in folds.split(M_train, y_train):
            model = _svc(M_train[np.ix_(fit_rows, fit_rows)], y_train[fit_rows], C)
            correct += int(np.sum(model.predict(M_train[np.ix_(held_out, fit_rows)]) == y_train[held_out]))
            unconverged += int(model.fit_status_ != 0)
            fits += 1
        accuracy.append(correct)
    return {"C": C_GRID[int(np.argmax(accuracy))], "folds": folds.get_n_splits(), "fits": fits,
            "unconverged": unconverged}


def _parzen(M_train, M_test_train, y_train, y_test):
    from dkernel.svm import ParzenWindowClassifier

    model = ParzenWindowClassifier(kernel="precomputed", class_weight="balanced").fit(M_train, y_train)
    return dict(zip(("tp", "fp", "fn", "tn"), _confusion(model.predict(M_test_train), y_test)))


def ridge_path(M_train, M_test, y_train, lambdas, centered):
    """Test predictions of kernel ridge regression (eq. 8) at every λ of ``lambdas``, and whether each solve
    converged.

    The dual solution ``a = (K + λI)⁻¹ t`` of scikit-learn's ``KernelRidge(kernel="precomputed")``, for the whole
    grid from one eigendecomposition of ``K``. ``centered``: ``t = y − ȳ`` (the regression target of eq. 7) with
    ``ȳ`` added back to the predictions; else ``t = y``, with no intercept (eq. 8 as printed). Converged: finite,
    and the relative residual of ``(K + λI) a = t`` below 10⁻⁶.
    """
    mean = float(np.mean(y_train)) if centered else 0.0
    target = y_train - mean
    values, vectors = np.linalg.eigh((M_train + M_train.T) / 2)
    projected = vectors.T @ target
    predictions, converged = [], []
    for lam in lambdas:
        with np.errstate(divide="ignore", invalid="ignore"):
            dual = vectors @ (projected / (values + lam))
        residual = np.linalg.norm(M_train @ dual + lam * dual - target) / max(np.linalg.norm(target), 1e-300)
        converged.append(bool(np.all(np.isfinite(dual))) and bool(residual < 1e-6))
        predictions.append(M_test @ dual + mean)
    return predictions, converged


def _ridge_grid(M_train, M_test_train, y_train, y_test):
    """Test mean squared errors of the ridge at every λ of the grid, fitted to y − ȳ and to y."""
    lambdas = np.array(RIDGE_GRID) * float(np.mean(np.diag(M_train)))
    out = {"lambda": list(RIDGE_GRID)}
    for reading, centered in (("centered", True), ("raw", False)):
        predictions, converged = ridge_path(M_train, M_test_train, y_train, lambdas, centered)
        out[f"mse_{reading}"] = [float(np.mean((p - y_test) ** 2)) for p in predictions]
        out[f"converged_{reading}"] = converged
    return out


def _ridge_cross_validated(M_train, y_train, seed):
    """λ by k-fold cross-validation on the training points (mean squared error, y − ȳ of each fold's part)."""
    from sklearn.model_selection import KFold

    lambdas = np.array(RIDGE_GRID) * float(np.mean(np.diag(M_train)))
    folds = KFold(min(FOLDS, len(y_train)), shuffle=True, random_state=seed)
    errors, unconverged, fits = np.zeros(len(lambdas)), 0, 0
    for fit_rows, held_out in folds.split(M_train):
        predictions, converged = ridge_path(M_train[np.ix_(fit_rows, fit_rows)], M_train[np.ix_(held_out, fit_rows)],
                                            y_train[fit_rows], lambdas, True)
        errors += [np.sum((p - y_train[held_out]) ** 2) for p in predictions]
        unconverged += len(converged) - sum(converged)
        fits += len(converged)
    return {"lambda": RIDGE_GRID[int(np.argmin(errors))], "folds": folds.get_n_splits(), "fits": fits,
            "unconverged": unconverged}


def measure(blocks, y_train, y_test, spec, cv_seed=None):
    """The measures of one matrix on one split; the cross-validated choice too when ``cv_seed`` is given."""
    from dkernel.alignment import target_alignment

    M_train, M_test_train, M_test = blocks
    out = {"train_alignment": target_alignment(M_train, y_train, spec["target"], client=False),
           "test_alignment": target_alignment(M_test, y_test, spec["target"], client=False)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        if spec["task"] == "uneven":
            out["svc"] = _svc_grid(M_train, M_test_train, y_train, y_test)
            out["pw"] = _parzen(M_train, M_test_train, y_train, y_test)
            if cv_seed is not None:
                out["svc_cv"] = _svc_cross_validated(M_train, y_train, cv_seed)
        else:
            out["ridge"] = _ridge_grid(M_train, M_test_train, y_train, y_test)
            if cv_seed is not None:
                out["ridge_cv"] = _ridge_cross_validated(M_train, y_train, cv_seed)
    return out
