"""Why the Kandola tables differ from the paper: measured checks under the paper's conventions, and their text.

Each split also records a few measures that test an explanation of a
disagreement, beside (never instead of) dkernel's own numbers:

``error_svc_C<c>``
    The SVC's test error at each fixed ``C`` of the grid. The paper chose
    ``C`` by the lowest mean test error of its ten runs (§6); the report
    applies that choice to these records.
``error_all_positive``
    The test error of calling every point positive (every abstract relevant).
``error_mean_predictor``
    Regression: the test mean squared error of predicting the training mean.
``alignment_train_wide``, ``alignment_test_wide``, ``error_rr_wide``
    sinc: K and transductive G under a wide Gaussian (σ = :data:`SINC_WIDE_SIGMA`,
    nearly constant over the sample), the same split and the same ridge.

The notes under each table of ``report.md`` are generated here from the
records and the configuration.
"""

import numpy as np

from ._kandola_data import DATASETS, SINC_NOISE, SINC_SIGMA
from ._kandola_methods import C_GRID, blocks_of, ridge, scaled, transductive
from ._kandola_paper import HEADERS, PAPER, cell_agrees, format_spread, spread

__all__ = ["SINC_WIDE_SIGMA", "split_checks", "table_notes"]

#: A Gaussian width at which K is nearly constant over x in [-10, 10] (the paper gives no σ).
SINC_WIDE_SIGMA = 20.0


def _svc_at_each_C(blocks, y_train, y_test):
    from dkernel import SVC


    M_train, M_test_train, _ = blocks
    return {f"error_svc_C{C:g}": float(np.mean(SVC(kernel="precomputed", C=C, client=False)
                                               .fit(M_train, y_train).predict(M_test_train) != y_test))
            for C in C_GRID}


def _sinc_wide(K, y, train, test, algorithm, matrix):
    """K and transductive G for σ = SINC_WIDE_SIGMA: the σ = 1 Gram raised to 1/σ² (exp(-d²/2σ²) exactly)."""
    from dkernel.alignment import target_alignment


    if algorithm != "transductive":
        return {}
    K_wide = K ** ((SINC_SIGMA / SINC_WIDE_SIGMA) ** 2)
    blocks = blocks_of(K_wide, train, test)
    if matrix == "G":
        blocks = scaled(transductive(K_wide, y, train, test, "regression")[0], blocks[0])[0]
    predicted, _ = ridge(blocks[0], blocks[1], y[train])
    return {"alignment_train_wide": target_alignment(blocks[0], y[train], "regression", client=False),
            "alignment_test_wide": target_alignment(blocks[2], y[test], "regression", client=False),
            "error_rr_wide": float(np.mean((predicted - y[test]) ** 2))}


def split_checks(record, blocks, K, y, train, test):
    """The check measures of one record (``blocks``: its matrix's train, test-train and test blocks)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        if record["target"] == "uneven":
            return {"error_all_positive": float(np.mean(y[test] != 1)),
                    **_svc_at_each_C(blocks, y[train], y[test])}
        checks = {"error_mean_predictor": float(np.mean((y[test] - np.mean(y[train])) ** 2))}
        if record["dataset"] == "sinc":
            checks.update(_sinc_wide(K, y, train, test, record["algorithm"], record["matrix"]))
        return checks


# --------------------------------------------------------------------------- #
# Text
# --------------------------------------------------------------------------- #


def _disagreements(records, dataset, algorithm):
    """``{header: (differing, total)}`` per measure of one table, by the paper's yardstick."""

    counts = {}
    for (matrix, pct), cells in PAPER[(dataset, algorithm)][1].items():
        for key, paper in cells.items():
            got = spread(records, key, dataset=dataset, algorithm=algorithm, matrix=matrix, train_fraction=pct / 100)
            differ, total = counts.get(HEADERS[key], (0, 0))
            counts[HEADERS[key]] = (differ + (got is None or not cell_agrees(paper, got)), total + 1)
    return counts


def disagreement_line(records, dataset, algorithm):
    """"Why the N of M cells differ (by measure: ...)"."""
    from ._report import listing

    counts = _disagreements(records, dataset, algorithm)
    differ = sum(d for d, _ in counts.values())
    total = sum(t for _, t in counts.values())
    return (f"**Why {differ} of {total} cells differ** (by measure: "
            f"{listing(f'{header} {d}/{t}' for header, (d, t) in counts.items())}).")


def _mean(records, key, **match):

    got = spread(records, key, **match)
    return None if got is None else got[0]


def _range(values, digits=3):
    values = [v for v in values if v is not None]
    return f"{min(values):.{digits}f}–{max(values):.{digits}f}" if values else "–"


def _paper_range(dataset, algorithm, key, matrix):

    return [cells[key][0] for (m, _), cells in PAPER[(dataset, algorithm)][1].items() if m == matrix]


def _c_by_test_error(records, dataset, algorithm, agree):
    """Rows: the SVC error when C is chosen by the lowest mean test error over the runs (the paper's §6 choice)."""

    rows = []
    for (matrix, pct), cells in PAPER[(dataset, algorithm)][1].items():
        match = dict(dataset=dataset, algorithm=algorithm, matrix=matrix, train_fraction=pct / 100)
        by_C = {C: spread(records, f"error_svc_C{C:g}", **match) for C in C_GRID}
        by_C = {C: got for C, got in by_C.items() if got is not None}
        cv = spread(records, "svc_error", **match)
        if not by_C or cv is None:
            continue
        best = min(by_C, key=lambda C: by_C[C][0])
        agree.append(cell_agrees(cells["svc_error"], by_C[best]))
        rows.append({"": f"{matrix}{pct}", "SVC Error paper": format_spread(cells["svc_error"], 3),
                     "dkernel, C by cross-validation": format_spread(cv, 3),
                     "dkernel, C by test error (paper's choice)": format_spread(by_C[best], 3), "C": f"{best:g}"})
    return rows


def _uneven_notes(records, dataset, algorithm):
    from ._report import listing, markdown_table

    match = dict(dataset=dataset, algorithm=algorithm)
    all_positive = _mean(records, "error_all_positive", **match, matrix="K")
    pw_k = [_mean(records, "pw_error", **match, matrix="K", train_fraction=p / 100) for p in (80, 50, 20)]
    svc_k = [_mean(records, "svc_error", **match, matrix="K", train_fraction=p / 100) for p in (80, 50, 20)]
    lines = []
    if dataset == "toy":
        ranks = sorted({r["rank"] for r in records if r["dataset"] == dataset and r["algorithm"] == algorithm
                        and r["matrix"] == "G"})
        lines.append(f"The toy's labels are drawn independently of its inputs: no kernel predicts them, so its error "
                     f"cells are chance, around the error of calling every point +1 ({all_positive:.3f}, measured on "
                     f"the test points), and differ from the paper's by noise and by how C is chosen. The "
                     "alignment cells differ through the null space: a linear kernel on "
                     f"{listing(ranks)} inputs has that rank; Algorithm 1 keeps every eigenvector (an arbitrary "
                     "basis of the null space, aligned with the labels by chance), dkernel keeps the "
                     f"{listing(ranks)} that carry the spectrum (the line above the table gives G's training "
                     "alignment with all of them).")
    else:
        paper_pw = _paper_range(dataset, algorithm, "pw_error", "K")
        paper_svc = _paper_range(dataset, algorithm, "svc_error", "K")
        n = sorted({r["n_train"] + r["n_test"] for r in records if r["dataset"] == dataset})
        same = all(abs(p - all_positive) <= 0.01 for p in paper_pw)
        lines.append(f"Medline: dkernel's {listing(n)} abstracts and query-20 labels, its log(1 + tf)·log(m/df) weights of "
                     "PyStemmer's Porter stems and its stop list are not necessarily the paper's (which gives "
                     "none of them), so its K is a different Gram and every cell inherits that. Measured: calling "
                     f"every test abstract relevant errs on {all_positive:.3f}; the paper's Parzen errors on K "
                     f"({_range(paper_pw)}) {'are within 0.01 of' if same else 'differ by more than 0.01 from'} that "
                     f"rate{', i.e. its Parzen window called nearly every abstract relevant' if same else ''}; the "
                     "paper does not state its Parzen threshold. dkernel's Parzen window (sign of the "
                     f"balanced sum of eq. 9, no offset) errs on {_range(pw_k)} with K, and its SVC on "
                     f"{_range(svc_k)}, {'below' if max(svc_k) < 1 - all_positive else 'not below'} the rate of "
                     f"calling none relevant ({1 - all_positive:.3f}); the paper's SVC errors on K "
                     f"({_range(paper_svc)}) are {min(paper_svc) / (1 - all_positive):.1f} to "
                     f"{max(paper_svc) / (1 - all_positive):.1f} times that rate: its error does not count what "
                     "dkernel's counts, or its labels differ.")
    agree = []
    rows = _c_by_test_error(records, dataset, algorithm, agree)
    cv_differ, cv_total = _disagreements(records, dataset, algorithm)[HEADERS["svc_error"]]
    if rows:
        lines += ["", "Measured check, C chosen as the paper chose it (the lowest mean test error over the runs, "
                  f"from the same grid; dkernel's table keeps cross-validation): {sum(agree)}/{len(agree)} SVC "
                  f"error cells agree with the paper's, against {cv_total - cv_differ}/{cv_total} with "
                  "cross-validation.", "",
                  markdown_table(rows, [(k, k) for k in rows[0]])]
    return lines


def _sinc_wide_rows(records, agree):
    """The wide Gaussian's rows beside the paper's; ``agree`` gets each cell's verdict."""

    rows = []
    for (matrix, pct), cells in PAPER[("sinc", "transductive")][1].items():
        match = dict(dataset="sinc", algorithm="transductive", matrix=matrix, train_fraction=pct / 100)
        got = {key: spread(records, key, **match) for key in ("alignment_train_wide", "alignment_test_wide",
                                                              "error_rr_wide")}
        if any(v is None for v in got.values()):
            continue
        agree.extend(cell_agrees(cells[k], got[w]) for k, w in (("train_alignment", "alignment_train_wide"),
                     ("test_alignment", "alignment_test_wide"), ("rr_error", "error_rr_wide")))
        rows.append({"": f"{matrix}{pct}", "Train Align paper": format_spread(cells["train_alignment"], 3),
                     f"Train Align σ = {SINC_WIDE_SIGMA:g}": format_spread(got["alignment_train_wide"], 3),
                     "Test Align paper": format_spread(cells["test_alignment"], 3),
                     f"Test Align σ = {SINC_WIDE_SIGMA:g}": format_spread(got["alignment_test_wide"], 3),
                     "RR Error paper": format_spread(cells["rr_error"], 3),
                     f"RR Error σ = {SINC_WIDE_SIGMA:g}": format_spread(got["error_rr_wide"], 3)})
    return rows


def _regression_notes(records, dataset, algorithm):
    from ._report import markdown_table

    match = dict(dataset=dataset, algorithm=algorithm, matrix="K")
    mean_error = _mean(records, "error_mean_predictor", **match)
    paper_rr = _paper_range(dataset, algorithm, "rr_error", "K")
    ours = [_mean(records, "rr_error", **match, train_fraction=p / 100) for p in (80, 50, 20)]
    if dataset == "auto-mpg":
        n = sorted({r["n_train"] + r["n_test"] for r in records if r["dataset"] == "auto-mpg"})
        return [f"auto-mpg: dkernel keeps {n[0] if n else '–'} cars (the paper 353), standardizes the six inputs "
                "and fits the ridge to y − ȳ with ȳ added back; the paper says neither how it scaled nor how it "
                "handled the mean. A linear kernel on six inputs has rank six, so G reweights six directions: its "
                f"ridge is a reweighted linear regression. Predicting the training mean errs on {mean_error:.2f}, "
                f"dkernel's ridge on K on {_range(ours, 2)}, the paper's on {_range(paper_rr, 2)}."]
    lines = [f"sinc: the paper gives neither its sample, its noise level nor its Gaussian width; dkernel draws "
             f"y = sin(x)/x + N(0, {SINC_NOISE:g}²) and uses σ = {SINC_SIGMA:g}, which resolves the oscillations, "
             "so K is already well aligned with the centered target. The paper's K training alignments "
             f"({_range(_paper_range(dataset, algorithm, 'train_alignment', 'K'))}) are those of a kernel nearly constant over the sample (K ≈ 11ᵀ is orthogonal to y − ȳ), and its K "
             f"ridge errors ({_range(paper_rr)}) are {'above' if min(paper_rr) > mean_error else 'not above'} "
             f"the error of predicting the training mean here ({mean_error:.3f}; dkernel's ridge on K: "
             f"{_range(ours)}): {'its noise is larger than ' + format(SINC_NOISE, 'g') + ' or its kernel fits nothing' if min(paper_rr) > mean_error else 'the paper fits part of the function'}."]
    agree = []
    rows = _sinc_wide_rows(records, agree)
    if rows:
        lines += ["", f"Measured check, a wide Gaussian (σ = {SINC_WIDE_SIGMA:g}, the same data and splits; "
                  f"dkernel's table keeps σ = {SINC_SIGMA:g}): {sum(agree)}/{len(agree)} of these cells agree with "
                  "the paper's.", "", markdown_table(rows, [(k, k) for k in rows[0]])]
    return lines


def table_notes(records, dataset, algorithm):
    """The lines under one table of report.md: how many cells differ and why, with the measured checks."""

    notes = _uneven_notes if DATASETS[dataset]["task"] == "uneven" else _regression_notes
    return [disagreement_line(records, dataset, algorithm), "", *notes(records, dataset, algorithm), ""]
