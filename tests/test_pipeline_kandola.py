"""The Kandola pipelines (Tables 1–6): quick runs end to end, the report's numbers recomputed from the records by
brute force, the verdict rules, the checks of the paper's own numbers, and no leakage across a split."""

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from pipelines import get_pipeline
from pipelines._fidelity import Verdict
from pipelines._kandola_methods import C_GRID, RIDGE_GRID
from pipelines._kandola_paper import PAPER
from pipelines._runner import PipelineConfig, run_pipeline

RESULTS = Path(__file__).resolve().parents[1] / "results"


@pytest.fixture(scope="module")
def quick_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    config = PipelineConfig(quick=True, scheduler="threads", out=out, progress=False)
    return {name: run_pipeline(get_pipeline(name), config) for name in ("kandola_uneven", "kandola_regression")}


@pytest.mark.parametrize("name", ["kandola_uneven", "kandola_regression"])
def test_quick_run_writes_records_with_every_fit_and_the_fidelity_tables(quick_runs, name):
    result = quick_runs[name]
    for filename in ("results.csv", "results.json", "report.md", "tables.png"):
        assert (result.outdir / filename).stat().st_size > 0
    payload = json.loads((result.outdir / "results.json").read_text())
    main = [r for r in payload["records"] if r["dataset"] in ("toy", "sinc")]
    # per split: K and G of each variant (uneven: 4 transductive, 2 inductive, K for each; regression: 2 data
    # settings × (K + 4 G)); 3 fractions × 2 repeats
    assert len(main) == 3 * 2 * (8 if name == "kandola_uneven" else 10)
    for rec in main:
        if name == "kandola_uneven":
            assert rec["svc"]["C"] == list(C_GRID) and len(rec["svc"]["status"]) == len(C_GRID)
            assert sum(rec["pw"].values()) == rec["n_test"]
            if "svc_cv" in rec:
                assert rec["svc_cv"]["fits"] == rec["svc_cv"]["folds"] * len(C_GRID)
        else:
            assert len(rec["ridge"]["converged_centered"]) == len(RIDGE_GRID)
    assert payload["settings"] and payload["verdicts"] and payload["sensitivity"]
    for verdict in payload["verdicts"]:
        Verdict(**verdict)
    assert "relation to the paper" in (result.outdir / "report.md").read_text()


def _row(report, title, cell):
    section = report.split(f"## {title}:")[1].split("\n## ")[0]
    return next(line for line in section.splitlines() if line.startswith(f"| {cell} |"))


def _spread(values):
    return f"{np.mean(values):.3f} ({np.std(values, ddof=1):.3f})"


def test_report_cells_are_the_records_by_brute_force(quick_runs):
    """Alignment cells are the runs' mean (sd); an SVC error cell is the C of the lowest mean test error over the
    runs (§6), recomputed here from the confusion counts."""
    result = quick_runs["kandola_uneven"]
    report = (result.outdir / "report.md").read_text()
    runs = [r for r in result.records if r["dataset"] == "toy" and r["algorithm"] == "transductive"
            and r["train_fraction"] == 0.8]
    K = [r for r in runs if r["matrix"] == "K"]
    assert f"| {_spread([r['train_alignment'] for r in K])} |" in _row(report, "Table 1", "K80 Train Align")
    G = [r for r in runs if r["matrix"] == "G" and r["weighting"] == "algorithm1" and r["cutoff"] == "none"]
    assert f"alg1: {_spread([r['test_alignment'] for r in G])}" in _row(report, "Table 1", "G80 Test Align")

    def overall(r, k):
        return (r["svc"]["fp"][k] + r["svc"]["fn"][k]) / r["n_test"]

    k = min(range(len(C_GRID)), key=lambda i: (np.mean([overall(r, i) for r in K]), i))
    expected = f"all: {_spread([overall(r, k) for r in K])}, C {C_GRID[k]:g}"
    assert expected in _row(report, "Table 1", "K80 SVC Error")


def _cell_records(values, statuses=None, matrix="K", fraction=0.8):
    """Records of one toy cell: ``values[run]`` = (tp, fp, fn, tn) per C of a two-C grid."""
    statuses = statuses or [[0, 0]] * len(values)
    return [{"dataset": "toy", "data": "as stated", "algorithm": "transductive", "matrix": matrix, "weighting": None,
             "cutoff": None, "train_fraction": fraction, "repeat": run, "n_test": sum(counts[0]),
             "svc": {"C": [1.0, 10.0], **{key: [c[i] for c in counts] for i, key in enumerate(("tp", "fp", "fn", "tn"))},
                     "status": status}}
            for run, (counts, status) in enumerate(zip(values, statuses))]


def test_the_paper_choice_of_C_is_the_lowest_mean_test_error_and_counts_every_fit():
    from pipelines._kandola_cells import Config, cell_values

    # C = 1 errs 2/10 and 4/10 (mean 0.3), C = 10 errs 3/10 twice (mean 0.3 too: the tie goes to the smaller C)
    records = _cell_records([[(5, 1, 1, 3), (5, 2, 1, 2)], [(4, 2, 2, 2), (5, 1, 2, 2)]], [[0, 1], [0, 0]])
    cell = cell_values(records, "svc_error", dataset="toy", algorithm="transductive", matrix="K", pct=80,
                       config=Config(data="as stated"))
    assert cell.choice == "C 1" and cell.values == {0: 0.2, 1: 0.4}
    assert (cell.fits, cell.unconverged) == (4, 1)
    recall = cell_values(records, "svc_error", dataset="toy", algorithm="transductive", matrix="K", pct=80,
                         config=Config(data="as stated", error="1 − recall"))
    # 1 − recall = fn/(tp+fn): C 1 misses 1/6 and 2/6 (mean 0.25), C 10 1/6 and 2/7 (mean 0.23): C 10
    assert recall.choice == "C 10" and recall.values == pytest.approx({0: 1 / 6, 1: 2 / 7})


def test_an_unconverged_fit_makes_a_cell_inconclusive_and_the_evidence_is_the_se_of_the_difference():
    from pipelines._kandola_verdicts import claims, outcomes, verdict_of

    claim = next(c for c in claims([("toy", "transductive")]) if c.short == "K80 SVC Error")
    paper_mean, paper_sd = PAPER[("toy", "transductive")][1][("K", 80)]["svc_error"]
    runs = [[(5, 0, 0, 5), (5, 0, 0, 5)]] * 3 + [[(5, 1, 0, 4), (5, 1, 0, 4)]]  # errors 0, 0, 0, 0.1 at both C
    from pipelines._kandola_cells import Config

    converged = verdict_of(claim, outcomes(_cell_records(runs), claim, Config(data="as stated")))
    errors = [0, 0, 0, 0.1]
    se = math.sqrt(paper_sd**2 / 10 + np.var(errors, ddof=1) / 4)
    difference = np.mean(errors) - paper_mean
    assert converged.verdict == "not reproduced"
    assert converged.evidence.startswith(f"all: {difference:+.3g} ± {se:.2g} ({abs(difference) / se:.1f} SE)")
    stalled = verdict_of(claim, outcomes(_cell_records(runs, [[0, 0], [0, 0], [1, 0], [0, 0]]), claim,
                                         Config(data="as stated")))
    assert stalled.verdict == "inconclusive" and not stalled.converged and stalled.n_unconverged == 1


def test_the_largest_overall_error_that_an_f1_allows_by_enumeration():
    from pipelines._kandola_paper import implied_other_rate, largest_overall_error

    positives, negatives = 8, 199  # Medline's test part at 20 %: 39 relevant abstracts of 1033
    share = positives / (positives + negatives)
    for tp in range(1, positives + 1):
        for fp in range(0, negatives + 1, 7):
            fn = positives - tp
            f1 = 2 * tp / (2 * tp + fp + fn)
            error = (fp + fn) / (positives + negatives)
            assert error <= largest_overall_error(f1, share) + 1e-12
            if fn == 0:
                assert error == pytest.approx(largest_overall_error(f1, share))
            precision, recall = tp / (tp + fp), tp / positives
            if recall < 1:
                assert implied_other_rate(f1, 1 - recall) == pytest.approx(precision)
    assert largest_overall_error(0.472, 39 / 1033) < 0.357 / 4  # Table 2, K80: the paper's error is not overall


def test_inductive_medline_weights_and_auto_mpg_scaling_are_fitted_on_the_training_rows_only():
    import scipy.sparse as sp

    from pipelines._kandola_data import grams

    rng = np.random.default_rng(0)
    counts = sp.random(30, 40, density=0.3, random_state=1, format="csr") * 5
    counts.data = np.ceil(counts.data)
    train, test = np.arange(20), np.arange(20, 30)
    changed = counts.tolil()
    changed[25, :] = 3.0
    changed = changed.tocsr()
    medline = {s: {"counts": c, "y": np.r_[1, 1, -np.ones(28)], "K": {"unit length": None, "raw weights": None},
                   "spectra": {"unit length": None, "raw weights": None}} for s, c in (("a", counts), ("b", changed))}
    first, second = (grams("medline", medline[s], train)["unit length"][1] for s in ("a", "b"))
    np.testing.assert_allclose(first[np.ix_(train, train)], second[np.ix_(train, train)], rtol=0, atol=1e-12)
    X = rng.normal(size=(30, 6)) * [1, 100, 50, 3000, 5, 10]
    moved = X.copy()
    moved[test] *= 7.0
    K, K_moved = (grams("auto-mpg", {"X": x, "y": np.arange(30.0), "spectrum": None}, train)["standardized"][0]
                  for x in (X, moved))
    np.testing.assert_allclose(K[np.ix_(train, train)], K_moved[np.ix_(train, train)], rtol=1e-12)


def test_ridge_path_is_kernel_ridge_regression():
    from sklearn.kernel_ridge import KernelRidge

    from pipelines._kandola_methods import ridge_path

    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 3))
    K = np.exp(-((X[:, None, :] - X[None, :, :]) ** 2).sum(-1) / 4)
    y = X[:, 0] + 5.0 + 0.1 * rng.normal(size=40)
    lambdas = [1e-3, 0.1, 10.0]
    for centered in (True, False):
        predictions, converged = ridge_path(K[:30, :30], K[30:, :30], y[:30], lambdas, centered)
        mean = y[:30].mean() if centered else 0.0
        for lam, predicted in zip(lambdas, predictions):
            expected = KernelRidge(alpha=lam, kernel="precomputed").fit(K[:30, :30], y[:30] - mean).predict(
                K[30:, :30]) + mean
            np.testing.assert_allclose(predicted, expected, rtol=1e-8, atol=1e-8)
        assert all(converged)


def test_splits_are_drawn_per_run_and_stratified():
    from pipelines._kandola import split

    y = np.r_[np.ones(39), -np.ones(994)]
    a = split(len(y), "medline", 0.2, 3, 0, y)
    b = split(len(y), "medline", 0.2, 3, 0, y)
    np.testing.assert_array_equal(a[0], b[0])
    assert int(np.sum(y[a[0]] == 1)) in (7, 8) and len(a[0]) == 206
    assert not np.array_equal(split(len(y), "medline", 0.2, 4, 0, y)[0], a[0])


def test_the_sinc_setting_run_is_the_nearest_to_the_paper_in_the_committed_records():
    from pipelines._kandola_data import SINC_NOISE, SINC_SIGMA
    from pipelines._kandola_report import calibration_distances

    path = RESULTS / "kandola_regression" / "results.json"
    if not path.exists():
        pytest.skip("no committed kandola_regression results")
    distances = calibration_distances(json.loads(path.read_text())["records"])
    assert (distances[0][1], distances[0][2]) == (SINC_SIGMA, SINC_NOISE)


@pytest.mark.parametrize("name", ["kandola_uneven", "kandola_regression"])
def test_report_verdict_counts_are_results_json_verdicts(quick_runs, name):
    result = quick_runs[name]
    payload = json.loads((result.outdir / "results.json").read_text())
    report = (result.outdir / "report.md").read_text()
    verdicts = [v["verdict"] for v in payload["verdicts"]]
    line = re.search(r"\*\*Verdicts as run \((\d+) claims\): (\d+) reproduced, (\d+) reproduced under a reading, "
                     r"(\d+) not reproduced, (\d+) inconclusive\.\*\*", report)
    assert line and int(line.group(1)) == len(verdicts)
    assert int(line.group(2)) == verdicts.count("reproduced")
    assert int(line.group(3)) == sum(v.startswith("reproduced under") for v in verdicts)
    assert int(line.group(4)) == verdicts.count("not reproduced")
    assert int(line.group(5)) == verdicts.count("inconclusive")


@pytest.mark.parametrize("name", ["kandola_uneven", "kandola_regression"])
def test_a_quick_report_says_it_is_a_quick_run_before_its_verdict_counts(quick_runs, name):
    report = (quick_runs[name].outdir / "report.md").read_text()
    assert report.index("**A quick run**") < report.index("**Verdicts as run")
