"""Williams, Li, Feng & Wu (2005): conformal scaling of the kernel by a first-pass SVM.

The toy problem of §3.2 (100 training and 1000 test points uniform in the
square, labels by a boundary ``e^{-4x²}`` up to a linear transform, Gaussian
kernel of width 0.5, C = 10) repeated over 10,000 trials as in the paper,
the trials spread over a Dask LocalCluster (one task per batch of 100 trials),
and the mushroom table (Table 1: 100 training / 1000 test points, 100 trials,
C ∈ {10, 50, 100}, σ ∈ {0.6, 1.0}). Each trial records the test error of the
first pass, of the second pass on ``D K D`` with Williams' ``D = exp(-κ f²)``
(eq. 8) and of Amari & Wu's ``D = Σ_SV exp(-κ|x - x_i|²)`` (eq. 7), each
second pass under the three readings of its bias (free, D-scaled, none:
:class:`dkernel.svm.ConformalSVC`), and whether every fit converged.

The paper leaves the width convention, the square, the linear transform, the
set over which ``|f|max`` is taken, the second pass's bias and the encoding
of the mushroom attributes open; the pipeline runs every reading listed in
:mod:`pipelines._williams` (the principled width and κ rule on all trials,
the others on the first 1,000), and the report classifies each setting,
judges the paper's claims under each bias reading (:mod:`pipelines._fidelity`)
and shows how the verdicts move under the other readings.

Run ``dkernel run williams_conformal`` (``--quick`` for a reduced run).
"""

import dataclasses
import math
import time

import numpy as np

from . import _williams as W
from ._fidelity import Sensitivity, Setting, Z, judge
from ._report import (
    fidelity_sections,
    listing,
    markdown_table,
    run_line,
    write_markdown,
)
from ._command import run_as_script
from ._verdicts import CLAIMS, every

NAME = "williams_conformal"
DESCRIPTION = ("Williams et al. (2005): conformal kernel scaling by a first-pass SVM, the toy problem over "
               "10,000 trials and the mushroom table (Table 1), with the Amari-Wu baseline.")

C_TOY, N_TRAIN, N_TEST = 10.0, 100, 1000
TOY_TRIALS, ALTERNATE_TRIALS, TOY_BATCH = 10_000, 1_000, 100
QUICK_TOY_TRIALS, QUICK_ALTERNATE_TRIALS, QUICK_TOY_BATCH = 40, 10, 20
MUSHROOM_SETTINGS = ((10.0, 0.6), (10.0, 1.0), (50.0, 0.6), (100.0, 0.6))
MUSHROOM_TRIALS, QUICK_MUSHROOM_TRIALS, MUSHROOM_BATCH = 100, 3, 10

#: The paper's numbers: the toy problem's mean improvement, and Table 1 (error before, after) by (C, σ).
PAPER_IMPROVEMENT = 0.145
PAPER_TABLE_1 = {(10.0, 0.6): (0.1120, 0.0705), (10.0, 1.0): (0.0402, 0.0295), (50.0, 0.6): (0.1086, 0.0746),
                 (100.0, 0.6): (0.1197, 0.0775)}  # fmt: skip

#: Every reading run: (width, κ rule).
READINGS = tuple((w, r) for w in W.WIDTHS for r in W.KAPPA_RULES)


def make_tasks(config):
    """Toy batches of trials, then mushroom batches (the data read here, sent once to each worker)."""
    n_toy, n_alt, n_mush = _trials(config)
    batch = QUICK_TOY_BATCH if config.quick else TOY_BATCH
    tasks = [{"dataset": "toy", "start": s, "stop": min(s + batch, n_toy), "alternates": n_alt}
             for s in range(0, n_toy, batch)]
    data = _mushroom_data()
    if data is not None:
        tasks += [{"dataset": "mushroom", "start": s, "stop": min(s + MUSHROOM_BATCH, n_mush), "data": data}
                  for s in range(0, n_mush, MUSHROOM_BATCH)]
    return tasks


def _trials(config):
    """Toy trials, toy trials of the other readings, mushroom trials."""
    n_toy = config.repeats or (QUICK_TOY_TRIALS if config.quick else TOY_TRIALS)
    n_alt = min(n_toy, QUICK_ALTERNATE_TRIALS if config.quick else ALTERNATE_TRIALS)
    n_mush = QUICK_MUSHROOM_TRIALS if config.quick else min(config.repeats or MUSHROOM_TRIALS, MUSHROOM_TRIALS)
    return n_toy, n_alt, n_mush


def _mushroom_data():
    import dask

    from dkernel.datasets import DatasetNotFoundError, load

    try:
        ds = load("mushroom")
    except (DatasetNotFoundError, OSError):
        return None
    key = f"pipeline-data-mushroom-{dask.base.tokenize(ds.X, ds.y)}"
    return dask.delayed({"X": ds.X, "y": ds.y, "names": list(ds.feature_names)}, name=key, traverse=False,
                        pure=True)


def run_task(task):
    """The records of one batch of trials."""
    records = []
    for trial in range(task["start"], task["stop"]):
        if task["dataset"] == "toy":
            readings = READINGS if trial < task["alternates"] else (W.PRINCIPLED,)
            records += W.toy_trial(task["seed"], trial, C_TOY, N_TRAIN, N_TEST, readings)
        else:
            records += W.mushroom_trial(task["data"], task["seed"], trial, MUSHROOM_SETTINGS, N_TRAIN, N_TEST)
    return records


def execute(run_task, tasks, config):
    """Run the toy trials, then the mushroom trials, on one cluster; add a timing record for each."""
    from dkernel._runtime.client import scheduler_client
    from dkernel.cli._arguments import _announce_cluster

    from ._runner import _run_tasks

    n_workers = (config.n_workers or 2) if config.scheduler == "local" else None
    results = []
    scheduler = None if config.scheduler == "threads" else config.scheduler
    with scheduler_client(scheduler, n_workers=n_workers, threads_per_worker=1) as client:
        if client is not None:
            _announce_cluster(client)
        workers = len(client.scheduler_info()["workers"]) if client is not None else 0
        for dataset in ("toy", "mushroom"):
            part = [t for t in tasks if t["dataset"] == dataset]
            if not part:
                continue
            # Tasks whose records an interrupted earlier run saved are read, not run: the wall time is the others'.
            saved = getattr(run_task, "saved", None)
            resumed = [t for t in part if saved is not None and saved.load(t) is not None]
            start = time.perf_counter()
            results += _run_tasks(client, run_task, part, config.progress)
            results.append([{"dataset": dataset, "variant": "timing", "wall_seconds": time.perf_counter() - start,
                             "n_trials": sum(t["stop"] - t["start"] for t in part), "n_tasks": len(part),
                             "n_tasks_resumed": len(resumed),
                             "n_trials_resumed": sum(t["stop"] - t["start"] for t in resumed), "workers": workers}])
    return results


# --------------------------------------------------------------------------- #
# Settings, verdicts and sensitivity (pipelines._fidelity)
# --------------------------------------------------------------------------- #

#: The readings of the second pass's bias, as the claims and the verdicts name them.
BIAS_TEXT = {"free": "free b̃ (eq. 1 with K̃)", "scaled": "D-scaled, D(x)·b̃", "none": "none"}
_READING = {"free": "free bias", "scaled": "D-scaled bias", "none": "no bias"}

#: The mushroom encoding of the verdicts; the others are alternatives in the sensitivity section.
HEADLINE_ENCODING = "one-hot"
_ENCODING_TEXT = {"one-hot": "one 0/1 column per category", "codes": "one value per attribute: the category's rank "
                  "among its letter codes (0, 1, …)", "codes-scaled": "one value per attribute, the rank scaled to "
                  "[0, 1]"}

#: The other readings of the toy problem: (width, κ rule, setting, what the alternative is).
_TOY_ALTERNATIVES = (
    ("sigma2", "train", "kernel width", "σ = 0.5 in exp(−‖x−z‖²/σ²) (gamma = 4)"),
    ("gamma", "train", "kernel width", "width read as gamma = 0.5"),
    ("sigma", "test", "set of |f|max in κ", "the 1000 test points"),
    ("sigma", "square", "set of |f|max in κ", "a 41 × 41 grid of the square"),
)

_UNSTATED_TOY = ("the 14.5 % belongs to the paper's own toy problem, whose square and linear transform it does not "
                 "state: not a measurement of this one")


def settings(config):
    """Every setting of the run and how it relates to the paper."""
    n_toy, n_alt, n_mush = _trials(config)
    trials = (Setting("toy trials", f"{n_toy} (the other width and κ readings on the first {n_alt})", "stated",
                      "§4: 10,000 trials") if n_toy == TOY_TRIALS else
              Setting("toy trials", f"{n_toy} (the other readings on the first {n_alt})", "differs",
                      "a reduced run (--quick or --repeats); the paper has 10,000"))
    return [
        Setting("toy data", "uniform in [−1, 1]², +1 above y = 2e^(−4x²) − 1", "silent",
                "§3.2: 'the square' and the boundary e^(−4x²) 'up to a linear transform', neither given; this "
                "transform stretches the curve to span the square"),
        Setting("toy training / test points", f"{N_TRAIN} / {N_TEST} per trial", "stated", "§4"),
        trials,
        Setting("kernel width", "σ = 0.5 in eq. 9, exp(−‖x−z‖²/2σ²) (gamma = 2)", "silent",
                "§3.2 says 'width 0.5'; eq. 9 is the paper's one definition of a Gaussian width and Table 1 uses "
                "its σ; the other readings in the sensitivity section"),
        Setting("C", f"{C_TOY:g} (toy); Table 1's C (mushroom); both passes", "stated", "§3.2 and Table 1"),
        Setting("conformal factor", "D(x) = exp(−κ f(x)²), f the first pass", "stated", "eq. 8"),
        Setting("κ", "1/|f|max, the maximum over the training points", "silent",
                "§4: κ ≈ 1/|f|max 'in the first pass solution', the set not given; the training points are what "
                "an estimator has (ConformalSVC's default); test points and a grid in the sensitivity section"),
        Setting("second-pass bias", "free b̃, D-scaled D(x)·b̃, none: each run and judged", "silent",
                "eq. 5 gives K̃ and eq. 1 the SVM; the paper says nothing of the second pass's bias; "
                "ConformalSVC(bias=...) implements the three readings"),
        Setting("solver", "dkernel SVC (libsvm's rule, tol = 1e-3, libsvm's step cap); fit_status_ of every fit "
                "recorded", "silent", "the paper names no solver; libsvm's defaults"),
        Setting("mushroom data", "UCI agaricus-lepiota: 8124 mushrooms, 22 nominal attributes, poisonous = +1",
                "stated", "§4: the UCI Mushroom dataset"),
        Setting("mushroom encoding", "one 0/1 column per category; one value per attribute (raw rank, rank "
                "scaled to [0, 1]) in the sensitivity section", "silent",
                "the paper gives neither its encoding nor a feature count; one column per category is the usual "
                "encoding of nominal attributes for an RBF kernel (libsvm's mushrooms file), chosen before the run"),
        Setting("mushroom splits", f"{N_TRAIN} training and {N_TEST} test points without overlap", "stated",
                "§4, Table 1 ('randomly chosen'; no overlap is our reading)"),
        Setting("mushroom trials", str(n_mush), "stated", "Table 1: 100 trials") if n_mush == MUSHROOM_TRIALS else
        Setting("mushroom trials", str(n_mush), "differs", "a reduced run (--quick or --repeats); the paper has 100"),
        Setting("Amari–Wu κ (baseline)", "the kernel's gamma", "silent", "the paper gives no κ for eq. 7"),
    ]


def _claim(kind, bias):
    text = {"improves": "§4 toy: the second pass improves on the first",
            "magnitude": "§4 toy: the mean improvement is about 14.5 % (an average the paper measured, not a bound)",
            "mushroom": "Table 1: the second pass lowers the mushroom error at every (C, σ)"}[kind]
    return f"{text} [bias: {BIAS_TEXT[bias]}]"


def _toy_judgements(records, width, rule, bias):
    """The verdicts (improves, about 14.5 %) on the toy trials of one reading; None without two trials.

    "The second pass improves" is one-sided: reproduced only when the improvement is beyond the noise. "An
    average of 14.5 % improvement" (§4) is a measured value, read as *about* 14.5 %, not *at most*: it agrees
    only within ``Z`` standard errors of 14.5 %, either way (a smaller improvement beyond the noise does not
    agree); a disagreement is inconclusive, not "not reproduced", since the paper's toy problem is not fully
    stated (:data:`_UNSTATED_TOY`).
    """
    e1, e2 = W.paired_errors(records, "toy", width, rule, "conformal", bias)
    if e1.size < 2:
        return None
    n_bad = W.unconverged(records, "toy", width, rule, "conformal", bias)
    imp, _, _, se = W.relative_improvement(e1, e2, with_se=True)
    text = f"1 − err₂/err₁ = {_pct(imp)} over {e1.size} trials, errors {_pct(_mean(e1))} → {_pct(_mean(e2))}"
    common = dict(se=se, converged=n_bad == 0, n_unconverged=n_bad, evidence=text, reading=_READING[bias])
    # A claim of improvement is one-sided: it holds where the improvement is beyond the noise (CLAIMS["higher"],
    # the same as judge's one-sided rule).
    improves = judge(_claim("improves", bias), imp, agrees=CLAIMS["higher"](imp, se), **common)
    diff = imp - PAPER_IMPROVEMENT
    magnitude = judge(_claim("magnitude", bias), diff, agrees=abs(diff) <= Z * se, **common)
    if magnitude.verdict == "not reproduced":
        magnitude = dataclasses.replace(magnitude, verdict="inconclusive",
                                        evidence=f"{magnitude.evidence}; {_UNSTATED_TOY}")
    return improves, magnitude


def _mushroom_judgement(records, bias, encoding):
    """The verdict that the second pass lowers the error at every (C, σ) of Table 1; None without trials."""
    cells = []
    for C, sigma in MUSHROOM_SETTINGS:
        match = dict(C=C, sigma=sigma, encoding=encoding)
        e1, e2 = W.paired_errors(records, "mushroom", "sigma", "train", "conformal", bias, **match)
        if e1.size < 2:
            continue
        diff, se = W.mean_difference(e1, e2)
        n_bad = W.unconverged(records, "mushroom", "sigma", "train", "conformal", bias, **match)
        before, after = PAPER_TABLE_1[(C, sigma)]
        cells.append((f"C = {C:g}, σ = {sigma:g}", judge(
            _claim("mushroom", bias), diff, se=se, agrees=CLAIMS["higher"](diff, se), converged=n_bad == 0,
            n_unconverged=n_bad,
            evidence=f"errors {_pct(_mean(e1))} → {_pct(_mean(e2))} (paper {_pct(before)} → {_pct(after)})"
                     + (f"; the same error in all {e1.size} trials" if np.array_equal(e1, e2) else ""),
            reading=_READING[bias])))
    # Each cell carries the reading: every() keeps "reproduced under reading …" when all cells are.
    return every(_claim("mushroom", bias), cells) if cells else None


def verdicts(records, config):
    """The paper's claims under each reading of the second pass's bias, judged from the records."""
    out = []
    for bias in W.BIASES:
        out += list(_toy_judgements(records, *W.PRINCIPLED, bias) or ())
    out += [_mushroom_judgement(records, bias, HEADLINE_ENCODING) for bias in W.BIASES]
    return [v for v in out if v is not None]


def sensitivity(records, config):
    """The verdicts under the other width and κ readings (toy) and the other encodings (mushroom)."""
    rows = []
    for bias in W.BIASES:
        as_run = _toy_judgements(records, *W.PRINCIPLED, bias)
        for width, rule, setting, text in _TOY_ALTERNATIVES if as_run else ():
            alternative = _toy_judgements(records, width, rule, bias)
            n = W.paired_errors(records, "toy", width, rule, "conformal", bias)[0].size
            rows += [Sensitivity(setting, f"{text} ({n} trials)", run.claim, alt.verdict, run.verdict)
                     for alt, run in zip(alternative or (), as_run)]
        run = _mushroom_judgement(records, bias, HEADLINE_ENCODING)
        for encoding in (e for e in W.ENCODINGS if e != HEADLINE_ENCODING and run is not None):
            alternative = _mushroom_judgement(records, bias, encoding)
            if alternative is not None:
                rows.append(Sensitivity("mushroom encoding", _ENCODING_TEXT[encoding], run.claim,
                                        alternative.verdict, run.verdict))
    return rows


# --------------------------------------------------------------------------- #
# Report
# --------------------------------------------------------------------------- #

_WIDTH_TEXT = {
    "sigma": "σ = 0.5 in the paper's eq. 9, exp(−‖x−z‖²/(2σ²)) (gamma = 2)",
    "sigma2": "σ = 0.5 in exp(−‖x−z‖²/σ²) (gamma = 4)",
    "gamma": "width read as gamma = 0.5, exp(−0.5‖x−z‖²) (the same as σ = 0.5 on the unit square [0, 1]²)",
}
_RULE_TEXT = {"train": "|f|max over the 100 training points", "test": "|f|max over the 1000 test points",
              "square": "|f|max over a 41 × 41 grid of the square"}


def _pct(x):
    return "–" if x is None or not math.isfinite(x) else f"{100 * x:.2f} %"


def _mean(a):
    return float(a.mean()) if a.size else math.nan


def _timing(records, dataset):
    return next((r for r in records if r.get("variant") == "timing" and r["dataset"] == dataset), None)


def _resumed_text(timing):
    """What of a timing record's trials an earlier, interrupted run computed (their time is not in it)."""
    n = timing.get("n_tasks_resumed", 0)
    return (f" ({timing['n_trials_resumed']} trials in {n} of the tasks were read from the records an interrupted "
            f"earlier run had saved: the time is that of the other {timing['n_tasks'] - n} tasks)") if n else ""


def _improvement_cell(e1, e2):
    imp, lo, hi = W.relative_improvement(e1, e2)
    return f"{_pct(imp)} [{_pct(lo)}, {_pct(hi)}]"


def _reading_rows(records):
    rows = []
    for (width, rule), bias in ((r, b) for r in READINGS for b in W.BIASES):
        e1, e2 = W.paired_errors(records, "toy", width, rule, "conformal", bias)
        if not e1.size:
            continue
        kappas = [r["kappa"] for r in records if r.get("dataset") == "toy" and r.get("width") == width
                  and r.get("variant") == "conformal" and r.get("kappa_rule") == rule and r.get("bias") == bias]
        rows.append({"reading": f"{width} / {rule}" + (" (principled)" if (width, rule) == W.PRINCIPLED else ""),
                     "bias": bias, "trials": e1.size, "first": _pct(_mean(e1)), "second": _pct(_mean(e2)),
                     "improvement": _improvement_cell(e1, e2), "kappa": f"{sum(kappas) / len(kappas):.3g}",
                     "better": int((e2 < e1).sum()), "worse": int((e2 > e1).sum()),
                     "unconverged": W.unconverged(records, "toy", width, rule, "conformal", bias)})
    return rows


def _amari_wu_rows(records):
    rows = []
    for width, bias in ((w, b) for w in W.WIDTHS for b in W.BIASES):
        e1, e2 = W.paired_errors(records, "toy", width, "", "amari-wu", bias)
        if e1.size:
            rows.append({"width": width, "bias": bias, "trials": e1.size, "first": _pct(_mean(e1)),
                         "amari-wu": _pct(_mean(e2)), "improvement": _improvement_cell(e1, e2)})
    return rows


def _mushroom_rows(records):
    rows = []
    for encoding, (C, sigma) in ((e, s) for e in W.ENCODINGS for s in MUSHROOM_SETTINGS):
        match = dict(C=C, sigma=sigma, encoding=encoding)
        e1, _ = W.paired_errors(records, "mushroom", "sigma", "train", "conformal", **match)
        if not e1.size:
            continue
        before, after = PAPER_TABLE_1[(C, sigma)]
        row = {"encoding": encoding, "C, σ": f"C = {C:g}, σ = {sigma:g}", "trials": e1.size,
               "paper before → after": f"{_pct(before)} → {_pct(after)}", "first pass": _pct(_mean(e1))}
        for variant, label in (("conformal", "Williams"), ("amari-wu", "Amari–Wu")):
            for bias in W.BIASES:
                _, e2 = W.paired_errors(records, "mushroom", "sigma", "train", variant, bias, **match)
                row[f"{label}, {bias}"] = _pct(_mean(e2))
        rows.append(row)
    return rows


def _c_insensitive(records, encoding, sigma=0.6):
    """Trials whose first-pass error is the same at every C of Table 1 with width ``sigma``, and all trials."""
    by_trial = {}
    for r in records:
        if r.get("dataset") == "mushroom" and r.get("variant") == "first-pass" and r.get("encoding") == encoding \
                and r.get("sigma") == sigma:
            by_trial.setdefault(r["trial"], set()).add(r["test_error"])
    return sum(len(v) == 1 for v in by_trial.values()), len(by_trial)


def _mushroom_notes(records):
    lines, matching = [], []
    for encoding in W.ENCODINGS:
        firsts = {(C, s): W.paired_errors(records, "mushroom", "sigma", "train", "conformal", C=C, sigma=s,
                                          encoding=encoding)[0] for C, s in MUSHROOM_SETTINGS}
        if not all(v.size > 1 for v in firsts.values()):
            continue
        se = {k: float(v.std(ddof=1) / math.sqrt(v.size)) for k, v in firsts.items()}
        if all(abs(_mean(firsts[k]) - PAPER_TABLE_1[k][0]) <= Z * se[k] for k in MUSHROOM_SETTINGS):
            matching.append(encoding)
        same, total = _c_insensitive(records, encoding)
        lines.append(f"- {encoding}: first-pass errors "
                     + listing(f"{_pct(_mean(firsts[k]))} ± {_pct(se[k])} at C = {k[0]:g}, σ = {k[1]:g}"
                               for k in MUSHROOM_SETTINGS)
                     + f"; at σ = 0.6 the same error at C = 10, 50 and 100 in {same}/{total} trials.")
    if not lines:
        return []
    head = (f"The paper's first-pass errors ({listing(_pct(PAPER_TABLE_1[k][0]) for k in MUSHROOM_SETTINGS)}) are "
            + (f"within {Z:g} standard errors of the {listing(matching)} encoding's at every (C, σ)." if matching
               else f"not within {Z:g} standard errors of any encoding's at every (C, σ): the paper's encoding is not "
               "one of these, and the verdicts judge the direction of the change, not its size."))
    return [head, "", *lines, "",
            "The error cannot depend on C where no α reaches C (the solution at C = 10 is then the solution at "
            "every larger C); that is the case where the Gram of the training points is close to the identity, as "
            "with one-hot mushrooms at σ = 0.6 (two that differ in k attributes are at ‖x − z‖² = 2k, so "
            "K = exp(−k/σ²) ≈ e^(−2.8k)).", ""]


def write_report(result, outdir):
    records = result.records
    figure = W.figure_1(outdir / "fig1_toy.png", result.config.seed, C_TOY, N_TRAIN)
    toy_time, mush_time = _timing(records, "toy"), _timing(records, "mushroom")
    parts = [
        f"# {NAME}: conformal kernel scaling (Williams, Li, Feng & Wu 2005)", "",
        run_line(result), "",
        "Every setting below is classified against the paper; each of the paper's claims is judged under each of "
        "the three readings of the second pass's bias that eq. 5 admits (free: eq. 1 with K̃, a constant b̃; "
        "D-scaled: the bias multiplied by D(x), as the conformal map D(x)φ(x) applied to the first pass's constant "
        "feature; none: no bias), and the verdicts are rerun under the readings of the other settings the paper "
        "leaves open.", "",
        *fidelity_sections(settings(result.config), verdicts(records, result.config),
                           sensitivity(records, result.config),
                           sensitivity_note="The toy alternatives ran on the first trials only (the trial count is "
                           "in each alternative's text), so their noise is larger."),
        "## Toy problem (§3.2, Fig. 1)", "",
        f"Points uniform in [−1, 1]², labels +1 above y = 2e^(−4x²) − 1, {N_TRAIN} training and {N_TEST} test "
        f"points per trial, C = {C_TOY:g}; second pass on D(x)K(x,z)D(z) with D = exp(−κf²) (eq. 8), same C.", "",
    ]
    if toy_time is not None:
        parts += [f"{toy_time['n_trials']} trials ran as {toy_time['n_tasks']} Dask tasks on "
                  f"{toy_time['workers']} worker processes of a LocalCluster in {toy_time['wall_seconds']:.1f} s "
                  f"of wall time{_resumed_text(toy_time)}.", ""]
    parts += [
        "Widths: " + "; ".join(f"**{k}**: {v}" for k, v in _WIDTH_TEXT.items()) + ". κ rules: "
        + "; ".join(f"**{k}**: {v}" for k, v in _RULE_TEXT.items()) + ". Improvement: 1 − err₂/err₁ of the mean "
        "errors, with a 95 % paired bootstrap interval over trials; the paper reports 14.50 % over 10000 trials.",
        "",
        markdown_table(_reading_rows(records), [
            ("reading (width / κ rule)", "reading"), ("bias", "bias"), ("trials", "trials"), ("first pass", "first"),
            ("conformal", "second"), ("improvement [95 % CI]", "improvement"), ("mean κ", "kappa"),
            ("trials better", "better"), ("trials worse", "worse"), ("fits not converged", "unconverged")]),
        "",
        "**Why the free bias can make the second pass worse.** With κ = 1/|f|max, D = exp(−κf²) falls to "
        "exp(−|f|max) far from the boundary, so K̃ = DKD vanishes there and the free second pass tends to its "
        "constant b̃ (the \"relatively flat areas\" of Fig. 1(d)): far points of the class b̃ does not favour are "
        "misclassified. Under the D-scaled bias and without bias the decision is D(x) times a function whose sign "
        "does not fade with D (Fig. 1(e), (f)).",
        "",
        "### Amari & Wu's factor (eq. 7) as the baseline", "",
        "D(x) = Σ_SV exp(−κ‖x − x_i‖²) with κ = the kernel's gamma (the paper gives no κ for eq. 7).", "",
        markdown_table(_amari_wu_rows(records), [
            ("width", "width"), ("bias", "bias"), ("trials", "trials"), ("first pass", "first"),
            ("Amari–Wu", "amari-wu"), ("improvement [95 % CI]", "improvement")]),
        "",
        "![Fig. 1](fig1_toy.png)", "",
        "Fig. 1 (trial 0, principled reading): (a) data and the true boundary (red dashes), (b) first-pass f, "
        "(c) the magnification ratio of eq. 15, (d)–(f) the second-pass decision function under the free, "
        "D-scaled and no bias.", "",
        "## Mushroom (Table 1)", "",
        "UCI mushroom, labels poisonous = +1, in three encodings of its 22 nominal attributes: "
        + "; ".join(f"**{k}**: {v}" for k, v in _ENCODING_TEXT.items()) + " (a missing stalk-root is its own "
        "category). Per trial 100 training and 1000 test points drawn without overlap; σ as in eq. 9 "
        "(gamma = 1/(2σ²)); κ = 1/|f|max over the training points; mean test errors over the trials.", "",
    ]
    rows = _mushroom_rows(records)
    if rows:
        if mush_time is not None:
            parts += [f"{mush_time['n_trials']} trials in {mush_time['wall_seconds']:.1f} s{_resumed_text(mush_time)}.",
                      ""]
        parts += [markdown_table(rows, [(k, k) for k in rows[0]]), "", *_mushroom_notes(records)]
    else:
        parts += ["Not run: the mushroom data file was not found.", ""]
    return write_markdown(outdir, parts, [figure])


if __name__ == "__main__":
    run_as_script(NAME)
