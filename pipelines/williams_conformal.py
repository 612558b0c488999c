"""Williams, Li, Feng & Wu (2005): conformal scaling of the kernel by a first-pass SVM.

The toy problem of §3.2 (100 training and 1000 test points uniform in the
square, labels by a boundary ``e^{-4x²}`` up to a linear transform, Gaussian
kernel of width 0.5, C = 10) repeated over 10,000 trials as in the paper,
the trials spread over a Dask LocalCluster (one task per batch of 100 trials),
and the mushroom table (Table 1: 100 training / 1000 test points, 100 trials,
C ∈ {10, 50, 100}, σ ∈ {0.6, 1.0}). Each trial records the test error of the
first pass, of the second pass on ``D K D`` with Williams' ``D = exp(-κ f²)``
(eq. 8) and of Amari & Wu's ``D = Σ_SV exp(-κ|x - x_i|²)`` (eq. 7).

The paper leaves the width convention, the square, the linear transform and
the set over which ``|f|max`` is taken open; the pipeline runs every reading
listed in :mod:`pipelines._williams` (the principled one on all trials, the
others on the first 1,000) and the report states each with its result.

Run ``dkernel run williams_conformal`` (``--quick`` for a reduced run).
"""

import math
import time

from . import _williams as W
from ._report import markdown_table, run_line, write_markdown
from ._runner import run_as_script

NAME = "williams_conformal"
DESCRIPTION = ("Williams et al. (2005): conformal kernel scaling by a first-pass SVM, the toy problem over "
               "10,000 trials and the mushroom table (Table 1), with the Amari-Wu baseline.")

C_TOY, N_TRAIN, N_TEST = 10.0, 100, 1000
TOY_TRIALS, ALTERNATE_TRIALS, TOY_BATCH = 10_000, 1_000, 100
QUICK_TOY_TRIALS, QUICK_ALTERNATE_TRIALS, QUICK_TOY_BATCH = 40, 20, 20
MUSHROOM_SETTINGS = ((10.0, 0.6), (10.0, 1.0), (50.0, 0.6), (100.0, 0.6))
MUSHROOM_TRIALS, QUICK_MUSHROOM_TRIALS, MUSHROOM_BATCH = 100, 4, 10

#: The paper's numbers: the toy problem's mean improvement, and Table 1 (error before, after) by (C, σ).
PAPER_IMPROVEMENT = 0.145
PAPER_TABLE_1 = {(10.0, 0.6): (0.1120, 0.0705), (10.0, 1.0): (0.0402, 0.0295), (50.0, 0.6): (0.1086, 0.0746),
                 (100.0, 0.6): (0.1197, 0.0775)}  # fmt: skip

#: Every reading run: (width, κ rule).
READINGS = tuple((w, r) for w in W.WIDTHS for r in W.KAPPA_RULES)


def make_tasks(config):
    """Toy batches of trials, then mushroom batches (the data read here, sent once to each worker)."""
    quick = config.quick
    n_toy = config.repeats or (QUICK_TOY_TRIALS if quick else TOY_TRIALS)
    n_alt = min(n_toy, QUICK_ALTERNATE_TRIALS if quick else ALTERNATE_TRIALS)
    batch = QUICK_TOY_BATCH if quick else TOY_BATCH
    tasks = [{"dataset": "toy", "start": s, "stop": min(s + batch, n_toy), "alternates": n_alt}
             for s in range(0, n_toy, batch)]
    data = _mushroom_data()
    if data is not None:
        n_mush = min(config.repeats or MUSHROOM_TRIALS, MUSHROOM_TRIALS) if not quick else QUICK_MUSHROOM_TRIALS
        tasks += [{"dataset": "mushroom", "start": s, "stop": min(s + MUSHROOM_BATCH, n_mush), "data": data}
                  for s in range(0, n_mush, MUSHROOM_BATCH)]
    return tasks


def _mushroom_data():
    import dask

    from dkernel.datasets import DatasetNotFoundError, load

    try:
        ds = load("mushroom")
    except (DatasetNotFoundError, OSError):
        return None
    key = f"pipeline-data-mushroom-{dask.base.tokenize(ds.X, ds.y)}"
    return dask.delayed({"X": ds.X, "y": ds.y}, name=key, traverse=False, pure=True)


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
            start = time.perf_counter()
            results += _run_tasks(client, run_task, part, config.progress)
            results.append([{"dataset": dataset, "variant": "timing", "wall_seconds": time.perf_counter() - start,
                             "n_trials": sum(t["stop"] - t["start"] for t in part), "n_tasks": len(part),
                             "workers": workers}])
    return results


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


def _reading_rows(records):
    rows = []
    for width, rule in READINGS:
        e1, e2 = W.paired_errors(records, "toy", width, rule, "conformal")
        if not e1.size:
            continue
        imp, lo, hi = W.relative_improvement(e1, e2)
        kappas = [r["kappa"] for r in records if r.get("dataset") == "toy" and r.get("width") == width
                  and r.get("variant") == "conformal" and r.get("kappa_rule") == rule]
        rows.append({"reading": f"{width} / {rule}" + (" (principled)" if (width, rule) == W.PRINCIPLED else ""),
                     "trials": e1.size, "first": _pct(_mean(e1)), "second": _pct(_mean(e2)),
                     "improvement": f"{_pct(imp)} [{_pct(lo)}, {_pct(hi)}]",
                     "kappa": f"{sum(kappas) / len(kappas):.3g}", "better": int((e2 < e1).sum()),
                     "worse": int((e2 > e1).sum())})
    return rows


def _amari_wu_rows(records):
    rows = []
    for width in W.WIDTHS:
        e1, e2 = W.paired_errors(records, "toy", width, "", "amari-wu")
        if not e1.size:
            continue
        imp, lo, hi = W.relative_improvement(e1, e2)
        rows.append({"width": width, "trials": e1.size, "first": _pct(_mean(e1)), "amari-wu": _pct(_mean(e2)),
                     "improvement": f"{_pct(imp)} [{_pct(lo)}, {_pct(hi)}]"})
    return rows


def _mushroom_rows(records):
    rows = []
    for C, sigma in MUSHROOM_SETTINGS:
        e1, e2 = W.paired_errors(records, "mushroom", "sigma", "train", "conformal", C=C, sigma=sigma)
        _, e3 = W.paired_errors(records, "mushroom", "sigma", "", "amari-wu", C=C, sigma=sigma)
        if not e1.size:
            continue
        before, after = PAPER_TABLE_1[(C, sigma)]
        ours = 1 - _mean(e2) / _mean(e1) if _mean(e1) > 0 else math.nan
        rows.append({"C, σ": f"C = {C:g}, σ = {sigma:g}", "trials": e1.size,
                     "paper before": _pct(before), "dkernel before": _pct(_mean(e1)),
                     "paper after": _pct(after), "dkernel after": _pct(_mean(e2)),
                     "dkernel Amari-Wu": _pct(_mean(e3)),
                     "paper improvement": _pct(1 - after / before), "dkernel improvement": _pct(ours),
                     "agrees": "yes" if (ours > 0) == (after < before) and math.isfinite(ours) else "no"})
    return rows


def write_report(result, outdir):
    records = result.records
    figure = W.figure_1(outdir / "fig1_toy.png", result.config.seed, C_TOY, N_TRAIN)
    toy_time, mush_time = _timing(records, "toy"), _timing(records, "mushroom")
    e1, e2 = W.paired_errors(records, "toy", *W.PRINCIPLED, "conformal")
    imp, lo, hi = W.relative_improvement(e1, e2)
    verdict = ("reproduced" if lo <= PAPER_IMPROVEMENT <= hi else
               "not reproduced: the second pass is better, by less or more than the paper says" if imp > 0 else
               "not reproduced: the second pass is worse than the first")
    parts = [
        f"# {NAME}: conformal kernel scaling (Williams, Li, Feng & Wu 2005)", "",
        run_line(result), "",
        "## Toy problem (§3.2, Fig. 1)", "",
        f"Points uniform in [−1, 1]², labels +1 above y = 2e^(−4x²) − 1 (the paper's e^(−4x²) up to a linear "
        f"transform: stretched to span the square), {N_TRAIN} training and {N_TEST} test points per trial, "
        f"C = {C_TOY:g}; second pass on D(x)K(x,z)D(z) with D = exp(−κf²) (eq. 8), same C.",
        "",
    ]
    if toy_time is not None:
        parts += [f"{toy_time['n_trials']} trials ran as {toy_time['n_tasks']} Dask tasks on "
                  f"{toy_time['workers']} worker processes of a LocalCluster in {toy_time['wall_seconds']:.1f} s "
                  f"of wall time.", ""]
    parts += [
        "| | paper | dkernel (principled reading) |", "| --- | --- | --- |",
        f"| mean relative improvement 1 − err₂/err₁ | {_pct(PAPER_IMPROVEMENT)} (10000 trials) | "
        f"{_pct(imp)}, 95 % bootstrap interval [{_pct(lo)}, {_pct(hi)}] ({e1.size} trials) |",
        f"| first-pass error | not given | {_pct(_mean(e1))} |",
        f"| second-pass error | not given | {_pct(_mean(e2))} |",
        "", f"Verdict: {verdict}.", "",
        "### Every reading tried", "",
        "The paper's text leaves four choices open; each reading is run (the principled one on every trial, "
        "the others on the first trials) and listed here with its result. Widths: "
        + "; ".join(f"**{k}**: {v}" for k, v in _WIDTH_TEXT.items()) + ". κ rules: "
        + "; ".join(f"**{k}**: {v}" for k, v in _RULE_TEXT.items()) + ". A unit square [0, 1]² with the same "
        "boundary is the [−1, 1]² problem scaled by 1/2, so it equals the width readings with gamma divided by 4 "
        "(σ = 0.5 on [0, 1]² is gamma = 0.5 on [−1, 1]², the **gamma** row).", "",
        markdown_table(_reading_rows(records), [
            ("reading (width / κ rule)", "reading"), ("trials", "trials"), ("first pass", "first"),
            ("conformal", "second"), ("improvement [95 % CI]", "improvement"), ("mean κ", "kappa"),
            ("trials better", "better"), ("trials worse", "worse")]),
        "",
        "**Which reading is principled.** The width: the paper defines its Gaussian kernel in eq. 9 as "
        "exp(−‖x−x'‖²/2σ²) and uses that σ in eqs. 10–15 and Table 1, so \"width 0.5\" is σ = 0.5 in eq. 9 "
        "(gamma = 2). κ: §4 takes |f|max \"in the first pass solution\"; the first pass knows f at its training "
        "points, and the test points are not available when the classifier is built, so the maximum over the "
        "training points is the rule an estimator can apply (ConformalSVC's default); the maximum over the "
        "square is the literal alternative and gives almost the same κ. The reading is fixed before looking at "
        "the errors, never chosen by which one comes closest to 14.5 %.",
        "",
        "**Why the second pass can be worse.** With κ = 1/|f|max, κf² reaches |f|max far from the boundary, so "
        "D falls to e^(−|f|max) there (|f|max is several units for C = 10): K̃ = DKD is nearly zero for those "
        "points, the second-pass decision function is flat and equal to its intercept far from the boundary "
        "(the \"relatively flat areas\" of Fig. 1(d)), and far points of the class the intercept does not favour "
        "are misclassified. The paper does not say how its runs avoided this.",
        "",
        "### Amari & Wu's factor (eq. 7) as the baseline", "",
        "D(x) = Σ_SV exp(−κ‖x − x_i‖²) with κ = the kernel's gamma (the paper gives no κ for eq. 7).", "",
        markdown_table(_amari_wu_rows(records), [
            ("width", "width"), ("trials", "trials"), ("first pass", "first"), ("Amari–Wu", "amari-wu"),
            ("improvement [95 % CI]", "improvement")]),
        "",
        "![Fig. 1](fig1_toy.png)", "",
        "Fig. 1 (trial 0, principled reading): (a) data and the true boundary (red dashes), (b) first-pass f, "
        "(c) the magnification ratio of eq. 15, (d) the second-pass decision function.", "",
        "## Mushroom (Table 1)", "",
        "UCI mushroom as `dkernel.datasets.load(\"mushroom\")` gives it: the 22 categorical attributes one-hot "
        "encoded (a missing stalk-root is its own category); labels poisonous = +1. Per trial 100 training and "
        "1000 test points drawn without overlap; σ as in eq. 9 (gamma = 1/(2σ²)); κ = 1/|f|max over the "
        "training points.", "",
    ]
    rows = _mushroom_rows(records)
    if rows:
        if mush_time is not None:
            parts += [f"{mush_time['n_trials']} trials in {mush_time['wall_seconds']:.1f} s.", ""]
        parts += [markdown_table(rows, [(k, k) for k in rows[0]]), "",
                  "\"agrees\": whether dkernel's second pass improves on the first where the paper's does. The "
                  "errors themselves differ from the paper's at σ = 0.6: one-hot mushrooms that differ in k "
                  "attributes are at ‖x − z‖² = 2k, so K = exp(−k/σ²) is about e^(−2.8k) there and the Gram is "
                  "nearly the identity (no α reaches C, so C = 10, 50 and 100 give the same SVM); the paper does "
                  "not say how it encoded the attributes, and a narrower encoding is not tried here.", ""]
    else:
        parts += ["Not run: the mushroom data file was not found.", ""]
    return write_markdown(outdir, parts, [figure])


if __name__ == "__main__":
    run_as_script(NAME)
