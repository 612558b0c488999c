"""Trials, statistics and figures of the ``williams_conformal`` pipeline (Williams, Li, Feng & Wu 2005).

The toy problem of §3.2: points uniform in the square ``[-1, 1]²``, labelled
+1 above the boundary ``y = 2 e^{-4x²} - 1`` (the paper's ``e^{-4x²}``
"up to a linear transform": stretched to span the square vertically), -1
below. A trial fits the first pass once per kernel width and the second pass
once per factor (κ rule, or Amari & Wu) and reading of its bias
(:data:`dkernel.svm._conformal.BIASES`) with
:meth:`dkernel.svm._conformal.ConformalSVC.fit_from_first_pass`. Every record
says whether its fits converged (``fit_status_ == 0``).

The mushroom table (Table 1) runs on each of :data:`ENCODINGS` of the 22
nominal attributes: the paper gives neither its encoding nor a feature count.
"""

import math

import numpy as np

#: The readings of the paper's "Gaussian radial basis kernel with width 0.5": name → gamma.
WIDTHS = {
    "sigma": 1.0 / (2 * 0.5**2),   # σ = 0.5 in the paper's eq. 9, exp(-|x-z|²/(2σ²))
    "sigma2": 1.0 / 0.5**2,        # exp(-|x-z|²/σ²) with σ = 0.5 (Meilă's, Graf & Borer's convention)
    "gamma": 0.5,                  # exp(-0.5 |x-z|²): the width read as scikit-learn's gamma
}  # fmt: skip

#: The readings of "κ = 1/|f|max in the first pass solution": where the maximum is taken.
KAPPA_RULES = ("train", "test", "square")

#: The reading both the estimator's default and the report's headline use (see the report for why).
PRINCIPLED = ("sigma", "train")

#: The readings of the second pass's bias (ConformalSVC's ``bias``): eq. 1 with K̃, D-scaled, none.
BIASES = ("free", "scaled", "none")

#: Encodings of the mushroom attributes: one column per category (0/1), or one value per attribute (the
#: category's rank among the attribute's letter codes), raw or scaled to [0, 1].
ENCODINGS = ("one-hot", "codes", "codes-scaled")

SQUARE_GRID = 101


def toy_data(rng, n):
    """``n`` points uniform in ``[-1, 1]²`` and their labels (+1 above ``y = 2e^{-4x²} - 1``)."""
    X = rng.uniform(-1.0, 1.0, size=(n, 2))
    return X, np.where(X[:, 1] > toy_boundary(X[:, 0]), 1, -1)


def toy_boundary(x):
    """The class boundary of the toy problem."""
    return 2.0 * np.exp(-4.0 * x**2) - 1.0


def square_grid(m=SQUARE_GRID):
    """An ``m × m`` grid of the square ``[-1, 1]²`` (rows are points)."""
    g = np.linspace(-1.0, 1.0, m)
    xx, yy = np.meshgrid(g, g)
    return np.column_stack([xx.ravel(), yy.ravel()])


def trial_rng(seed, trial):
    """The random stream of one trial (independent streams by ``[seed, trial]``)."""
    return np.random.default_rng([int(seed), int(trial)])


def error(predicted, truth):
    return float(np.mean(np.asarray(predicted) != np.asarray(truth)))


def first_pass(X, y, gamma, C):
    from dkernel import SVC

    return SVC(C=C, gamma=gamma, client=False).fit(X, y)


def second_pass(first, X, y, C, method, kappa=None, bias="free"):
    from dkernel.svm import ConformalSVC

    return ConformalSVC(C=C, gamma=first._kernel.gamma, conformal=method, kappa=kappa, bias=bias,
                        client=False).fit_from_first_pass(first, X, y)


def _second_records(base, first, X, y, X_test, y_test, C, method, rule, kappa=None):
    """One record per bias reading of the second pass with factor ``method`` (κ given, or its default)."""
    records = []
    for bias in BIASES:
        model = second_pass(first, X, y, C, method, kappa, bias)
        records.append({**base, "kappa_rule": rule, "variant": "conformal" if method == "williams" else method,
                        "bias": bias, "kappa": model.kappa_, "converged": model.fit_status_ == 0,
                        "test_error": error(model.predict(X_test), y_test)})
    return records


def _first_record(base, first, X_test, y_test):
    return {**base, "kappa_rule": "", "variant": "first-pass", "bias": "", "kappa": math.nan,
            "converged": first.fit_status_ == 0, "test_error": error(first.predict(X_test), y_test)}


def kappa_over(first, rule, X, X_test):
    """κ = 1/|f|max with the maximum over the training points, the test points or a grid of the square."""
    from dkernel.views import ConformalFactor, kappa_rule

    points = {"train": X, "test": X_test, "square": square_grid(41) if rule == "square" else None}[rule]
    return kappa_rule(ConformalFactor.from_svc(first, "williams", 1.0).decision(points))


def toy_trial(seed, trial, C, n_train, n_test, readings):
    """The records of one toy trial for ``readings`` (a list of (width, κ rule)), each under every bias reading;
    Amari & Wu once per width."""
    rng = trial_rng(seed, trial)
    X, y = toy_data(rng, n_train)
    X_test, y_test = toy_data(rng, n_test)
    records = []
    for width in dict.fromkeys(w for w, _ in readings):
        gamma = WIDTHS[width]
        base = {"dataset": "toy", "trial": trial, "width": width, "encoding": "", "C": C, "sigma": 0.5,
                "gamma": gamma}
        first = first_pass(X, y, gamma, C)
        records.append(_first_record(base, first, X_test, y_test))
        for _, rule in (r for r in readings if r[0] == width):
            kappa = kappa_over(first, rule, X, X_test)
            records += _second_records(base, first, X, y, X_test, y_test, C, "williams", rule, kappa)
        records += _second_records(base, first, X, y, X_test, y_test, C, "amari-wu", "gamma")
    return records


def mushroom_encodings(X, names):
    """The mushroom attributes in each of :data:`ENCODINGS`, from the one-hot columns ``X`` named
    ``attribute=category`` (categories in the order of their letter codes)."""
    attributes = [name.split("=", 1)[0] for name in names]
    order = list(dict.fromkeys(attributes))
    codes = np.empty((X.shape[0], len(order)))
    scaled = np.empty_like(codes)
    for j, attribute in enumerate(order):
        columns = [k for k, a in enumerate(attributes) if a == attribute]
        codes[:, j] = np.argmax(X[:, columns], axis=1)
        scaled[:, j] = codes[:, j] / max(len(columns) - 1, 1)
    return {"one-hot": np.asarray(X, dtype=np.float64), "codes": codes, "codes-scaled": scaled}


def mushroom_trial(data, seed, trial, settings, n_train, n_test):
    """One mushroom trial: 100 training and 1000 test points drawn without overlap, every (C, σ) of Table 1,
    every encoding and bias reading."""
    encodings = mushroom_encodings(np.asarray(data["X"]), data["names"])
    y = np.where(np.asarray(data["y"]) == 1, 1, -1)
    rng = trial_rng(seed + 1, trial)
    idx = rng.permutation(y.shape[0])[: n_train + n_test]
    tr, te = idx[:n_train], idx[n_train:]
    records = []
    if np.unique(y[tr]).shape[0] < 2:
        return records
    for encoding, X in encodings.items():
        for C, sigma in settings:
            gamma = 1.0 / (2 * sigma**2)
            base = {"dataset": "mushroom", "trial": trial, "width": "sigma", "encoding": encoding, "C": C,
                    "sigma": sigma, "gamma": gamma}
            first = first_pass(X[tr], y[tr], gamma, C)
            records.append(_first_record(base, first, X[te], y[te]))
            records += _second_records(base, first, X[tr], y[tr], X[te], y[te], C, "williams", "train")
            records += _second_records(base, first, X[tr], y[tr], X[te], y[te], C, "amari-wu", "gamma")
    return records


# --------------------------------------------------------------------------- #
# Statistics
# --------------------------------------------------------------------------- #


def paired_errors(records, dataset, width, rule, variant, bias="free", **match):
    """Arrays ``(first, second)`` of test errors paired by trial: the first pass, and the second pass of
    ``variant`` (κ rule ``rule`` for ``"conformal"``) under the ``bias`` reading; ``match`` selects both."""
    first, second = _paired_records(records, dataset, width, rule, variant, bias, **match)
    trials = sorted(set(first) & set(second))
    return (np.array([first[t]["test_error"] for t in trials]),
            np.array([second[t]["test_error"] for t in trials]))


def unconverged(records, dataset, width, rule, variant, bias="free", **match):
    """How many of the fits behind :func:`paired_errors` did not converge (first and second passes)."""
    first, second = _paired_records(records, dataset, width, rule, variant, bias, **match)
    trials = set(first) & set(second)
    return sum((not first[t].get("converged", True)) + (not second[t].get("converged", True)) for t in trials)


def _paired_records(records, dataset, width, rule, variant, bias, **match):
    first, second = {}, {}
    for r in records:
        if r.get("dataset") != dataset or r.get("width") != width or any(r.get(k) != v for k, v in match.items()):
            continue
        if r["variant"] == "first-pass":
            first[r["trial"]] = r
        elif r["variant"] == variant and r.get("bias") == bias and (variant != "conformal" or r["kappa_rule"] == rule):
            second[r["trial"]] = r
    return first, second


def relative_improvement(e1, e2, n_boot=2000, seed=0, with_se=False):
    """``1 - mean(e2)/mean(e1)`` with a 95 % paired bootstrap interval over trials; NaNs when undefined.

    With ``with_se`` also the bootstrap standard error (the standard deviation of the bootstrap values).
    """
    if e1.size == 0 or e1.mean() == 0:
        return (math.nan,) * (4 if with_se else 3)
    point = 1.0 - e2.mean() / e1.mean()
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, e1.size, size=(n_boot, e1.size))
    m1, m2 = e1[idx].mean(axis=1), e2[idx].mean(axis=1)
    ok = m1 > 0
    boot = 1.0 - m2[ok] / m1[ok]
    lo, hi = np.percentile(boot, [2.5, 97.5])
    out = (float(point), float(lo), float(hi))
    return out + (float(boot.std(ddof=1)),) if with_se else out


def mean_difference(e1, e2):
    """Mean and standard error over trials of ``e1 - e2`` (the first-pass error minus the second's)."""
    d = np.asarray(e1, dtype=np.float64) - np.asarray(e2, dtype=np.float64)
    if d.size == 0:
        return math.nan, math.nan
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(d.size)) if d.size > 1 else 0.0


# --------------------------------------------------------------------------- #
# Figure 1 (a–d)
# --------------------------------------------------------------------------- #


def rbf_decision_gradient(factor, G):
    """``∇f`` of an RBF first pass at the rows of ``G``: ``Σ c_s K(x, x_s) (-2γ)(x - x_s)``."""
    gamma = factor.kernel.gamma
    K = np.asarray(factor.kernel.block(G, factor.support_vectors), dtype=np.float64) * factor.dual_coef[None, :]
    return -2.0 * gamma * (K.sum(axis=1)[:, None] * G - K @ factor.support_vectors)


def figure_1(path, seed, C, n_train):
    """The paper's Fig. 1 for trial 0 of the principled reading: data, f, magnification (eq. 15), and the
    second pass under each bias reading."""
    from dkernel.views import magnification_ratio

    from ._report import save_figure, subplots

    rng = trial_rng(seed, 0)
    X, y = toy_data(rng, n_train)
    gamma = WIDTHS[PRINCIPLED[0]]
    first = first_pass(X, y, gamma, C)
    models = {bias: second_pass(first, X, y, C, "williams", bias=bias) for bias in BIASES}
    model = models["free"]
    m = 121
    G = square_grid(m)
    shape = (m, m)
    xs = np.linspace(-1, 1, m)
    f = first.decision_function(G)
    sigma = math.sqrt(1.0 / (2 * gamma))
    mag = magnification_ratio(f, rbf_decision_gradient(model.factor_, G), model.kappa_, sigma)
    fig, axes = subplots(2, 3, figsize=(13, 8.6))
    curve = np.linspace(-1, 1, 200)
    panels = [("(a) training set and boundary", None), ("(b) first pass f", f),
              (f"(c) magnification ratio, eq. 15 (κ = {model.kappa_:.3g})", mag)]
    panels += [(f"({letter}) second pass, bias {bias}", models[bias].decision_function(G))
               for letter, bias in zip("def", BIASES)]
    for ax, (title, Z) in zip(axes.ravel(), panels):
        if Z is not None:
            cs = ax.contour(xs, xs, Z.reshape(shape), levels=12, cmap="viridis", linewidths=0.8)
            ax.clabel(cs, fontsize=6, fmt="%.2g")
            if title[1] in "bdef":
                ax.contour(xs, xs, Z.reshape(shape), levels=[0], colors="k", linewidths=1.6)
        ax.plot(curve, toy_boundary(curve), "r--", lw=1)
        ax.scatter(*X[y > 0].T, marker="+", c="k", s=25)
        ax.scatter(*X[y < 0].T, marker="_", c="k", s=25)
        ax.set_xlim(-1, 1)
        ax.set_ylim(-1, 1)
        ax.set_aspect("equal")
        ax.set_title(title, fontsize=9)
    return save_figure(fig, path)
