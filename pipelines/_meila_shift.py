"""One sample of Meilă's shift experiments (§6.1, Figs. 3–5): original, shifted and recentered SVMs.

The data are moved by ``|a|`` along a random feature-space direction
(:class:`dkernel.views.ShiftedGram`), recentered (:class:`dkernel.views.CenteredGram`,
class-balanced origin of §3 or the centre of weight), and an SVM is trained on
each Gram matrix by the paper's solver (libsvm) and, on the shifted Gram, by
dkernel's (:func:`pipelines._meila.fit_svm`).

References
----------
.. [1] M. Meilă, "Data centering in feature space", Technical Report 421,
   University of Washington, 2002 (AISTATS 2003), section 6.1.
"""

import numpy as np

from ._meila import alignment_limit, error_rate, fit_measures, fit_svm, make_kernel

__all__ = ["main_setting", "shift_experiment", "shift_sensitivity", "shift_tasks"]


def _centering(scheme, y):
    from dkernel.centering import Centering

    if scheme == "class-balanced":
        return Centering.class_balanced(y)
    if scheme == "standard":
        return Centering.standard(len(y))
    raise ValueError(f"unknown centering {scheme!r}; use 'class-balanced' or 'standard'.")


def shift_tasks(kernels, repeats, shifts, setting, alternatives=()):
    """One task per kernel × repeat of a shift experiment (a task runs every shift length on its sample), each
    with ``setting``; then the same for each of ``alternatives``, ``(setting name, label, parameters, kernels)``
    rows whose parameters replace those of ``setting`` and whose label the tasks carry as ``alternative``."""
    plan = [("", {}, kernels), *((name, params, alt_kernels) for _, name, params, alt_kernels in alternatives)]
    return [{"kernel": kernel, "repeat": r, "shifts": list(shifts), **setting, **params, "alternative": name}
            for name, params, kernels_of in plan for kernel in kernels_of for r in range(repeats)]  # fmt: skip


def shift_experiment(X, y, X_test, y_test, params, C, shifts, direction_seed, *,
                     recenterings=(("recentered", "class-balanced"),),
                     shifted_solvers=("libsvm", "dkernel", "dkernel-float32")):  # fmt: skip
    """Original, shifted and recentered SVMs of one sample, for each shift length.

    The data are moved by ``|a|`` along one random feature-space direction
    (:class:`dkernel.views.ShiftedGram`; the same direction for every
    length, drawn from ``direction_seed``), and the shifted Gram is recentered
    by :class:`dkernel.views.CenteredGram`. Test points go through the
    same translation (``ShiftedGram.cross``). A recentered SVM classifies
    with the shifted kernel and ``b - Δb`` (Meilă §4, eqs. 16–19); its
    decision values through the recentered test rows ``K_c(x, x_i)`` are
    computed too, and ``decision_gap`` is the largest difference between the
    two.

    Parameters
    ----------
    X, y, X_test, y_test : ndarrays (labels ±1)
    params : dict
        :func:`kernel_params` output.
    C : float
    shifts : sequence of float
        Shift lengths ``|a|``.
    direction_seed : int
    recenterings : sequence of (variant name, centering scheme)
        ``"class-balanced"`` (eq. 13) or ``"standard"`` (γ = 1/n).
    shifted_solvers : sequence of str
        Solvers run on the shifted Gram; the original and recentered Grams
        are solved by libsvm, the paper's solver.

    Returns
    -------
    list of dict
        One record per shift × variant × solver with ``shift``, ``variant``,
        ``solver`` and the measured values; the caller adds the setting.
    """
    from dkernel import CenteredGram, KernelGram, ShiftedGram
    from dkernel.centering import delta_b

    base = KernelGram(X, make_kernel(params))
    K = base.to_numpy()
    K_test = base.cross(X_test)
    original = fit_svm(K, y, C, "libsvm")
    original_measures = fit_measures(original, K, y, original.decision(K_test), y_test)
    original_measures["alignment_limit"] = alignment_limit(y)
    records = []
    for shift in shifts:
        records.append({"shift": float(shift), "variant": "original", "solver": "libsvm", **original_measures})
        shifted = ShiftedGram(base, shift, random_state=direction_seed)
        K_s = shifted.to_numpy()
        K_s_test = shifted.cross(X_test)
        for solver in shifted_solvers:
            fit = fit_svm(K_s, y, C, solver)
            records.append({"shift": float(shift), "variant": "shifted", "solver": solver,
                            **fit_measures(fit, K_s, y, fit.decision(K_s_test), y_test),
                            "alignment_limit": alignment_limit(y)})  # fmt: skip
        for variant, scheme in recenterings:
            recentered = CenteredGram(shifted, _centering(scheme, y))
            K_c = recentered.to_numpy()
            fit = fit_svm(K_c, y, C, "libsvm")
            db = delta_b(fit.dual_coef, recentered.h)
            # Meilă §4: classify with the kernel the data came in (here the shifted one) and b - Δb.
            decision = K_s_test @ fit.dual_coef + (fit.intercept - db)
            decision_kc = fit.decision(recentered.cross(X_test))
            rec = {"shift": float(shift), "variant": variant, "solver": "libsvm",
                   **fit_measures(fit, K_c, y, decision, y_test)}  # fmt: skip
            rec["alignment_limit"] = alignment_limit(y)
            rec["test_error_kc"] = error_rate(decision_kc, y_test)
            rec["decision_gap"] = float(np.abs(decision - decision_kc).max())
            rec["delta_b"] = db
            records.append(rec)
    return records


def main_setting(records, alternative=""):
    """The records of the main setting (or of the ``alternative`` named in their ``alternative`` key)."""
    return [r for r in records if r.get("alternative", "") == alternative]


def shift_sensitivity(records, claims, alternatives):
    """The verdicts of ``claims(records)`` with the shift grid cut at 10⁴, and under each alternative setting
    that was run (``(setting, name, parameters, kernels)`` items of ``alternatives``), against the main setting."""
    from ._verdicts import sensitivity_rows

    main = main_setting(records)
    as_run = claims(main)
    cut = [r for r in main if r["shift"] <= 1e4]
    rows = sensitivity_rows("shift lengths", "up to 10⁴ only", as_run, claims(cut)) if cut != main else []
    for setting, name, _, _ in alternatives:
        if any(r.get("alternative") == name for r in records):
            rows += sensitivity_rows(setting, name, as_run, claims(main_setting(records, name)))
    return rows
