"""The reproduction pipelines: quick runs, their outputs, and the invariants of Meilă (2002).

Every pipeline runs ``--quick`` on Dask's threaded scheduler into a temporary
folder (once per module); the slow tests run the same work on a LocalCluster
and on a scheduler and a worker started as separate processes, and check that
the results do not depend on where the tasks ran.
"""

import contextlib
import csv
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest

from pipelines import PIPELINES, _meila, get_pipeline
from pipelines._fidelity import Verdict
from pipelines._report import markdown_table
from pipelines._runner import PipelineConfig, run_pipeline, summarize, task_rng

REPO = Path(__file__).resolve().parents[1]

FIGURES = {
    "meila_shift_synthetic": ["fig3_shift_synthetic.png"],
    "meila_shift_uci": ["fig4_shift_uci.png"],
    "meila_imbalanced": ["fig5_alignment.png", "fig5_test_error.png"],
    "meila_centering_real": ["fig6_centering_real.png"],
}
#: The pipelines reproducing a figure of the papers (large_scale_centering has tests of its own).
REPRODUCTIONS = tuple(FIGURES)


def _quick(name, out, scheduler="threads", **kwargs):
    config = PipelineConfig(quick=True, scheduler=scheduler, out=out, progress=False, **kwargs)
    return run_pipeline(get_pipeline(name), config)


@pytest.fixture(scope="module")
def quick_runs(tmp_path_factory):
    """The threaded quick run of every pipeline (computed once for the module)."""
    out = tmp_path_factory.mktemp("results")
    return {name: _quick(name, out) for name in REPRODUCTIONS}


def _load(result):
    return json.loads((result.outdir / "results.json").read_text())


def _timeless(records):
    return [{k: v for k, v in rec.items() if not k.endswith("seconds")} for rec in records]


def assert_same_results(a, b, rtol=1e-9):
    """Equal records up to float rounding; timings are ignored."""
    ra, rb = _timeless(a["records"]), _timeless(b["records"])
    assert len(ra) == len(rb)
    for x, y in zip(ra, rb):
        assert x.keys() == y.keys()
        for key in x:
            if isinstance(x[key], float) and isinstance(y[key], float):
                assert math.isclose(x[key], y[key], rel_tol=rtol, abs_tol=1e-12), (key, x, y)
            else:
                assert x[key] == y[key], (key, x, y)


# --------------------------------------------------------------------------- #
# Outputs
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("name", REPRODUCTIONS)
def test_quick_run_writes_well_formed_outputs(quick_runs, name):
    result = quick_runs[name]
    outdir = result.outdir
    for filename in ["results.csv", "results.json", "report.md", *FIGURES[name]]:
        assert (outdir / filename).is_file(), filename
        assert (outdir / filename).stat().st_size > 0
    payload = _load(result)
    assert payload["pipeline"] == name and payload["config"]["quick"] is True
    records = payload["records"]
    assert records and len(records) == len(result.records)
    for rec in records:
        for key in ("dataset", "kernel", "variant", "solver", "C", "n_train", "n_test", "repeat"):
            assert key in rec, key
        assert 0.0 <= rec["test_error"] <= 1.0
        assert -1.0 <= rec["alignment"] <= 1.0
        assert 0 < rec["n_sv"] <= rec["n_train"]
    with open(outdir / "results.csv", newline="") as fh:
        assert len(list(csv.DictReader(fh))) == len(records)
    summary = payload["summary"]
    assert summary and all(row["count"] >= 2 for row in summary)
    assert all("test_error_mean" in row and "test_error_se" in row for row in summary)
    report = (outdir / "report.md").read_text()
    assert report.startswith(f"# {name}")
    assert "| setting | value | relation to the paper | why / where |" in report
    assert "| claim | verdict | evidence | fits converged |" in report
    assert payload["settings"] and payload["verdicts"]
    for verdict in payload["verdicts"]:
        Verdict(**verdict)  # a "not reproduced" without converged fits or a difference beyond the noise raises
        assert f"| {verdict['claim'].replace('|', chr(92) + '|')} | {verdict['verdict']} |" in report
    for figure in FIGURES[name]:
        assert f"]({figure})" in report
        assert (outdir / figure).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_quick_runs_are_reproducible(quick_runs, tmp_path):
    again = _quick("meila_shift_uci", tmp_path)
    assert_same_results(_load(quick_runs["meila_shift_uci"]), _load(again))


def test_another_seed_gives_other_samples(quick_runs, tmp_path):
    other = _quick("meila_shift_synthetic", tmp_path, seed=1)
    a = [r["alignment"] for r in quick_runs["meila_shift_synthetic"].records]
    b = [r["alignment"] for r in other.records]
    assert a != b


# --------------------------------------------------------------------------- #
# Scientific invariants
# --------------------------------------------------------------------------- #


def _by(records, **match):
    return [r for r in records if all(r.get(k) == v for k, v in match.items())]


def _paired(records, key, match_a, match_b, on=("kernel", "dataset", "shift", "features", "repeat")):
    index = {tuple(r.get(k) for k in on): r for r in _by(records, **match_b)}
    pairs = [(r[key], index[tuple(r.get(k) for k in on)][key]) for r in _by(records, **match_a)]
    assert pairs
    return np.array(pairs, dtype=float)


def test_synthetic_recentered_equals_original(quick_runs):
    records = quick_runs["meila_shift_synthetic"].records
    errors = _paired(records, "test_error", {"variant": "recentered"}, {"variant": "original"})
    np.testing.assert_array_equal(errors[:, 0], errors[:, 1])
    svs = _paired(records, "n_sv", {"variant": "recentered"}, {"variant": "original"})
    np.testing.assert_array_equal(svs[:, 0], svs[:, 1])


def test_synthetic_recentered_predictions_agree_through_both_kernels(quick_runs):
    for rec in _by(quick_runs["meila_shift_synthetic"].records, variant="recentered"):
        # Through the shifted kernel with b - Δb, and through the recentered test rows K_c(x, x_i).
        assert rec["test_error_kc"] == rec["test_error"]
        assert rec["decision_gap"] < 1e-3 * max(1.0, rec["shift"] ** 2 * 1e-8)


def test_synthetic_shifted_alignment_vanishes_and_recentering_restores_it(quick_runs):
    records = quick_runs["meila_shift_synthetic"].records
    top = max(r["shift"] for r in records)
    for rec in _by(records, variant="shifted", solver="libsvm", shift=top):
        assert abs(rec["alignment"]) < 0.01
    pairs = _paired(records, "alignment", {"variant": "recentered", "shift": top}, {"variant": "original", "shift": top})
    assert np.all(pairs[:, 0] > 0.9 * pairs[:, 1])


def test_synthetic_dkernel_solver_is_unaffected_by_the_shift(quick_runs):
    records = quick_runs["meila_shift_synthetic"].records
    errors = _paired(records, "test_error", {"variant": "shifted", "solver": "dkernel"}, {"variant": "original"})
    np.testing.assert_allclose(errors[:, 0], errors[:, 1], atol=1.0 / 200 + 1e-12)
    assert all(r["converged"] for r in _by(records, solver="dkernel"))


def test_synthetic_libsvm_degrades_on_the_largest_shift(quick_runs):
    records = quick_runs["meila_shift_synthetic"].records
    top = max(r["shift"] for r in records)
    shifted = np.mean([r["test_error"] for r in _by(records, variant="shifted", solver="libsvm", shift=top)])
    original = np.mean([r["test_error"] for r in _by(records, variant="original", shift=top)])
    assert shifted > original


def test_uci_recentered_equals_original_and_shifted_alignment_reaches_its_limit(quick_runs):
    records = quick_runs["meila_shift_uci"].records
    errors = _paired(records, "test_error", {"variant": "recentered"}, {"variant": "original"})
    np.testing.assert_allclose(errors[:, 0], errors[:, 1], atol=1.0 / 150)
    assert {r["shift"] for r in records} == {1000.0, 1e4}
    for rec in _by(records, variant="shifted"):
        assert abs(rec["alignment"] - rec["alignment_limit"]) < 0.02


def test_imbalanced_shifted_alignment_tends_to_eq34(quick_runs):
    records = quick_runs["meila_imbalanced"].records
    top = max(r["shift"] for r in records)
    for rec in _by(records, variant="shifted", shift=top):
        n_pos, n_neg = rec["n_positive"], rec["n_negative"]
        limit = (n_pos - n_neg) ** 2 / (n_pos + n_neg) ** 2
        assert rec["alignment_limit"] == pytest.approx(limit)
        assert rec["alignment"] == pytest.approx(limit, abs=0.02)
        assert rec["alignment"] == pytest.approx(0.82, abs=0.02)
    for variant in ("recentered-standard", "recentered-class-balanced"):
        errors = _paired(records, "test_error", {"variant": variant}, {"variant": "original"})
        np.testing.assert_array_equal(errors[:, 0], errors[:, 1])
        assert all(r["alignment"] < 0.82 for r in _by(records, variant=variant))


def test_centering_real_applies_delta_b_and_keeps_rbf_results(quick_runs):
    records = quick_runs["meila_centering_real"].records
    centered = _by(records, variant="centered")
    assert centered and all(math.isfinite(r["delta_b"]) for r in centered)
    on = ("experiment", "features", "repeat")
    errors = _paired(records, "test_error", {"variant": "centered", "kernel": "rbf"},
                     {"variant": "original", "kernel": "rbf"}, on=on)  # fmt: skip
    np.testing.assert_allclose(errors[:, 0], errors[:, 1], atol=2.0 / 150)


# --------------------------------------------------------------------------- #
# Runner, report helpers and command line
# --------------------------------------------------------------------------- #


def test_task_rng_streams_are_independent_and_repeatable():
    a = task_rng(0, 3).standard_normal(5)
    np.testing.assert_array_equal(a, task_rng(0, 3).standard_normal(5))
    assert not np.allclose(a, task_rng(0, 4).standard_normal(5))
    assert not np.allclose(a, task_rng(1, 3).standard_normal(5))


def test_summarize_groups_repeats_and_averages_measures():
    records = [
        {"kernel": "rbf", "repeat": r, "test_error": e, "converged": c, "n_iter": 10 * r}
        for r, (e, c) in enumerate([(0.1, True), (0.3, False)])
    ]
    (row,) = summarize(records)
    assert row["kernel"] == "rbf" and row["count"] == 2
    assert row["test_error_mean"] == pytest.approx(0.2)
    assert row["test_error_se"] == pytest.approx(np.std([0.1, 0.3], ddof=1) / math.sqrt(2))
    assert row["converged_mean"] == 0.5 and row["n_iter_mean"] == 5.0


def test_markdown_table_escapes_pipes():
    table = markdown_table([{"x": "|a| = 10"}], [("|a|", "x")])
    assert table.splitlines()[0] == "| \\|a\\| |"
    assert table.splitlines()[2] == "| \\|a\\| = 10 |"


def test_cli_run_lists_the_pipelines():
    from dkernel.cli import main

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["run", "--list"]) == 0
    for name in PIPELINES:
        assert name in buffer.getvalue()


def test_cli_run_rejects_an_unknown_pipeline(capsys):
    from dkernel.cli import main

    assert main(["run", "no_such_pipeline"]) == 2
    err = capsys.readouterr().err
    assert "meila_shift_synthetic" in err and "did you mean" not in err
    assert main(["run", "meila_imbalance", "--quick"]) == 2  # a misspelt name: the nearest one offered
    assert "unknown pipeline 'meila_imbalance'; did you mean 'meila_imbalanced'?" in capsys.readouterr().err


def test_cli_run_passes_options_to_the_pipeline(tmp_path, capsys):
    from dkernel.cli import main

    code = main(["run", "meila_shift_uci", "--quick", "--scheduler", "threads", "--out", str(tmp_path),
                 "--repeats", "1", "--no-progress"])  # fmt: skip
    assert code == 0
    assert str(tmp_path / "meila_shift_uci" / "report.md") in capsys.readouterr().out
    payload = json.loads((tmp_path / "meila_shift_uci" / "results.json").read_text())
    assert {r["repeat"] for r in payload["records"]} == {0}


# --------------------------------------------------------------------------- #
# The same results wherever the tasks run
# --------------------------------------------------------------------------- #


@pytest.mark.slow
def test_local_cluster_gives_the_threaded_results(quick_runs, tmp_path):
    result = _quick("meila_centering_real", tmp_path, scheduler="local", n_workers=2)
    assert_same_results(_load(quick_runs["meila_centering_real"]), _load(result))


# --------------------------------------------------------------------------- #
# Reports: every count and verdict of the text comes from the records
# --------------------------------------------------------------------------- #


def _rewritten(result, tmp_path, change):
    """report.md written from the records of ``result`` as modified by ``change(record)``."""
    import dataclasses

    records = [change(dict(rec)) for rec in result.records]
    altered = dataclasses.replace(result, records=records, summary=summarize(records), outdir=tmp_path)
    get_pipeline(result.name).write_report(altered, tmp_path)
    return (tmp_path / "report.md").read_text()


def test_run_line_says_when_tasks_were_resumed_from_an_earlier_run():
    from pipelines._report import run_line
    from pipelines._runner import PipelineResult

    config = PipelineConfig(quick=True, scheduler="threads")
    fresh = PipelineResult(name="kpca_usps", config=config, records=[], summary=[], outdir=Path("x"), seconds=12.0)
    assert run_line(fresh).endswith("(seed 0; 12 s).")
    resumed = PipelineResult(name="kpca_usps", config=config, records=[], summary=[], outdir=Path("x"), seconds=1.0,
                             resumed=7)
    assert "(seed 0; 1 s, after 7 task(s) resumed from the records an earlier run" in run_line(resumed)


@pytest.mark.parametrize("name", REPRODUCTIONS)
def test_report_run_line_is_the_command_that_ran(quick_runs, name):
    result = quick_runs[name]
    report = (result.outdir / "report.md").read_text()
    out = result.outdir.parent
    assert f"Run: `dkernel run {name} --quick --cluster threads --out {out}` (seed 0; " in report


def test_cli_run_report_names_its_options(tmp_path):
    from dkernel.cli import main

    assert main(["run", "meila_imbalanced", "--quick", "--scheduler", "threads", "--repeats", "1", "--seed", "3",
                 "--out", str(tmp_path), "--no-progress"]) == 0  # fmt: skip
    report = (tmp_path / "meila_imbalanced" / "report.md").read_text()
    assert (f"Run: `dkernel run meila_imbalanced --quick --repeats 1 --seed 3 --cluster threads --out {tmp_path}` "
            "(seed 3; ") in report  # fmt: skip
    assert "(1 repeats;" in report


def test_centering_real_report_text_follows_the_records(quick_runs, tmp_path):
    result = quick_runs["meila_centering_real"]
    report = (result.outdir / "report.md").read_text()
    as_run = [r for r in result.records if r["features"] == "raw"]
    labels = sorted({r["experiment"] for r in as_run})
    sets = {r["dataset"] for r in as_run}
    assert f"We ran {len(labels)} experiments on {len(sets)} data sets" in report
    unconverged = sorted({r["experiment"] for r in as_run if not r["converged"]})
    if unconverged:
        assert "libsvm stopped at its iteration cap" in report and f"{unconverged[0]} (max |K| = " in report
    test_sizes = sorted({r["n_test"] for r in as_run if r["dataset"].startswith("digi")})
    assert f"{test_sizes[0]} test points" in report
    # Every split converged, and centering changed every test error: the text says so.
    original = {(r["experiment"], r["features"], r["repeat"]): r["test_error"]
                for r in _by(result.records, variant="original")}  # fmt: skip
    converged = _rewritten(result, tmp_path, lambda r: {**r, "converged": True, "test_error": (
        original[r["experiment"], r["features"], r["repeat"]] + (0.25 if r["variant"] == "centered" else 0.0))})
    assert "libsvm met the tolerance on every split of every experiment" in converged
    assert "libsvm stopped at its iteration cap" not in converged
    assert "made the same test errors on every split in 0; they differ in " in converged
    assert all(f"{label} (Δerr +0.2500 ± 0.0000)" in converged for label in labels)


def _hurting(result, converged=True):
    """The records of ``result`` where centering raises every test error by 0.2 to 0.3 (not by a constant, which
    would leave no noise estimate), every fit converged or not."""
    def change(rec):
        if rec["variant"] == "centered":
            rec["test_error"] += 0.2 + 0.1 * rec["repeat"]
        return {**rec, "converged": converged}

    return [change(dict(r)) for r in result.records]


def test_centering_real_verdicts_hold_a_no_to_converged_fits_and_the_noise(quick_runs):
    """Centering that raises the error beyond the noise is 'not reproduced' only when every fit converged."""
    result = quick_runs["meila_centering_real"]
    module = get_pipeline("meila_centering_real")
    claim = "In none of the experiments did data centering hurt performance"
    verdicts = {v.claim: v for v in module.verdicts(_hurting(result), result.config)}
    assert verdicts[claim].verdict == "not reproduced" and verdicts[claim].beyond_noise
    assert "+0.25 ± 0.05 (5.0 SE)" in verdicts["centering does not raise the test error: wdbc/rbf"].evidence
    verdicts = {v.claim: v for v in module.verdicts(_hurting(result, converged=False), result.config)}
    assert verdicts[claim].verdict == "inconclusive"
    assert "fit(s) not converged" in verdicts["centering does not raise the test error: wdbc/rbf"].evidence
    # As run, the capped wdbc/poly2 fits leave that cell inconclusive, never "not reproduced".
    as_run = {v.claim: v for v in module.verdicts(result.records, result.config)}
    poly = as_run["centering does not raise the test error: wdbc/poly2"]
    capped = [r for r in result.records if r["experiment"] == "wdbc/poly2" and r["features"] == "raw"
              and not r["converged"]]  # fmt: skip
    assert (poly.verdict == "inconclusive") if capped else poly.verdict != "not reproduced"
    assert all(r["n_iter"] == _meila.libsvm_max_iter(r["n_train"]) for r in capped)


def test_centering_real_sensitivity_shows_the_scaled_features(quick_runs):
    result = quick_runs["meila_centering_real"]
    module = get_pipeline("meila_centering_real")
    rows = module.sensitivity(result.records, result.config)
    as_run = {v.claim: v.verdict for v in module.verdicts(result.records, result.config)}
    assert {row.claim for row in rows if row.setting == "feature scaling"} == set(as_run)
    assert all(row.verdict_as_run == as_run[row.claim] for row in rows)
    scaled = [r for r in result.records if r["features"] == "scaled"]
    assert scaled and all(r["kernel_max_abs"] < 1e3 for r in scaled)  # poly2 on [−1, 1] features: (1 + 30)² at most
    assert max(r["kernel_max_abs"] for r in result.records if r["features"] == "raw") > 1e10  # wdbc/poly2 raw


def test_shift_uci_report_text_follows_the_records(quick_runs, tmp_path):
    result = quick_runs["meila_shift_uci"]
    n = len({r["dataset"] for r in result.records})

    def degraded(rec):
        if rec["variant"] == "shifted" and rec["solver"] == "libsvm" and rec["shift"] == 1000.0:
            rec["test_error"] += 0.3 + 0.1 * rec["repeat"]
        return {**rec, "converged": True}

    report = _rewritten(result, tmp_path, degraded)
    assert f"their test error is higher by more than 2 SE on {n}/{n}" in report
    assert "The paper reports a degradation at this shift, as measured here." in report
    assert "We cannot check the cause" not in report
    assert "| A large shift (\\|a\\| = 1000) is detrimental to classification performance | reproduced |" in report
    capped = _rewritten(result, tmp_path, lambda rec: {**degraded(rec), "converged": rec["variant"] != "shifted"})
    assert "so the verdict on it is inconclusive" in capped
    assert "| A large shift (\\|a\\| = 1000) is detrimental to classification performance | inconclusive |" in capped

    def same(rec):
        if rec["variant"] == "shifted":
            original = _by(result.records, dataset=rec["dataset"], repeat=rec["repeat"], shift=rec["shift"],
                           features=rec["features"], variant="original")[0]  # fmt: skip
            rec["test_error"], rec["n_sv"] = original["test_error"], original["n_sv"]
        return rec

    report = _rewritten(result, tmp_path, same)
    assert f"fewer support vectors than the original ones on 0/{n} data sets" in report
    assert "it appears at neither |a| = 1000 nor |a| = 10000" in report


def test_shift_synthetic_report_text_follows_the_records(quick_runs, tmp_path):
    result = quick_runs["meila_shift_synthetic"]
    top = max(r["shift"] for r in result.records)

    def dkernel_fails_at_the_top(rec):
        if rec["solver"] == "dkernel" and rec["shift"] == top:
            rec["test_error"] = 0.5 + 0.01 * rec["repeat"]
        return rec

    report = _rewritten(result, tmp_path, dkernel_fails_at_the_top)
    assert report.count("dkernel's solver in float64 gives the original test error within 1 SE at 2/3 shifts") == 2
    report = (result.outdir / "report.md").read_text()
    assert report.count("dkernel's solver in float64 gives the original test error within 1 SE at 3/3 shifts") == 2


def test_imbalanced_report_text_follows_the_records(quick_runs, tmp_path):
    result = quick_runs["meila_imbalanced"]
    top = max(r["shift"] for r in result.records)
    report = (result.outdir / "report.md").read_text()
    assert "Kernels (the paper does not name its four): poly2 `(1 + xᵀz)²`, RBF" in report  # the quick run's two
    differ = [r for r in result.records
              if r["variant"].startswith("recentered") and r["test_error"] != r["test_error_kc"]]
    assert ("they classify every test point alike" in report) == (not differ)

    def routes_differ(rec):
        if rec["variant"] == "recentered-standard" and rec["shift"] == top and rec["kernel"] == "rbf":
            rec["test_error_kc"] = rec["test_error"] + 0.01
        return rec

    report = _rewritten(result, tmp_path, routes_differ)
    assert f"they classify some test point differently at rbf |a| = {top:g}, and agree on every test point up to" \
           in report


# --------------------------------------------------------------------------- #
# Data read on the client: workers need no data folder
# --------------------------------------------------------------------------- #


def _no_data_anywhere(monkeypatch, folder):
    """This process as a worker without the data: an empty data folder and cache, and no network."""
    import urllib.error
    import urllib.request

    folder.mkdir(exist_ok=True)
    monkeypatch.setenv("DKERNEL_DATA", str(folder))
    monkeypatch.setenv("DKERNEL_CACHE", str(folder))

    def no_network(url, *args, **kwargs):
        raise urllib.error.URLError("network is unreachable")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)


@pytest.mark.data
def test_pipeline_tasks_carry_the_data_read_on_the_client(data_home, monkeypatch, tmp_path):
    import dask

    from dkernel.datasets import DatasetNotFoundError
    from pipelines import meila_centering_real

    monkeypatch.setenv("DKERNEL_DATA", str(data_home))
    tasks = meila_centering_real.make_tasks(PipelineConfig(repeats=1, out=tmp_path))
    first = {}
    for task in tasks:
        first.setdefault(task["dataset"], {**task, "seed": 0})
    assert set(first) == {"cmc", "glass", "wdbc", "digits", "digits-8x8"}
    assert all(first[name]["source"] == "file" for name in ("cmc", "glass", "wdbc"))
    assert first["digits"]["source"] == "usps" and first["digits-8x8"]["source"] == "sklearn"
    # Read where the task runs, while the data folder is there: the reference records.
    expected = {name: meila_centering_real.run_task({**first[name], "data": None}) for name in ("cmc", "digits")}

    _no_data_anywhere(monkeypatch, tmp_path / "empty")
    for name in ("cmc", "digits"):
        with pytest.raises(DatasetNotFoundError):
            meila_centering_real.run_task({**first[name], "data": None})
        (records,) = dask.compute(dask.delayed(meila_centering_real.run_task)(first[name]), scheduler="sync")
        assert _timeless(records) == _timeless(expected[name])


@pytest.mark.data
def test_the_digits_are_the_papers_usps_with_64_inputs(data_home, monkeypatch):
    monkeypatch.setenv("DKERNEL_DATA", str(data_home))
    source, data = _meila.client_data("digits")
    assert source == "usps"
    X, y, X_test, y_test = _meila.load_split("digits", np.random.default_rng(0), source=source, pair=(2, 6),
                                             data=data.compute())  # fmt: skip
    assert X.shape == (200, 64) and X_test.shape == (400, 64)  # Table 1: 64 inputs, 200 / 400 points
    assert X.min() >= -1.0 and X.max() <= 1.0 and X.min() < -0.9
    assert set(np.unique(np.concatenate([y, y_test]))) == {-1, 1}
    from dkernel.datasets import load

    usps = load("usps", data_home=data_home, download=False)
    image = 2.0 * usps.X[0].reshape(16, 16) - 1.0  # the first image, averaged over 2 × 2 patches
    np.testing.assert_allclose(data.compute()["X"][0], image.reshape(8, 2, 8, 2).mean(axis=(1, 3)).ravel())


@pytest.mark.slow
@pytest.mark.data
@pytest.mark.parametrize(
    "scheduler_address",
    [{"DKERNEL_DATA": "/nonexistent/dkernel-data", "DKERNEL_CACHE": "/nonexistent/dkernel-cache",
      "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}],
    ids=["workers-without-any-data"],
    indirect=True,
)  # fmt: skip
def test_run_on_a_scheduler_reads_the_data_on_the_client(quick_runs, scheduler_address, data_home, tmp_path):
    """`dkernel run ... --scheduler tcp://...` with the data folder known to the client only (a relative path).

    The workers find no data folder, no cache and no network: every data set reaches them from the client.
    The records are those of the threaded run.
    """
    import os
    import subprocess
    import sys

    env = {**os.environ, "DKERNEL_DATA": os.path.relpath(data_home, REPO)}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "dkernel"), "run", "meila_centering_real", "--quick", "--scheduler",
         scheduler_address, "--out", str(tmp_path), "--no-progress"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    payload = json.loads((tmp_path / "meila_centering_real" / "results.json").read_text())
    wdbc = [r for r in payload["records"] if r["dataset"] == "wdbc"]
    assert wdbc and all(r["source"] == "file" for r in wdbc)
    assert scheduler_address.startswith("tcp://127.0.0.1:")
    assert_same_results(_load(quick_runs["meila_centering_real"]), payload)


def test_scaled_features_are_fitted_on_the_training_split():
    X = np.array([[0.0, 5.0, 1.0], [10.0, 5.0, 3.0]])
    X_test = np.array([[20.0, 7.0, 2.0]])
    train, test = _meila.scale_features(X, X_test)
    np.testing.assert_allclose(train, [[-1.0, 0.0, -1.0], [1.0, 0.0, 1.0]])  # a constant feature becomes 0
    np.testing.assert_allclose(test, [[3.0, 0.0, 0.0]])  # the training range maps the test point, even outside


def test_libsvm_cap_is_libsvms_own_and_a_capped_fit_is_not_converged(monkeypatch):
    """libsvm's own cap is max(10⁷, 100 n); a fit stopped by it (fit_status_ = 1) is recorded as not converged."""
    assert _meila.libsvm_max_iter(300) == 10_000_000 and _meila.libsvm_max_iter(200_000) == 20_000_000
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=80) > 0, 1, -1)
    K = (1.0 + X @ X.T) ** 2
    fit = _meila.fit_svm(K, y, 1000.0)
    assert fit.converged and fit.n_iter < _meila.libsvm_max_iter(80)
    monkeypatch.setattr(_meila, "LIBSVM_MIN_MAX_ITER", 5)  # the cap is then 100 n = 8000, below this fit's steps
    capped = _meila.fit_svm(K, y, 1000.0)
    assert _meila.libsvm_max_iter(80) == 8000 < fit.n_iter
    assert not capped.converged and capped.n_iter == 8000


def test_a_paired_verdict_is_inconclusive_unless_every_fit_converged():
    from pipelines._verdicts import every, paired

    records = [{"variant": v, "repeat": r, "test_error": 0.1 + (0.2 + 0.01 * r if v == "b" else 0.0),
                "converged": True} for v in ("a", "b") for r in range(5)]  # fmt: skip
    worse = paired("b is not worse", records, "test_error", {"variant": "b"}, {"variant": "a"},
                   claim_is="not higher")
    assert worse.verdict == "not reproduced" and worse.evidence.startswith("+0.22 ± 0.0071 (31.1 SE)")
    records[0]["converged"] = False  # a fit of side a
    worse = paired("b is not worse", records, "test_error", {"variant": "b"}, {"variant": "a"},
                   claim_is="not higher")
    assert worse.verdict == "inconclusive" and worse.n_unconverged == 1
    same = paired("equal", records, "test_error", {"variant": "a"}, {"variant": "a"})
    assert same.verdict == "inconclusive" and same.evidence.startswith("+0 ± 0: equal on all 5 repeats")
    both = every("all", [("x", worse), ("y", same)])
    assert both.verdict == "inconclusive" and "inconclusive on 2/2" in both.evidence


def test_a_vague_claim_is_judged_under_both_readings_and_most_means_more_than_half():
    from pipelines._fidelity import judge
    from pipelines._verdicts import either, most

    held, failed, unsure = judge("", 0.1, se=0.01), judge("", -0.1, se=0.01), judge("", -0.01, se=0.01)
    assert either("c", held, failed, ("strong", "weak")).verdict == "reproduced"
    assert either("c", failed, held, ("strong", "weak")).verdict == "reproduced under reading 'weak'"
    assert either("c", failed, unsure, ("strong", "weak")).verdict == "inconclusive"
    both = either("c", failed, failed, ("strong", "weak"))
    assert both.verdict == "not reproduced" and "read 'strong'" in both.evidence and "Read 'weak'" in both.evidence
    assert most("m", [("a", held), ("b", held), ("c", failed)]).verdict == "reproduced"
    assert most("m", [("a", failed), ("b", failed), ("c", held)]).verdict == "not reproduced"
    assert most("m", [("a", held), ("b", unsure), ("c", failed)]).verdict == "inconclusive"


def test_point_labels_do_not_overlap_and_coincident_points_share_one():
    from pipelines._report import annotate_points, save_figure, subplots

    fig, ax = subplots(1, 1, figsize=(5, 4))
    xs = [0.0, 0.0, 0.0, 0.43, 0.50, 0.47, 0.51, 0.40, 0.32]
    ys = [0.0, 0.0, 0.0, 0.80, 0.81, 0.75, 0.78, 0.64, 0.51]
    labels = ["a/rbf", "b/rbf", "c/rbf", "d/rbf", "e/rbf", "f/rbf", "g/rbf", "h/rbf", "i/rbf"]
    ax.scatter(xs, ys)
    ax.set_xlim(-0.05, 0.9)
    ax.set_ylim(-0.05, 0.9)
    annotate_points(ax, xs, ys, labels)
    fig.canvas.draw()
    texts = ax.texts
    assert sorted(t.get_text() for t in texts)[0] == "a, b, c /rbf"  # one label for three coincident points
    assert len(texts) == 7
    boxes = [t.get_window_extent() for t in texts]
    for k, a in enumerate(boxes):
        for b in boxes[k + 1:]:
            assert not a.overlaps(b), (a, b)
    save_figure(fig, "/dev/null")


# --------------------------------------------------------------------------- #
# What a researcher's reading of the quick reports found
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("name", REPRODUCTIONS)
def test_a_quick_report_says_first_that_it_is_no_test_of_the_paper(quick_runs, name):
    report = (quick_runs[name].outdir / "report.md").read_text()
    note = report.index("> **A quick run** (`--quick`)")
    assert note < report.index("Run: `") and note < report.index("| claim | verdict |")
    repeats = len({r["repeat"] for r in quick_runs[name].records})
    assert f"With {repeats} repeats per cell, a standard error rests on {repeats - 1} degree" in report


def test_a_full_report_has_no_quick_run_note():
    from pipelines._report import run_line
    from pipelines._runner import PipelineResult

    result = PipelineResult(name="meila_imbalanced", config=PipelineConfig(quick=False), records=[{"repeat": 0}],
                            summary=[], outdir=Path("."))
    assert run_line(result).startswith("Run: `") and "quick run" not in run_line(result)


def test_the_largest_decision_gap_is_the_largest_of_the_records(quick_runs):
    result = quick_runs["meila_shift_synthetic"]
    report = (result.outdir / "report.md").read_text()
    for kernel in sorted({r["kernel"] for r in result.records}):
        section = report.split(f"### {kernel}: size of the numbers", 1)[1].split("###", 1)[0]
        rows = [line.split("|") for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]
        for row in rows:
            shift = float(row[1].strip())
            gaps = [r["decision_gap"] for r in result.records if r["kernel"] == kernel and r["shift"] == shift
                    and r["variant"] == "recentered" and r["solver"] == "libsvm"]
            assert row[6].strip() == f"{max(gaps):.2g}"


def test_most_counts_the_unconverged_fits_of_every_case():
    from pipelines._fidelity import judge
    from pipelines._verdicts import most

    held = judge("", 0.1, se=0.01)
    stuck = judge("", -0.01, se=0.01, converged=False, n_unconverged=4)
    verdict = most("m", [("a", held), ("b", held), ("c", stuck)])
    assert verdict.verdict == "reproduced" and verdict.n_unconverged == 4 and not verdict.converged
