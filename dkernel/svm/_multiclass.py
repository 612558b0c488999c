"""Several classes from binary problems: one-vs-one (libsvm's scheme) and one-vs-rest.

The binary problems in scikit-learn's order and sign convention, the
support vectors grouped by class with one coefficient row per problem,
libsvm's ``dual_coef_`` layout, and the decision values and votes that turn
the problems' decision values back into classes.
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._runtime.threads import BlasThreads, usable_cores

#: Samples from which a binary problem is worth a thread of its own: below,
#: the work is mostly Python holding the GIL, and threads only add switching.
PARALLEL_PROBLEM_SIZE = 1000


def binary_problems(y_index, n_classes, keep, multiclass):
    """``(index, y_pm)`` for each binary problem over the samples ``keep``.

    Two classes: one problem, +1 for the second class (as scikit-learn's
    ``decision_function``). ``multiclass="ovr"``: one problem per class, +1
    for that class. ``"ovo"``: one problem per pair ``i < j`` of classes on
    their samples, +1 (a vote) for the first class of the pair (libsvm).
    """
    if n_classes == 2:
        return [(keep, np.where(y_index[keep] == 1, 1.0, -1.0))]
    if multiclass == "ovr":
        return [(keep, np.where(y_index[keep] == k, 1.0, -1.0)) for k in range(n_classes)]
    problems = []
    for i in range(n_classes):
        for j in range(i + 1, n_classes):
            index = keep[(y_index[keep] == i) | (y_index[keep] == j)]
            problems.append((index, np.where(y_index[index] == i, 1.0, -1.0)))
    return problems


def solve_problems(solve, problems, parallel, blas=None):
    """``[solve(k) for k in range(len(problems))]``, in threads when ``parallel`` and the problems are large.

    The binary problems share one Gram and are independent; each thread
    solves whole problems (its BLAS calls and row gathers release the GIL),
    the largest first so that the threads finish together, each with a
    single-threaded BLAS (``blas``: the fit's :class:`~dkernel._runtime.threads.BlasThreads`).
    """
    sizes = [index.shape[0] for index, _ in problems]
    threads = min(usable_cores(), sum(size >= PARALLEL_PROBLEM_SIZE for size in sizes))
    if not parallel or threads < 2:
        return [solve(k) for k in range(len(problems))]
    order = sorted(range(len(problems)), key=lambda k: -sizes[k])
    with (blas or BlasThreads()).single(), ThreadPoolExecutor(max_workers=threads) as pool:
        futures = {k: pool.submit(solve, k) for k in order}
        try:
            return [futures[k].result() for k in range(len(problems))]
        except BaseException:
            for future in futures.values():
                future.cancel()
            raise


def support_and_coefficients(problems, coefs, y_index, n_classes):
    """Support vectors grouped by class (as libsvm) and one row of coefficients ``α y`` per problem.

    Returns ``(support, n_support, pair_coef)``: the training indices of the
    support vectors of any problem, their count per class, and the
    ``(n_problems, n_SV)`` coefficients (zero where a vector is not a support
    vector of that problem).
    """
    sv_mask = np.zeros(y_index.shape[0], dtype=bool)
    for (index, _), coef in zip(problems, coefs):
        sv_mask[index[coef != 0]] = True
    support = np.concatenate([np.flatnonzero(sv_mask & (y_index == k)) for k in range(n_classes)])
    n_support = np.array([np.sum(sv_mask & (y_index == k)) for k in range(n_classes)], dtype=np.int32)
    position = np.full(y_index.shape[0], -1, dtype=np.intp)
    position[support] = np.arange(support.shape[0])
    pair_coef = np.zeros((len(coefs), support.shape[0]))
    for row, ((index, _), coef) in enumerate(zip(problems, coefs)):
        nz = coef != 0
        pair_coef[row, position[index[nz]]] = coef[nz]
    return support.astype(np.int32), n_support, pair_coef


def support_classes(n_support):
    """The class index of each support vector, for support vectors grouped by class."""
    return np.repeat(np.arange(len(n_support)), n_support)


def libsvm_dual_coef(pair_coef, sv_class, n_classes):
    """One-vs-one coefficients in libsvm's layout ((n_classes-1) × n_SV)."""
    dual = np.zeros((n_classes - 1, sv_class.shape[0]))
    row = 0
    for i in range(n_classes):
        for j in range(i + 1, n_classes):
            coef = pair_coef[row]
            dual[j - 1, sv_class == i] = coef[sv_class == i]
            dual[i, sv_class == j] = coef[sv_class == j]
            row += 1
    return dual


def dual_coef(pair_coef, n_support, ovo):
    """scikit-learn's ``dual_coef_``: libsvm's layout for one-vs-one multiclass, else one row per problem."""
    if not ovo:
        return pair_coef
    return libsvm_dual_coef(pair_coef, support_classes(n_support), len(n_support))


def ovr_decision(dec, n_classes):
    """One-vs-rest shaped decision values from one-vs-one values (scikit-learn's transform).

    scikit-learn's ``_ovr_decision_function(dec < 0, -dec, n_classes)``: a value of 0 counts as a vote for the
    first class of the pair here (``dec >= 0``), whereas :func:`predicted_class` follows libsvm's vote (0 for the
    second class), as scikit-learn's ``decision_function`` and ``predict`` do.
    """
    votes = np.zeros((dec.shape[0], n_classes))
    confidence = np.zeros((dec.shape[0], n_classes))
    k = 0
    for i in range(n_classes):
        for j in range(i + 1, n_classes):
            confidence[:, i] += dec[:, k]
            confidence[:, j] -= dec[:, k]
            votes[dec[:, k] >= 0, i] += 1
            votes[dec[:, k] < 0, j] += 1
            k += 1
    return votes + confidence / (3 * (np.abs(confidence) + 1))


def decision_values(dec, n_classes, ovo, shape):
    """``decision_function``'s values from the problems' values ``dec`` (n_test × n_problems).

    One column for two classes; one-vs-one values reshaped to one-vs-rest
    (:func:`ovr_decision`) when ``ovo`` and ``shape == "ovr"``.
    """
    if n_classes == 2:
        return dec[:, 0]
    if ovo and shape == "ovr":
        return ovr_decision(dec, n_classes)
    return dec


def decision_width(n_classes, ovo, shape):
    """Columns of :func:`decision_values` (1 stands for a 1-D result)."""
    if n_classes == 2:
        return 1
    if ovo and shape == "ovo":
        return n_classes * (n_classes - 1) // 2
    return n_classes


def predicted_class(dec, n_classes, multiclass):
    """The class index of each test point: the sign (two classes), the largest value (ovr) or the most votes (ovo).

    Ties as libsvm's ``svm_predict_values``: a pair's (libsvm-signed, +1 for its first class) value ``> 0`` votes
    for its first class, else for its second, and the first class with the most votes wins. Two classes' values
    are scikit-learn's, the negation of libsvm's, so a value of 0 (or -0) gives the second class, ``classes_[1]``.
    """
    if n_classes == 2:
        return (dec[:, 0] >= 0).astype(np.intp)
    if multiclass == "ovr":
        return np.argmax(dec, axis=1)
    votes = np.zeros((dec.shape[0], n_classes), dtype=np.int64)
    row = 0
    for i in range(n_classes):
        for j in range(i + 1, n_classes):
            votes[:, i] += dec[:, row] > 0
            votes[:, j] += dec[:, row] <= 0
            row += 1
    return np.argmax(votes, axis=1)
