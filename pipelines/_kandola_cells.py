"""A cell of Kandola et al.'s tables from the records: its value on each run under one configuration.

A :class:`Config` names what the records leave open: the data setting, the
form of Algorithm 1's weights (``weighting``), the eigenvalue cut-off, how
``C`` or λ is chosen (``"paper"``: the lowest mean test error over the runs,
§6; ``"cv"``: cross-validation on each run's training points), the reading
of the paper's error column and the ridge's intercept. :func:`cell_values`
returns the runs' values of one cell with the fits behind them and how many
did not converge.

The paper's "error" admits three readings (:data:`ERRORS`): the share of
test points misclassified, the share of the positive class missed
(``1 − recall``), or the share of irrelevant points among those called
positive (``1 − precision``); the Medline columns cannot be the first
(:func:`~pipelines._kandola_paper.largest_overall_error`).
"""

import dataclasses
import math

import numpy as np

from ._kandola_methods import CUTOFFS, WEIGHTINGS

__all__ = ["ERRORS", "ERROR_MEASURES", "Cell", "Config", "cell_values", "error_of", "f1_of", "matching"]

#: The readings of the paper's error columns.
ERRORS = ("overall", "1 − recall", "1 − precision")

#: The measures whose value depends on the reading of the error (F1 through the C chosen by the error).
ERROR_MEASURES = ("svc_error", "pw_error", "f1")


@dataclasses.dataclass(frozen=True)
class Config:
    """What the records leave open (module docstring)."""

    data: str
    weighting: str | None = None
    cutoff: dict = dataclasses.field(default_factory=lambda: {a: c[0] for a, c in CUTOFFS.items()})
    selection: str = "paper"
    error: str = "overall"
    ridge: str = "centered"

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


@dataclasses.dataclass(frozen=True)
class Cell:
    """The runs' values of one cell (``{repeat: value}``), the fits behind them, how many did not converge, and
    the ``C`` or λ chosen (a text, empty where none)."""

    values: dict
    fits: int
    unconverged: int
    choice: str = ""

    @property
    def spread(self):
        """``(mean, sd, n)``, sd with ddof=1 as the paper's parentheses (0 for one run)."""
        v = np.array(list(self.values.values()), dtype=np.float64)
        return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0, len(v)


def error_of(counts, reading):
    """The error of the confusion counts ``{tp, fp, fn, tn}`` (positive class +1) under ``reading``.

    ``1 − precision`` is 1 when nothing is called positive (precision 0, as F1's convention).
    """
    tp, fp, fn, tn = (counts[k] for k in ("tp", "fp", "fn", "tn"))
    if reading == "overall":
        return (fp + fn) / (tp + fp + fn + tn)
    if reading == "1 − recall":
        return fn / (tp + fn) if tp + fn else 0.0
    if reading == "1 − precision":
        return fp / (tp + fp) if tp + fp else 1.0
    raise ValueError(f"error reading must be one of {ERRORS}; got {reading!r}")


def f1_of(counts):
    """F1 of the positive class: 2tp / (2tp + fp + fn), 0 when there is no true positive."""
    tp = counts["tp"]
    return 2 * tp / (2 * tp + counts["fp"] + counts["fn"]) if tp else 0.0


def matching(records, *, dataset, algorithm, matrix, pct, config):
    """The records of one cell: one per run."""
    fraction = pct / 100
    out = []
    for rec in records:
        if (rec["dataset"], rec.get("data"), rec.get("algorithm"), rec.get("matrix")) != (dataset, config.data,
                                                                                         algorithm, matrix):
            continue
        if not math.isclose(rec["train_fraction"], fraction):
            continue
        if matrix == "G" and (rec["cutoff"] != config.cutoff[algorithm]
                              or (algorithm == "transductive" and rec["weighting"] != config.weighting)):
            continue
        out.append(rec)
    return out


def _lowest(means):
    """The first index of the lowest mean (ties, to round-off, go to the smaller C or λ)."""
    means = np.asarray(means, dtype=np.float64)
    return int(np.flatnonzero(means <= means.min() + 1e-12 * max(1.0, abs(means.min())))[0])


def _at(svc, k):
    return {key: svc[key][k] for key in ("tp", "fp", "fn", "tn")}


def _svc_cell(recs, measure, config):
    if config.selection == "cv":
        if any("svc_cv" not in r for r in recs):
            return None
        index = {r["repeat"]: r["svc"]["C"].index(r["svc_cv"]["C"]) for r in recs}
        value = (lambda r, k: error_of(_at(r["svc"], k), config.error)) if measure == "svc_error" else \
            (lambda r, k: f1_of(_at(r["svc"], k)))
        chosen = sorted({r["svc_cv"]["C"] for r in recs})
        return Cell({r["repeat"]: value(r, index[r["repeat"]]) for r in recs},
                    fits=sum(r["svc_cv"]["fits"] + 1 for r in recs),
                    unconverged=sum(r["svc_cv"]["unconverged"] + (r["svc"]["status"][index[r["repeat"]]] != 0)
                                    for r in recs),
                    choice="C " + ", ".join(f"{c:g}" for c in chosen) + " (cross-validated)")
    grid = recs[0]["svc"]["C"]
    means = [np.mean([error_of(_at(r["svc"], k), config.error) for r in recs]) for k in range(len(grid))]
    k = _lowest(means)
    value = (lambda r: error_of(_at(r["svc"], k), config.error)) if measure == "svc_error" else \
        (lambda r: f1_of(_at(r["svc"], k)))
    return Cell({r["repeat"]: value(r) for r in recs}, fits=len(recs) * len(grid),
                unconverged=sum(s != 0 for r in recs for s in r["svc"]["status"]), choice=f"C {grid[k]:g}")


def _ridge_cell(recs, config):
    reading = config.ridge
    grid = recs[0]["ridge"]["lambda"]
    if config.selection == "cv":
        if reading != "centered" or any("ridge_cv" not in r for r in recs):
            return None
        index = {r["repeat"]: grid.index(r["ridge_cv"]["lambda"]) for r in recs}
        chosen = sorted({r["ridge_cv"]["lambda"] for r in recs})
        return Cell({r["repeat"]: r["ridge"]["mse_centered"][index[r["repeat"]]] for r in recs},
                    fits=sum(r["ridge_cv"]["fits"] + 1 for r in recs),
                    unconverged=sum(r["ridge_cv"]["unconverged"]
                                    + (not r["ridge"]["converged_centered"][index[r["repeat"]]]) for r in recs),
                    choice="λ " + ", ".join(f"{c:g}" for c in chosen) + " × mean diagonal (cross-validated)")
    means = [np.mean([r["ridge"][f"mse_{reading}"][k] for r in recs]) for k in range(len(grid))]
    k = _lowest(means)
    return Cell({r["repeat"]: r["ridge"][f"mse_{reading}"][k] for r in recs}, fits=len(recs) * len(grid),
                unconverged=sum(not c for r in recs for c in r["ridge"][f"converged_{reading}"]),
                choice=f"λ {grid[k]:g} × mean diagonal")


def cell_values(records, measure, *, dataset, algorithm, matrix, pct, config):
    """The :class:`Cell` of ``measure`` (a column of the paper's tables), or None where the records lack it."""
    recs = matching(records, dataset=dataset, algorithm=algorithm, matrix=matrix, pct=pct, config=config)
    if not recs:
        return None
    if measure in ("train_alignment", "test_alignment"):
        return Cell({r["repeat"]: r[measure] for r in recs}, fits=0, unconverged=0)
    if measure == "pw_error":
        return Cell({r["repeat"]: error_of(r["pw"], config.error) for r in recs}, fits=0, unconverged=0)
    if measure in ("svc_error", "f1"):
        return _svc_cell(recs, measure, config)
    if measure == "rr_error":
        return _ridge_cell(recs, config)
    raise ValueError(f"unknown measure {measure!r}")


def readings(algorithm, matrix, measure):
    """The ``(weighting, error)`` readings a cell admits: both forms of Algorithm 1's weights for its G, the three
    readings of the error for the error and F1 columns."""
    weightings = WEIGHTINGS if (algorithm, matrix) == ("transductive", "G") else (None,)
    errors = ERRORS if measure in ERROR_MEASURES else (None,)
    return [(w, e) for w in weightings for e in errors]
