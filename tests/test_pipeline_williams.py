"""The williams_conformal pipeline: its quick run end to end on a LocalCluster; the report's numbers are the records'."""

import json
import re

import numpy as np
import pytest

from pipelines import _williams as W
from pipelines import williams_conformal as P
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
    for key in ("dataset", "trial", "variant", "kappa", "C", "sigma", "test_error"):
        assert all(key in r for r in toy), key
    assert {(r["width"], r["kappa_rule"]) for r in toy if r["variant"] == "conformal"} == set(P.READINGS)


def test_report_numbers_are_those_of_the_records(quick_run):
    report = (quick_run.outdir / "report.md").read_text()
    records = quick_run.records
    timing = next(r for r in records if r.get("variant") == "timing" and r["dataset"] == "toy")
    assert f"{timing['n_trials']} trials ran as {timing['n_tasks']} Dask tasks on {timing['workers']} worker" in report
    assert f"in {timing['wall_seconds']:.1f} s of wall time" in report
    e1, e2 = W.paired_errors(records, "toy", *W.PRINCIPLED, "conformal")
    assert e1.size == P.QUICK_TOY_TRIALS
    imp, lo, hi = W.relative_improvement(e1, e2)
    assert f"| {100 * imp:.2f} %, 95 % bootstrap interval [{100 * lo:.2f} %, {100 * hi:.2f} %] ({e1.size} trials) |" \
        in report
    assert f"| first-pass error | not given | {100 * e1.mean():.2f} % |" in report
    for width, rule in P.READINGS:
        a, b = W.paired_errors(records, "toy", width, rule, "conformal")
        row = re.search(rf"^\| {width} / {rule}[^|]* \| (\d+) \| ([\d.]+) % \| ([\d.]+) % \|", report, re.M)
        assert row, (width, rule)
        assert (int(row[1]), row[2], row[3]) == (a.size, f"{100 * a.mean():.2f}", f"{100 * b.mean():.2f}")
    for (C, sigma), (before, after) in P.PAPER_TABLE_1.items():
        a, b = W.paired_errors(records, "mushroom", "sigma", "train", "conformal", C=C, sigma=sigma)
        if a.size:
            assert (f"| C = {C:g}, σ = {sigma:g} | {a.size} | {100 * before:.2f} % | {100 * a.mean():.2f} % | "
                    f"{100 * after:.2f} % | {100 * b.mean():.2f} % |") in report


def test_relative_improvement_and_its_interval():
    e1 = np.array([0.1, 0.2, 0.1, 0.2])
    imp, lo, hi = W.relative_improvement(e1, e1 / 2)
    assert imp == pytest.approx(0.5) and lo == pytest.approx(0.5) and hi == pytest.approx(0.5)
    imp, lo, hi = W.relative_improvement(e1, np.array([0.1, 0.1, 0.2, 0.2]))
    assert lo < imp < hi
