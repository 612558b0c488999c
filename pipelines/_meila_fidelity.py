"""What the Meilă pipelines state of their settings, and the readings of the Table 1 runs.

The settings every Meilă pipeline shares (the solver, its tolerance and
cap, the repeats: :func:`solver_settings`) and those of the Table 1 data
(:func:`table1_settings`); the readings of a Table 1 run (features as read,
features scaled to [−1, 1], scikit-learn's 8 × 8 digits in place of USPS:
:func:`reading`) and the sensitivity of a pipeline's verdicts to them
(:func:`table1_sensitivity`).
"""

from ._fidelity import Setting
from ._meila import DIGITS, LIBSVM_MIN_MAX_ITER, TOL
from ._verdicts import sensitivity_rows

__all__ = ["DIGITS_8X8", "TABLE1_TASKS", "digits_alternative_and_files", "reading", "solver_settings",
           "table1_sensitivity", "table1_settings"]


def solver_settings(n_repeats):
    """The settings every Meilă pipeline shares: the solver, its tolerance and cap, the repeats."""
    return [
        Setting("SVM solver", "libsvm: scikit-learn's copy, `SVC(kernel='precomputed')`", "differs",
                "availability: the paper used its own modification of the 2001 LIBSVM source to accept a Gram "
                "matrix (§6.1), which is not published; scikit-learn's libsvm has the same SMO and the same "
                "single-precision kernel cache"),
        Setting("libsvm stopping tolerance", f"{TOL:g}", "silent", "libsvm's default (-e 0.001); the paper names none"),
        Setting("libsvm iteration cap", f"max({LIBSVM_MIN_MAX_ITER:.0e}, 100 n) SMO steps", "differs",
                "run time: the 2001 LIBSVM had no cap, and unbounded fits ran for minutes (one centered glass/poly2 "
                "fit took 8 × 10⁸ steps); this is the cap later libsvm versions set themselves (svm.cpp, "
                "Solver::Solve). A fit that reaches it is recorded as not converged (fit_status_ = 1) and every "
                "verdict resting on it is inconclusive"),
        Setting("repeats", f"{n_repeats}", "stated" if n_repeats == 10 else "differs",
                "§6.1 and §6.2: 10 samples or splits" if n_repeats == 10 else
                "a reduced run (--quick or --repeats); the paper has 10"),
    ]  # fmt: skip


#: The records of the alternative run beside the paper's digits (scikit-learn's 8 × 8 digits) carry this label.
DIGITS_8X8 = "8×8 digits"


def reading(records, name="as run", key="dataset"):
    """The records of one reading of a Table 1 pipeline.

    ``"as run"``: features as read, the paper's digits; ``"scaled"``: features
    on [−1, 1] by their training range; ``"8x8"``: as run, with the records of
    scikit-learn's 8 × 8 digits (``alternative`` :data:`DIGITS_8X8`) in place
    of the paper's digits, matched by ``key``.
    """
    main = [r for r in records if not r.get("alternative")]
    if name == "scaled":
        return [r for r in main if r["features"] == "scaled"]
    raw = [r for r in main if r["features"] == "raw"]
    if name == "8x8":
        other = [r for r in records if r.get("alternative") == DIGITS_8X8]
        swapped = {r[key] for r in other}
        return [r for r in raw if r[key] not in swapped] + other
    return raw


#: The tasks of Table 1 that the Meilă pipelines run.
TABLE1_TASKS = "cmc (class 1 vs rest), glass (class 2 vs rest), wdbc, digits a vs b, a, b ∈ {0, 1, 2, 6}"


def table1_settings(digits, description, reduced=None):
    """The settings of the Table 1 data: the tasks (as ``description`` gives their source), the digits
    (``digits`` is their source, :func:`pipelines._meila.dataset_source`) and the scaling of the features.

    ``reduced`` names the tasks of a reduced run (``--quick``, which runs no 8 × 8 digits beside USPS); None
    for the full run."""
    tasks = (Setting("data sets and tasks", TABLE1_TASKS, "stated", description) if reduced is None else
             Setting("data sets and tasks", reduced, "differs", f"a reduced run (--quick); the full run has the "
                     f"tasks of {description.split(' (')[0]}: {TABLE1_TASKS}"))
    beside = "; scikit-learn's 8 × 8 digits (64 inputs) are run beside them (sensitivity)" if reduced is None else ""
    return [
        tasks,
        Setting("digits data set", "USPS" if digits == "usps" else "scikit-learn's 8 × 8 digits",
                "stated" if digits == "usps" else "differs",
                "Table 1: 'handwritten digits from the USPS'" if digits == "usps" else
                "availability: no USPS file in the data folder (set DKERNEL_DATA to the folder holding usps/)"),
        Setting("digits inputs", DIGITS[digits], "silent",
                "Table 1 gives 64 inputs, not how USPS's 256 pixels became 64 nor their scale: 2 × 2 averaging of "
                "the [−1, 1] pixels is our reading" + beside if digits == "usps" else "the only digits found"),
        Setting("feature scaling", "none: features as read", "silent",
                "the σ² of Table 1 fit the raw ranges of cmc and glass; scaled to [−1, 1] on each training split "
                "(libsvm's svm-scale) is run beside it (sensitivity)"),
    ]  # fmt: skip


def table1_sensitivity(records, claims, key="dataset", keep=lambda row: True):
    """The verdicts of ``claims(records of a reading)`` with the features scaled, and with scikit-learn's 8 × 8
    digits (where they were run; only the rows ``keep`` accepts), against the verdicts as run."""
    as_run = claims(reading(records, key=key))
    rows = sensitivity_rows("feature scaling", "each feature on [−1, 1] by its training range (svm-scale)", as_run,
                            claims(reading(records, "scaled", key=key)))  # fmt: skip
    if any(r.get("alternative") == DIGITS_8X8 for r in records):
        rows += [row for row in sensitivity_rows("digits", "scikit-learn's 8 × 8 digits (UCI optdigits)", as_run,
                                                 claims(reading(records, "8x8", key=key))) if keep(row)]
    return rows


def digits_alternative_and_files(records, table, figure):
    """The report's last sections: the digits pairs on sklearn's 8×8 digits (``table`` of their records) when the
    run has them, then the list of the files written beside the report (``figure`` among them)."""
    parts = []
    alternative = [r for r in records if r.get("alternative") == DIGITS_8X8]
    if alternative:
        parts += [f"## The digits pairs on {DIGITS['sklearn']}", "", table(alternative), ""]
    return parts + ["Files: `results.csv`, `results.json` (records, summary, settings, verdicts and sensitivity), "
                    f"`{figure}`.", ""]
