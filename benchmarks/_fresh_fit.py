"""One fit in a new Python process, as a user's script runs it: import, fit, predict; one JSON line out.

``_fresh.py`` runs ``python benchmarks/_fresh_fit.py SPEC.json`` once per
library and round. The spec (JSON) names the estimator (``"dkernel.SVC"``),
its parameters, the problem file written by :func:`save_problem` and what
else to report. In this process, in order:

1. the estimator's class is imported (timed: ``import_s``; this module
   imports only the standard library before it, so the time is that of a
   user's ``from dkernel import SVC``, numpy and scikit-learn included);
2. the problem is read from its ``.npz`` file (not timed);
3. ``Estimator(**params).fit(X_train, y_train)`` (timed: ``fit_s``; the
   peak resident memory during it: ``fit_peak_bytes``);
4. ``predict(X_test)`` and ``decision_function(X_test)`` (timed:
   ``predict_s``, ``decision_s``; a regressor has no decision function), the
   test accuracy (for a regressor, with ``"task": "regression"``, also R²),
   the number of support vectors;
5. on request a second fit of the same problem in this process
   (``second_fit_s``), the dual objective of the first (``objective``,
   computed the same way for every library from its ``dual_coef_`` and
   ``support_``) and its test predictions (saved as ``.npy``).

scikit-learn-intelex logs whether oneDAL ran a call or fell back to
scikit-learn; those messages are kept (``onedal``).
"""

import importlib
import json
import logging
import sys

from _timing import timed  # benchmarks/_timing.py, beside this script: the standard library only

__all__ = ["dual_objective", "load_problem", "save_problem"]

_PARTS = ("X_train", "y_train", "X_test", "y_test")


# --------------------------------------------------------------------------- the problem file
def save_problem(path, X_train, y_train, X_test, y_test):
    """Write a problem to ``path`` (``.npz``, uncompressed): dense arrays as they are, CSR matrices by parts."""
    import numpy as np
    import scipy.sparse as sp

    arrays = {}
    for name, value in zip(_PARTS, (X_train, y_train, X_test, y_test)):
        if sp.issparse(value):
            value = sp.csr_matrix(value)
            arrays.update({f"{name}__data": value.data, f"{name}__indices": value.indices,
                           f"{name}__indptr": value.indptr, f"{name}__shape": np.array(value.shape)})
        else:
            arrays[name] = np.asarray(value)
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    return path


def load_problem(path):
    """``(X_train, y_train, X_test, y_test)`` as :func:`save_problem` wrote them."""
    import numpy as np
    import scipy.sparse as sp

    with np.load(path) as stored:
        parts = []
        for name in _PARTS:
            if name in stored:
                parts.append(stored[name])
            else:
                parts.append(sp.csr_matrix((stored[f"{name}__data"], stored[f"{name}__indices"],
                                            stored[f"{name}__indptr"]), shape=tuple(stored[f"{name}__shape"])))
    return tuple(parts)


# --------------------------------------------------------------------------- the dual objective
def _dense(matrix):
    return matrix.toarray() if hasattr(matrix, "toarray") else matrix


#: Support vectors with at most this many features are made dense before the kernel is evaluated on them.
DENSE_OBJECTIVE_FEATURES = 1024


def dual_objective(model, X_train, kernel, block_bytes=2**28, **kernel_params):
    """Σ over the one-vs-one problems of ``½ cᵀKc − Σ|c|``, from libsvm's ``dual_coef_`` / ``support_`` layout.

    The same computation for every library (scikit-learn, oneDAL and dkernel
    share that layout), so equal values show that the same problem was
    solved. ``K`` is evaluated by :func:`sklearn.metrics.pairwise_kernels`
    over the support vectors, one row block of at most ``block_bytes`` at a
    time. With ``yᵀα = 0`` (``Σ c = 0`` per problem) the value is the same
    for a centered Gram (Meilă's translation invariance).
    """
    import numpy as np
    from sklearn.metrics import pairwise_kernels

    support = np.asarray(model.support_)
    dual_coef = _dense(model.dual_coef_)
    sv = X_train[support]
    if sv.shape[1] <= DENSE_OBJECTIVE_FEATURES:  # a few features: dense products (BLAS) beat sparse ones
        sv = _dense(sv)
    n_support = np.asarray(model.n_support_)
    start = np.concatenate([[0], np.cumsum(n_support)])
    total = 0.0
    for i in range(len(n_support)):
        for j in range(i + 1, len(n_support)):
            rows = np.r_[start[i]:start[i + 1], start[j]:start[j + 1]]
            c = np.concatenate([dual_coef[j - 1, start[i]:start[i + 1]], dual_coef[i, start[j]:start[j + 1]]])
            step = max(1, block_bytes // (8 * max(len(rows), 1)))
            quad = 0.0
            for b in range(0, len(rows), step):
                K = pairwise_kernels(sv[rows[b:b + step]], sv[rows], metric=kernel, filter_params=True,
                                     **kernel_params)
                quad += c[b:b + step] @ (K @ c)
            total += 0.5 * quad - np.abs(c).sum()
    return float(total)


# --------------------------------------------------------------------------- one fit
class _Messages(logging.Handler):
    """Keeps the messages of a logger (scikit-learn-intelex says there whether oneDAL ran a call)."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage().strip())


def fit_once(spec):
    """Run one fit as the spec says; the dict of figures that the process prints."""
    module, name = spec["estimator"].rsplit(".", 1)
    Estimator, import_s = timed(lambda: getattr(importlib.import_module(module), name))
    X_train, y_train, X_test, y_test = load_problem(spec["problem"])
    params = spec["params"]
    onedal = _Messages()
    logger = logging.getLogger("sklearnex")
    logger.addHandler(onedal)
    logger.setLevel(logging.INFO)

    from dkernel._runtime.memory import peak_memory, reset_peak_memory

    reset_peak_memory()
    model, fit_s = timed(lambda: Estimator(**params).fit(X_train, y_train))
    fit_peak = peak_memory()
    predicted, predict_s = timed(lambda: model.predict(X_test))
    decide = getattr(model, "decision_function", None)  # a regressor has none
    decision_s = timed(lambda: decide(X_test))[1] if decide is not None else None

    import numpy as np

    result = {
        "estimator": spec["estimator"],
        "import_s": import_s,
        "fit_s": fit_s,
        "predict_s": predict_s,
        "decision_s": decision_s,
        "fit_peak_bytes": fit_peak,
        "accuracy": float(np.mean(np.asarray(predicted) == np.asarray(y_test))),
        "n_support": int(np.asarray(model.support_).shape[0]),
        "n_test": int(X_test.shape[0]),
        "gram": getattr(model, "gram_dtype_", None),
        "module_file": getattr(sys.modules[module], "__file__", None),
        "onedal": [m for m in onedal.messages if "running accelerated" in m or "fallback" in m],
    }
    if spec.get("task") == "regression":
        result["r2"] = float(model.score(X_test, y_test))
    if spec.get("predictions"):
        np.save(spec["predictions"], np.asarray(predicted))
    if spec.get("second_fit"):
        _, result["second_fit_s"] = timed(lambda: Estimator(**params).fit(X_train, y_train))
    if spec.get("objective"):
        kernel_params = {key: params[key] for key in ("gamma", "degree", "coef0") if key in params}
        result["objective"] = dual_objective(model, X_train, params.get("kernel", "rbf"), **kernel_params)
    return result


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0]) as f:
        spec = json.load(f)
    print(json.dumps(fit_once(spec)), flush=True)


if __name__ == "__main__":
    main()
