"""The verdicts on Kandola et al.'s tables and statements, and how they move under the alternatives.

Three kinds of claim, each judged under every reading it admits (the two
forms of Algorithm 1's weights; the three readings of the error column):

``cell``
    a number of the paper's tables, ``mean (sd)`` over its 10 runs, against
    the measured mean: the difference and the standard error of the
    difference of the two means, ``sqrt(sd_paper²/10 + sd²/n)``; reproduced
    within :data:`~pipelines._fidelity.Z` standard errors.
``direction``
    §6's statements that G raises the alignments and F1 and lowers the
    errors against K, per table and training fraction: the mean of the
    paired differences over the runs (same split) and its standard error;
    one-sided: it holds when it goes the paper's way beyond the noise (more
    than :data:`~pipelines._fidelity.Z` standard errors), is against the
    paper when it goes the other way beyond the noise, and is neither within
    the noise or without a standard error (:func:`pipelines._fidelity.one_sided`).
``svc below pw``
    "in all cases the performance of the SVC algorithm exceeds that of the
    PW method" (Tables 1 and 2), per row, paired and one-sided as above.

A claim is "reproduced" when it holds under every reading, "reproduced
under reading X" when under some, "not reproduced" only when every reading
is against it beyond the noise with every fit converged, "inconclusive"
otherwise; any unconverged fit behind a reading makes that reading
inconclusive.
"""

import dataclasses
import math

import numpy as np

from ._fidelity import Z, Sensitivity, Setting, Verdict, one_sided
from ._kandola_cells import Config, cell_values, readings
from ._kandola_data import DATA_SETTINGS
from ._kandola_paper import CLAIMED, HEADERS, PAPER

__all__ = ["ALGORITHM1_SETTINGS", "EARLIER_CUT", "LEGEND", "PAPER_RUNS", "Alternative", "Claim", "Outcome", "base_config", "claims", "judged", "outcomes",
           "grouped", "reading_label", "sensitivity_rows", "verdict_of"]

#: The runs behind each of the paper's means (§6).
PAPER_RUNS = 10

#: The short names of the readings in the verdicts' evidence and the report (:data:`LEGEND`).
_LABELS = {"eq5": "eq5", "algorithm1": "alg1", "overall": "all", "1 − recall": "1−R", "1 − precision": "1−P"}

LEGEND = {"weighting": "eq5 / alg1 = G with the weights of eq. (5) / of Algorithm 1's line (⟨v_I, y_I⟩²/‖v_I‖⁴)",
          "error": "all / 1−R / 1−P = the error as the share of all test points misclassified / of the positive class "
                   "missed (1 − recall) / of the points called positive that are not (1 − precision)"}


@dataclasses.dataclass(frozen=True)
class Claim:
    """One claim of the paper: its ``kind``, table ``(dataset, algorithm)``, matrix and row, measure and text."""

    kind: str
    table: tuple
    matrix: str | None
    pct: int
    measure: str
    text: str
    short: str = ""

    @property
    def dataset(self):
        return self.table[0]


@dataclasses.dataclass(frozen=True)
class Outcome:
    """A claim under one reading: the difference, its standard error, the fits not converged, and the verdict's
    parts (``ok``: the claim holds; ``beyond``: against it beyond the noise)."""

    label: str
    difference: float
    se: float
    unconverged: int
    ok: bool
    beyond: bool

    @property
    def text(self):
        """The difference and its noise (and the fits not converged), without the reading's name."""
        noise = f" ± {self.se:.2g} ({abs(self.difference) / self.se:.1f} SE)" if self.se > 0 else " (no noise estimate)"
        tail = f", {self.unconverged} fit(s) not converged" if self.unconverged else ""
        return f"{self.difference:+.3g}{noise}{tail}"


@dataclasses.dataclass(frozen=True)
class Alternative:
    """A plausible alternative of a setting: how it changes a claim's configuration (None: not applicable)."""

    setting: str
    alternative: str
    change: object

    def config(self, claim, config):
        return self.change(claim, config)


#: The settings of Algorithm 1 that both pipelines run as the paper states them.
ALGORITHM1_SETTINGS = (
    Setting("Algorithm 1 eigenvectors", "every eigenvector of the Gram of all points", "stated",
            "Algorithm 1: for n = 1:length of Kernel. Those of zero eigenvalues (the toy's linear kernel has rank "
            "10, auto-mpg's 6; the sinc Gram's spectrum falls to round-off) are the eigensolver's basis of the null "
            "space, so G there depends on LAPACK's round-off; alternative: the earlier cut at 10⁻¹⁰ λ_max"),
    Setting("Algorithm 1 weights", "both: eq. (5) ⟨v, y⟩² and Algorithm 1's ⟨v_I, y_I⟩²/‖v_I‖⁴", "stated",
            "the two forms differ when test rows are unlabelled; each cell is judged under both"),
)

#: The earlier cut of Algorithm 1's eigenvectors, as an alternative for every claim on its G.
EARLIER_CUT = Alternative("Algorithm 1 eigenvectors", "eigenvalues below 10⁻¹⁰ λ_max dropped (the earlier cut)",
                          lambda claim, config: config.replace(cutoff={**config.cutoff, "transductive": "1e-10"})
                          if claim.table[1] == "transductive" and claim.matrix != "K" else None)


def base_config(dataset):
    """The configuration run as the paper's first: the first data setting, Algorithm 1 with every eigenvector,
    Algorithm 2 at the numerical rank, C and λ by the lowest mean test error (§6), the centered ridge."""
    return Config(data=DATA_SETTINGS[dataset][0])


def claims(tables):
    """The claims of the paper's ``tables`` (``(dataset, algorithm)`` pairs)."""
    out = []
    for table in tables:
        title, paper = PAPER[table]
        where = f"{title} ({table[0]}, {table[1]})"
        for (matrix, pct), cells in paper.items():
            for measure, (mean, sd) in cells.items():
                out.append(Claim("cell", table, matrix, pct, measure,
                                 f"{where} {matrix}{pct} {HEADERS[measure]} = {mean:g} ({sd:g})",
                                 f"{matrix}{pct} {HEADERS[measure]}"))
        measures = list(next(iter(paper.values())))
        for pct in (80, 50, 20):
            for measure in measures:
                verb = "raises" if CLAIMED[measure] == "+" else "lowers"
                short = f"{pct} %: G {verb} {HEADERS[measure]} against K"
                out.append(Claim("direction", table, None, pct, measure, f"{where} {short}", short))
        if title in ("Table 1", "Table 2"):
            out += [Claim("svc below pw", table, matrix, pct, "svc_error",
                          f"{where} {matrix}{pct}: the SVC errs less than the Parzen window",
                          f"{matrix}{pct}: the SVC errs less than the Parzen window")
                    for matrix, pct in paper]
    return out


def reading_label(weighting, error):
    """The short name of a reading: ``"eq5/1−P"``, ``"alg1"``, ``"all"``, ``""`` (none)."""
    return "/".join(_LABELS.get(part, part) for part in (weighting, error) if part)


def grouped(pairs):
    """``"a, b: text; c: other"`` from ``[(label, text)]``: the readings that give the same text named together."""
    groups = {}
    for label, text in pairs:
        groups.setdefault(text, []).append(label)
    return "; ".join((f"{', '.join(labels)}: " if any(labels) else "") + text for text, labels in groups.items())


def _cell(records, claim, measure, matrix, config):
    return cell_values(records, measure, dataset=claim.dataset, algorithm=claim.table[1], matrix=matrix,
                       pct=claim.pct, config=config)


def _paired(a, b, sign):
    """Mean and standard error of ``sign·(a − b)`` over the runs both have."""
    runs = sorted(set(a.values) & set(b.values))
    d = sign * (np.array([a.values[r] for r in runs]) - np.array([b.values[r] for r in runs]))
    se = float(d.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else 0.0
    return float(d.mean()), se


def outcomes(records, claim, config):
    """The claim under each reading it admits, in ``config``."""
    matrix = claim.matrix or "G"
    out = []
    for weighting, error in readings(claim.table[1], matrix, claim.measure):
        cfg = config.replace(weighting=weighting, error=error or config.error)
        if claim.kind == "cell":
            got = _cell(records, claim, claim.measure, claim.matrix, cfg)
            if got is None:
                continue
            mean, sd, n = got.spread
            paper_mean, paper_sd = PAPER[claim.table][1][(claim.matrix, claim.pct)][claim.measure]
            difference, se = mean - paper_mean, math.sqrt(paper_sd**2 / PAPER_RUNS + sd**2 / n)
            holds = abs(difference) <= Z * se if se > 0 else difference == 0
            against = se > 0 and abs(difference) > Z * se
            unconverged = got.unconverged
        else:
            if claim.kind == "direction":
                a, b = _cell(records, claim, claim.measure, "G", cfg), _cell(records, claim, claim.measure, "K", cfg)
                sign = 1.0 if CLAIMED[claim.measure] == "+" else -1.0
            else:
                a, b = (_cell(records, claim, m, claim.matrix, cfg) for m in ("pw_error", "svc_error"))
                sign = 1.0
            if a is None or b is None:
                continue
            difference, se = _paired(a, b, sign)
            holds, against = one_sided(difference, se=se)
            unconverged = a.unconverged + b.unconverged
        out.append(Outcome(reading_label(weighting, error), difference, se, unconverged, holds and not unconverged,
                           against))
    return out


def verdict_of(claim, outs):
    """The :class:`~pipelines._fidelity.Verdict` on ``claim`` from its readings' outcomes (module docstring)."""
    held = [o.label for o in outs if o.ok]
    unconverged = max((o.unconverged for o in outs), default=0)
    converged = unconverged == 0
    beyond = bool(outs) and all(o.beyond for o in outs)
    if held and len(held) == len(outs):
        verdict, reading = "reproduced", ""
    elif held:
        reading = ", ".join(held)
        verdict = f"reproduced under reading {reading}"
    elif beyond and converged:
        verdict, reading = "not reproduced", ""
    else:
        verdict, reading = "inconclusive", ""
    return Verdict(claim=claim.text, verdict=verdict, evidence=grouped((o.label, o.text) for o in outs),
                   converged=converged,
                   beyond_noise=beyond, n_unconverged=unconverged, reading=reading)


def judged(records, tables, config_of=base_config):
    """``[(claim, verdict, outcomes)]`` of the tables present in the records, each in ``config_of(dataset)``."""
    present = {r["dataset"] for r in records}
    out = []
    for claim in claims([t for t in tables if t[0] in present]):
        outs = outcomes(records, claim, config_of(claim.dataset))
        if outs:
            out.append((claim, verdict_of(claim, outs), outs))
    return out


def sensitivity_rows(records, as_run, alternatives):
    """The verdict of each claim under each alternative that applies to it, beside its verdict as run
    (``as_run``: :func:`judged`)."""
    rows = []
    for alternative in alternatives:
        for claim, verdict, _ in as_run:
            config = alternative.config(claim, base_config(claim.dataset))
            if config is None:
                continue
            outs = outcomes(records, claim, config)
            if outs:
                rows.append(Sensitivity(alternative.setting, alternative.alternative, claim.text,
                                        verdict_of(claim, outs).verdict, verdict.verdict))
    return rows
