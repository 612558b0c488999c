"""The experimental pieces shared by the Kandola, Shawe-Taylor & Cristianini pipelines (Tables 1–6).

The data sets of §6 (the uneven Gaussian toy, Medline query 20 with a
bag-of-words kernel, the sinc function, auto-mpg), one random split per
task, the kernel before (``K``) and after adaptation (``G``, transductive:
Algorithm 1, or inductive: Algorithm 2, both from :mod:`dkernel.alignment`),
and the measures of one split: training and test alignment, the test errors of
``dkernel.SVC`` and of the Parzen window classifier, F1 of the SVC, and the
test error of ridge regression (scikit-learn's ``KernelRidge`` on the
precomputed matrix). Hyper-parameters (the SVC's C, the ridge λ) are chosen
by cross-validation on the training part of each split.
"""


import numpy as np

from ._kandola_checks import split_checks, table_notes
from ._kandola_data import DATASETS, data_gram
from ._kandola_methods import all_eigenvectors_alignment, blocks_of, inductive, measures, scaled, transductive
from ._kandola_paper import CLAIMED, HEADERS, PAPER, cell_agrees, format_spread, paper_g_train, spread
from ._runner import task_rng

__all__ = [
    "FRACTIONS",
    "MEASURE_KEYS",
    "QUICK_REPEATS",
    "REPEATS",
    "client_data",
    "n_repeats",
    "run_split",
    "split_tasks",
]

FRACTIONS = (0.8, 0.5, 0.2)
REPEATS, QUICK_REPEATS = 10, 2
MEASURE_KEYS = ("train_alignment", "test_alignment", "svc_error", "pw_error", "f1", "rr_error")


def n_repeats(config):
    """``--repeats``, else 10 (2 with ``--quick``)."""
    return config.repeats or (QUICK_REPEATS if config.quick else REPEATS)


def client_data(name, seed):
    """``{"K": ..., "y": ...}`` of a data set in one ``dask.delayed`` key (None when its files are not found).

    The Gram of every point is computed here once (at most 1033 × 1033); the
    synthetic sets are drawn from ``seed``, one data set per run as in the
    paper, whose 10 runs differ in their random splits.
    """
    import dask

    from dkernel.datasets import DatasetNotFoundError

    rng = np.random.default_rng(np.random.SeedSequence([seed, sorted(DATASETS).index(name)]))
    try:
        K, y = data_gram(name, rng)
    except (DatasetNotFoundError, OSError):
        return None
    key = f"pipeline-data-{name}-{dask.base.tokenize(K, y)}"
    return dask.delayed({"K": K, "y": y}, name=key, traverse=False, pure=True)


def split_tasks(pipeline, names, config):
    """One task per data set × training fraction × repeat; data sets whose files are missing are left out."""
    import sys

    tasks = []
    for name in names:
        data = client_data(name, config.seed)
        if data is None:
            print(f"{pipeline}: skipping {name}: its data files were not found (set DKERNEL_DATA).", file=sys.stderr)
            continue
        tasks += [{"dataset": name, "train_fraction": f, "repeat": r, "data": data}
                  for f in FRACTIONS for r in range(n_repeats(config))]
    for index, task in enumerate(tasks):
        task["seed_index"] = index
    return tasks


def _split(y, fraction, rng, stratify):
    from sklearn.model_selection import train_test_split

    index = np.arange(len(y))
    train, test = train_test_split(index, train_size=fraction, random_state=int(rng.integers(2**31 - 1)),
                                   stratify=y if stratify else None)
    return np.sort(train), np.sort(test)


# --------------------------------------------------------------------------- #
# The matrices K and G on one split
# --------------------------------------------------------------------------- #



# --------------------------------------------------------------------------- #
# Learners and measures
# --------------------------------------------------------------------------- #



def run_split(task, algorithms=("transductive", "inductive")):
    """One random split of one data set: the records of K and of G for each algorithm."""
    spec = DATASETS[task["dataset"]]
    K, y = task["data"]["K"], task["data"]["y"]
    rng = task_rng(task["seed"], task["seed_index"])
    train, test = _split(y, task["train_fraction"], rng, stratify=spec["task"] == "uneven")
    setting = {"dataset": task["dataset"], "kernel": spec["kernel"], "target": spec["target"],
               "train_fraction": task["train_fraction"], "n_train": len(train), "n_test": len(test),
               "positive_fraction": float(np.mean(y == 1)) if spec["task"] == "uneven" else None}  # fmt: skip
    K_blocks = blocks_of(K, train, test)
    K_measures = measures(K_blocks, y, train, test, spec)
    records, blocks = [], []
    for algorithm in algorithms:
        G_blocks, rank = (transductive if algorithm == "transductive" else inductive)(K, y, train, test,
                                                                                         spec["target"])
        G_blocks, scale = scaled(G_blocks, K_blocks[0])
        records.append({**setting, "algorithm": algorithm, "matrix": "K", **K_measures, "rank": None,
                        "g_scale": 1.0})
        records.append({**setting, "algorithm": algorithm, "matrix": "G", **measures(G_blocks, y, train, test, spec),
                        "rank": rank, "g_scale": scale,
                        "alignment_all_eigenvectors": all_eigenvectors_alignment(K, y, train, spec["target"],
                                                                                  algorithm)})
        blocks += [K_blocks, G_blocks]
    checks = {}  # K's checks once per split, though each algorithm records K
    for rec, b in zip(records, blocks):
        key = (rec["matrix"] if rec["matrix"] == "K" else rec["algorithm"])
        checks.setdefault(key, split_checks(rec, b, K, y, train, test))
    return [{**rec, **checks[rec["matrix"] if rec["matrix"] == "K" else rec["algorithm"]],
             "repeat": task["repeat"]} for rec in records]



# --------------------------------------------------------------------------- #
# The paper's tables beside the measured ones
# --------------------------------------------------------------------------- #


def side_by_side(records, dataset, algorithm):
    """Rows ``(matrix, %)`` with the paper's and dkernel's ``mean (sd)`` per measure and whether they agree."""
    title, paper = PAPER[(dataset, algorithm)]
    measures = list(next(iter(paper.values())))
    rows, verdicts = [], []
    for (matrix, pct), cells in paper.items():
        row = {"": f"{matrix}{pct}"}
        for key in measures:
            got = spread(records, key, dataset=dataset, algorithm=algorithm, matrix=matrix,
                         train_fraction=pct / 100)
            digits = 2 if dataset == "auto-mpg" and key == "rr_error" else 3
            ok = got is not None and cell_agrees(cells[key], got)
            verdicts.append(ok)
            row[f"{HEADERS[key]} paper"] = format_spread(cells[key], digits)
            row[f"{HEADERS[key]} dkernel"] = "–" if got is None else format_spread(got, digits) + ("" if ok else " ✗")
        rows.append(row)
    return title, rows, verdicts


def direction_checks(records, dataset, algorithm):
    """Per training fraction and measure: does G move it the way the paper states, in dkernel's means?"""
    checks = []
    title, paper = PAPER[(dataset, algorithm)]
    for pct in (80, 50, 20):
        for key in next(iter(paper.values())):
            g = spread(records, key, dataset=dataset, algorithm=algorithm, matrix="G", train_fraction=pct / 100)
            k = spread(records, key, dataset=dataset, algorithm=algorithm, matrix="K", train_fraction=pct / 100)
            if g is None or k is None:
                continue
            paper_moves = paper[("G", pct)][key][0] - paper[("K", pct)][key][0]
            ours = g[0] - k[0]
            checks.append({"table": title, "train %": pct, "measure": HEADERS[key],
                           "paper G − K": f"{paper_moves:+.3f}", "dkernel G − K": f"{ours:+.3f}",
                           "claimed": CLAIMED[key],
                           "as claimed": (ours > 0) == (CLAIMED[key] == "+") and ours != 0,
                           "paper as claimed": (paper_moves > 0) == (CLAIMED[key] == "+") and paper_moves != 0})
    return checks


# --------------------------------------------------------------------------- #
# Report
# --------------------------------------------------------------------------- #


def figure(records, tables, path, title):
    """One row per table, one panel per measure: K and G against the training fraction, paper dashed."""
    from ._report import save_figure, subplots

    rows = [(d, a) for d, a in tables if any(r["dataset"] == d for r in records)]
    n_cols = max(len(next(iter(PAPER[t][1].values()))) for t in rows)
    fig, axes = subplots(len(rows), n_cols, figsize=(3.2 * n_cols, 2.7 * len(rows)), squeeze=False)
    for ax_row, (dataset, algorithm) in zip(axes, rows):
        label, paper = PAPER[(dataset, algorithm)]
        measures = list(next(iter(paper.values())))
        for ax, key in zip(ax_row, measures):
            for matrix, color in (("K", "tab:blue"), ("G", "tab:red")):
                pcts = [80, 50, 20]
                ours = [spread(records, key, dataset=dataset, algorithm=algorithm, matrix=matrix,
                               train_fraction=p / 100) for p in pcts]
                ax.errorbar(pcts, [o[0] for o in ours], yerr=[o[1] for o in ours], color=color, marker="o",
                            capsize=2, label=f"{matrix} dkernel")
                ax.plot(pcts, [paper[(matrix, p)][key][0] for p in pcts], color=color, linestyle="--", marker="x",
                        alpha=0.7, label=f"{matrix} paper")
            ax.set_title(f"{label} ({dataset}, {algorithm[:5]}.): {HEADERS[key]}", fontsize=8)
            ax.set_xlabel("training %", fontsize=8)
            ax.tick_params(labelsize=7)
        for ax in ax_row[len(measures):]:
            ax.set_visible(False)
    axes[0, 0].legend(fontsize=6)
    fig.suptitle(title)
    return save_figure(fig, path)


def measured_only(records, dataset, algorithm, measures):
    """Rows ``(matrix, %)`` of dkernel's ``mean (sd)`` for a setting the paper has no table of."""
    rows = []
    for pct in (80, 50, 20):
        for matrix in ("K", "G"):
            row = {"": f"{matrix}{pct}"}
            for key in measures:
                got = spread(records, key, dataset=dataset, algorithm=algorithm, matrix=matrix,
                             train_fraction=pct / 100)
                row[HEADERS[key]] = "–" if got is None else format_spread(got, 2 if key == "rr_error" and dataset == "auto-mpg"
                                                                 else 3)
            rows.append(row)
    return rows


def write_report(result, outdir, *, name, title, tables, setup, why, extra=()):
    """``report.md`` and ``tables.png``: the paper's tables beside dkernel's, cell by cell, and the claims."""
    from ._report import count_repeats, listing, markdown_table, plural, run_line, write_markdown

    records = result.records
    present = [(d, a) for d, a in tables if any(r["dataset"] == d for r in records)]
    missing = [PAPER[t][0] for t in tables if t not in present]
    fig = figure(records, present, outdir / "tables.png", title)
    parts = [f"# {name}: {title}", "", setup, "", run_line(result) + f" {plural(count_repeats(records), 'repeat')} "
             f"per training fraction; {len(records)} records.", ""]
    if missing:
        parts += [f"Not run (data files not found): {listing(missing)}.", ""]
    parts += ["![the tables as curves: dkernel solid with ± sd, the paper dashed](tables.png)", ""]
    agreeing = total = 0
    claim_rows = []
    for dataset, algorithm in present:
        label, rows, verdicts = side_by_side(records, dataset, algorithm)
        agreeing += sum(verdicts)
        total += len(verdicts)
        checks = direction_checks(records, dataset, algorithm)
        claim_rows += checks
        full = {p: spread(records, "alignment_all_eigenvectors", dataset=dataset, algorithm=algorithm, matrix="G",
                          train_fraction=p / 100) for p in (80, 50, 20)}
        parts += [f"## {label}: {dataset}, {algorithm} ({DATASETS[dataset]['kernel']} kernel)", "",
                  "Training alignment of G when no eigenvalue is dropped (every eigenvector, an arbitrary basis of "
                  "the null space included, as in Algorithm 1): " + ", ".join(
                      f"{format_spread(full[p][:2], 3)} at {p} % (paper {paper_g_train(dataset, algorithm, p)})"
                      for p in (80, 50, 20) if full[p]) + ".", "",
                  f"mean (standard deviation over {plural(count_repeats(records), 'run')}); ✗ marks a cell whose "
                  f"mean differs from the paper's by more than the sum of the two standard deviations. "
                  f"{sum(verdicts)}/{len(verdicts)} cells agree.", "",
                  markdown_table(rows, [(k, k) for k in rows[0]]), "",
                  f"G against K as the paper states (rises for alignment and F1, falls for errors): dkernel "
                  f"{sum(c['as claimed'] for c in checks)}/{len(checks)}, the paper's own table "
                  f"{sum(c['paper as claimed'] for c in checks)}/{len(checks)}.", "",
                  *table_notes(records, dataset, algorithm)]
    parts[4:4] = [f"**Overall: {agreeing}/{total} cells agree with the paper** (within the sum of the standard "
                  f"deviations); G moves the measures as the paper states in "
                  f"{sum(c['as claimed'] for c in claim_rows)}/{len(claim_rows)} (table, fraction, measure) cases in "
                  f"dkernel's means, in {sum(c['paper as claimed'] for c in claim_rows)}/{len(claim_rows)} in the "
                  f"paper's own tables.", ""]
    parts += list(extra)
    parts += ["## Where G moves a measure against the paper's statement", "",
              markdown_table([c for c in claim_rows if not c["as claimed"]],
                             [(k, k) for k in ("table", "train %", "measure", "paper G − K", "dkernel G − K")])
              if any(not c["as claimed"] for c in claim_rows) else "Nowhere.", "",
              "## Why they differ", "", why, "",
              "Files: `results.csv`, `results.json` (records and summary), `tables.png`.", ""]
    return write_markdown(outdir, parts, [fig])
