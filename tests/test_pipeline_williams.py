"""The williams_conformal pipeline: its quick run end to end on a LocalCluster; the report's numbers and verdicts
are the records'."""

import json
import re

import numpy as np
import pytest

from pipelines import _williams as W
from pipelines import williams_conformal as P
from pipelines._fidelity import Verdict
from pipelines._runner import PipelineConfig, run_pipeline


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    return run_pipeline(P, PipelineConfig(quick=True, scheduler="local", out=out, progress=False))


def test_quick_run_writes_records_report_and_figure(quick_run):
    outdir = quick_run.outdir
    assert (outdir / "fig1_toy.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    payload = json.loads((outdir / "results.json").read_text())
    assert len(payload["records"]) == len(quick_run.records)
    toy = [r for r in quick_run.records if r["dataset"] == "toy" and r["variant"] != "timing"]
    assert {r["variant"] for r in toy} == {"first-pass", "conformal", "amari-wu"}
    assert {r["trial"] for r in toy} == set(range(P.QUICK_TOY_TRIALS))
    for key in ("dataset", "trial", "variant", "bias", "kappa", "C", "sigma", "test_error", "converged"):
        assert all(key in r for r in toy), key
    conformal = [r for r in toy if r["variant"] == "conformal"]
    assert {(r["width"], r["kappa_rule"], r["bias"]) for r in conformal} == \
        {(w, k, b) for w, k in P.READINGS for b in W.BIASES}
    mushroom = [r for r in quick_run.records if r["dataset"] == "mushroom" and r["variant"] != "timing"]
    if mushroom:
        assert {r["encoding"] for r in mushroom} == set(W.ENCODINGS)
    # The fidelity lists are in results.json and keep their rules.
    assert payload["settings"] and payload["verdicts"] and payload["sensitivity"]
    for verdict in payload["verdicts"]:
        Verdict(**verdict)


def test_report_numbers_are_those_of_the_records(quick_run):
    report = (quick_run.outdir / "report.md").read_text()
    records = quick_run.records
    timing = next(r for r in records if r.get("variant") == "timing" and r["dataset"] == "toy")
    assert f"{timing['n_trials']} trials ran as {timing['n_tasks']} Dask tasks on {timing['workers']} worker" in report
    assert f"in {timing['wall_seconds']:.1f} s of wall time" in report
    assert "relation to the paper" in report
    for width, rule in P.READINGS:
        for bias in W.BIASES:
            a, b = W.paired_errors(records, "toy", width, rule, "conformal", bias)
            row = re.search(rf"^\| {width} / {rule}[^|]* \| {bias} \| (\d+) \| ([\d.]+) % \| ([\d.]+) % \|", report,
                            re.MULTILINE)
            assert row, (width, rule, bias)
            assert (int(row[1]), row[2], row[3]) == (a.size, f"{100 * a.mean():.2f}", f"{100 * b.mean():.2f}")
    for (C, sigma), (before, after) in P.PAPER_TABLE_1.items():
        a, b = W.paired_errors(records, "mushroom", "sigma", "train", "conformal", "scaled", C=C, sigma=sigma,
                               encoding="one-hot")
        if a.size:
            assert (f"| one-hot | C = {C:g}, σ = {sigma:g} | {a.size} | {100 * before:.2f} % → {100 * after:.2f} % | "
                    f"{100 * a.mean():.2f} % |") in report
    # Each verdict of results.json is a row of the report's verdict table.
    for verdict in json.loads((quick_run.outdir / "results.json").read_text())["verdicts"]:
        assert f"| {verdict['claim']} | {verdict['verdict']} | " in report


def _toy_records(first, second, bias, converged=True):
    records = []
    for trial, (e1, e2) in enumerate(zip(first, second)):
        base = dict(dataset="toy", trial=trial, width="sigma", encoding="", C=10.0)
        records.append({**base, "variant": "first-pass", "kappa_rule": "", "bias": "", "test_error": e1,
                        "converged": True})
        records.append({**base, "variant": "conformal", "kappa_rule": "train", "bias": bias, "test_error": e2,
                        "converged": converged or trial > 0})
    return records


def test_verdicts_follow_rule_three_on_made_up_trials():
    rng = np.random.default_rng(0)
    e1 = 0.06 + 0.01 * rng.random(200)
    worse = _toy_records(e1, e1 + 0.05, "free")
    improves, magnitude = P._toy_judgements(worse, "sigma", "train", "free")
    assert improves.verdict == "not reproduced" and improves.converged and improves.beyond_noise
    # A magnitude of the paper's own (unstated) toy problem is never refuted by this one.
    assert magnitude.verdict == "inconclusive" and "does not state" in magnitude.evidence
    # The same difference with one unconverged fit: inconclusive, and the evidence says so.
    unconverged = _toy_records(e1, e1 + 0.05, "free", converged=False)
    improves, _ = P._toy_judgements(unconverged, "sigma", "train", "free")
    assert improves.verdict == "inconclusive" and "1 fit(s) not converged" in improves.evidence
    # No change at all is not an improvement.
    same = P._toy_judgements(_toy_records(e1, e1, "none"), "sigma", "train", "none")[0]
    assert same.verdict == "inconclusive"
    better = P._toy_judgements(_toy_records(e1, 0.855 * e1, "scaled"), "sigma", "train", "scaled")
    assert [v.verdict for v in better] == ["reproduced under reading D-scaled bias"] * 2


def test_relative_improvement_and_its_interval():
    e1 = np.array([0.1, 0.2, 0.1, 0.2])
    imp, lo, hi = W.relative_improvement(e1, e1 / 2)
    assert imp == pytest.approx(0.5) and lo == pytest.approx(0.5) and hi == pytest.approx(0.5)
    imp, lo, hi, se = W.relative_improvement(e1, np.array([0.1, 0.1, 0.2, 0.2]), with_se=True)
    assert lo < imp < hi and se > 0


def test_mushroom_encodings_give_one_value_per_attribute():
    names = ["a=x", "a=y", "a=z", "b=p", "b=q"]
    X = np.array([[1, 0, 0, 0, 1], [0, 0, 1, 1, 0]], dtype=float)
    enc = W.mushroom_encodings(X, names)
    np.testing.assert_array_equal(enc["codes"], [[0, 1], [2, 0]])
    np.testing.assert_array_equal(enc["codes-scaled"], [[0, 1], [1, 0]])
    np.testing.assert_array_equal(enc["one-hot"], X)


def _mushroom_records(changes, bias="scaled"):
    """Made-up mushroom trials: at each (C, σ) of Table 1 the second pass changes the first's error by ``changes``."""
    rng = np.random.default_rng(1)
    records = []
    for (C, sigma), change in zip(P.MUSHROOM_SETTINGS, changes):
        for trial in range(50):
            e1 = 0.1 + 0.01 * rng.random()
            base = dict(dataset="mushroom", trial=trial, width="sigma", encoding="one-hot", C=C, sigma=sigma)
            records.append({**base, "variant": "first-pass", "kappa_rule": "", "bias": "", "test_error": e1,
                            "converged": True})
            records.append({**base, "variant": "conformal", "kappa_rule": "train", "bias": bias,
                            "test_error": e1 + change + 0.002 * rng.standard_normal(), "converged": True})
    return records


def test_the_mushroom_claim_holds_only_where_every_cell_of_table_1_does():
    lower = P._mushroom_judgement(_mushroom_records([-0.03] * 4), "scaled", "one-hot")
    assert lower.verdict == "reproduced under reading D-scaled bias" and "4/4" in lower.evidence
    one_worse = P._mushroom_judgement(_mushroom_records([-0.03, -0.03, 0.03, -0.03]), "scaled", "one-hot")
    assert one_worse.verdict == "not reproduced" and "C = 50, σ = 0.6" in one_worse.evidence
    # A change within the noise is no evidence either way, whichever its sign.
    for change in (0.0003, -0.0003):
        within = P._mushroom_judgement(_mushroom_records([-0.03, -0.03, change, -0.03]), "scaled", "one-hot")
        assert within.verdict == "inconclusive" and "C = 50, σ = 0.6" in within.evidence
    assert P._mushroom_judgement(_mushroom_records([-0.03] * 4), "none", "one-hot") is None


def test_a_resumed_run_says_which_trials_its_wall_time_leaves_out():
    timing = {"n_trials": 10000, "n_tasks": 100, "n_tasks_resumed": 91, "n_trials_resumed": 9100}
    assert "9100 trials in 91 of the tasks" in P._resumed_text(timing) and "other 9 tasks" in P._resumed_text(timing)
    assert P._resumed_text({**timing, "n_tasks_resumed": 0, "n_trials_resumed": 0}) == ""
