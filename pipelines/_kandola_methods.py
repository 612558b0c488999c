"""The matrices K and G of one split of Kandola et al. §6, and the learners and measures on them.

``G`` is the kernel after adaptation: transductive (Algorithm 1) or inductive
(Algorithm 2), both from :mod:`dkernel.alignment`. The measures: training and
test alignment, the test errors of ``dkernel.SVC`` and of the Parzen window
classifier, F1 of the SVC, and the test error of ridge regression
(scikit-learn's ``KernelRidge`` on the precomputed matrix). Hyper-parameters
(the SVC's C, the ridge λ) are chosen by cross-validation on the training part
of each split.
"""

import warnings

import numpy as np

__all__ = ["C_GRID", "RIDGE_GRID", "all_eigenvectors_alignment", "blocks_of", "inductive", "measures",
           "ridge", "scaled", "transductive"]

C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)



RIDGE_GRID = (1e-4, 1e-3, 1e-2, 0.1, 1.0, 10.0)



FOLDS = 5



def blocks_of(M, train, test):
    return M[np.ix_(train, train)], M[np.ix_(test, train)], M[np.ix_(test, test)]



def transductive(K, y, train, test, target):
    from dkernel.alignment import transductive_adaptation

    G = transductive_adaptation(K, y[train], train, target=target, method="exact")
    return blocks_of(G.to_numpy(), train, test), G.rank



def inductive(K, y, train, test, target):
    from dkernel.alignment import KernelAligner

    aligner = KernelAligner(kernel="precomputed", target=target, method="exact").fit(K[np.ix_(train, train)], y[train])
    F_train, F_test = aligner.training_gram(), aligner.transform(K[np.ix_(test, train)])
    features_train = aligner.transform(K[np.ix_(train, train)])
    return (F_train, F_test @ features_train.T, F_test @ F_test.T), len(aligner.weights_)



def all_eigenvectors_alignment(K, y, train, target, algorithm):
    """The training alignment of G when no eigenvalue is dropped (the null space's arbitrary basis kept too)."""
    from dkernel.alignment import transductive_adaptation

    source = K if algorithm == "transductive" else K[np.ix_(train, train)]
    rows = train if algorithm == "transductive" else np.arange(len(train))
    G = transductive_adaptation(source, y[train], rows, target=target, method="exact", tol=None)
    return G.alignment(y[train], rows, target)



def scaled(blocks, reference):
    """``G`` scaled to the trace of ``K`` on the training points (alignment is scale-free; C's grid is not)."""
    scale = float(np.trace(reference) / np.trace(blocks[0]))
    return tuple(b * scale for b in blocks), scale



def _folds(y, task):
    from sklearn.model_selection import KFold, StratifiedKFold

    if task == "regression":
        return KFold(FOLDS, shuffle=True, random_state=0)
    return StratifiedKFold(max(2, min(FOLDS, int(np.bincount(y > 0).min()))), shuffle=True, random_state=0)



def _svc(M_train, M_test, y_train):
    """``dkernel.SVC`` on the precomputed matrix, C chosen by cross-validation on the training points."""
    from sklearn.model_selection import GridSearchCV

    from dkernel import SVC

    search = GridSearchCV(SVC(kernel="precomputed", client=False), {"C": list(C_GRID)}, cv=_folds(y_train, "uneven"))
    search.fit(M_train, y_train)
    return search.best_estimator_.predict(M_test), float(search.best_params_["C"])



def ridge(M_train, M_test, y_train):
    """scikit-learn's ``KernelRidge`` on the precomputed matrix, λ chosen by cross-validation.

    It fits ``y - ȳ`` (the regression target of eq. 7, ȳ over the training points) and adds ȳ back: an
    unpenalized intercept, which ``KernelRidge`` has not.
    """
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.model_selection import GridSearchCV

    mean = float(np.mean(y_train))
    search = GridSearchCV(KernelRidge(kernel="precomputed"), {"alpha": list(RIDGE_GRID)},
                          cv=_folds(y_train, "regression"), scoring="neg_mean_squared_error")
    search.fit(M_train, y_train - mean)
    return search.best_estimator_.predict(M_test) + mean, float(search.best_params_["alpha"])



def _uneven_measures(blocks, y_train, y_test):
    from sklearn.metrics import f1_score

    from dkernel.svm import ParzenWindowClassifier

    M_train, M_test_train, _ = blocks
    predicted, C = _svc(M_train, M_test_train, y_train)
    parzen = ParzenWindowClassifier(kernel="precomputed", class_weight="balanced").fit(M_train, y_train)
    return {"svc_error": float(np.mean(predicted != y_test)),
            "pw_error": float(np.mean(parzen.predict(M_test_train) != y_test)),
            "f1": float(f1_score(y_test, predicted, pos_label=1, zero_division=0.0)), "rr_error": None,
            "svc_C": C, "ridge_alpha": None}  # fmt: skip



def _regression_measures(blocks, y_train, y_test):
    M_train, M_test_train, _ = blocks
    predicted, alpha = ridge(M_train, M_test_train, y_train)
    return {"svc_error": None, "pw_error": None, "f1": None,
            "rr_error": float(np.mean((predicted - y_test) ** 2)), "svc_C": None, "ridge_alpha": alpha}  # fmt: skip



def _alignments(blocks, y_train, y_test, target):
    from dkernel.alignment import target_alignment

    M_train, _, M_test = blocks
    return {"train_alignment": target_alignment(M_train, y_train, target, client=False),
            "test_alignment": target_alignment(M_test, y_test, target, client=False)}



def measures(blocks, y, train, test, spec):
    learners = _uneven_measures if spec["task"] == "uneven" else _regression_measures
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return {**_alignments(blocks, y[train], y[test], spec["target"]), **learners(blocks, y[train], y[test])}
