"""The li_generalized_bias pipeline: a quick run end to end, its report generated from its records."""

import csv
import json
import os
from pathlib import Path

import pytest

from pipelines import get_pipeline
from pipelines._fidelity import Verdict
from pipelines._runner import PipelineConfig, run_pipeline

NAME = "li_generalized_bias"


def _data_available():
    folder = Path(os.environ.get("DKERNEL_DATA", ""))
    return (folder / "coil20").is_dir() and (folder / "20newsgroups").is_dir()


pytestmark = [
    pytest.mark.data,
    pytest.mark.skipif(not _data_available(), reason="needs coil20 and 20newsgroups under DKERNEL_DATA"),
]


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    config = PipelineConfig(quick=True, scheduler="threads", out=out, progress=False)
    return run_pipeline(get_pipeline(NAME), config)


def test_quick_run_writes_records_report_and_figures(quick):
    folder = quick.outdir
    for name in ("results.csv", "results.json", "report.md", "fig1_coil20.png", "fig3_newsgroups.png"):
        assert (folder / name).is_file(), name
    payload = json.loads((folder / "results.json").read_text())
    assert payload["pipeline"] == NAME and payload["config"]["quick"] is True
    with open(folder / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(quick.records) == len(payload["records"])
    for rec in quick.records:
        assert {"dataset", "figure", "method", "n_train", "setting", "repeat", "accuracy", "converged",
                "n_test"} <= rec.keys()
        assert 0.0 <= rec["accuracy"] <= 1.0 and isinstance(rec["converged"], bool)
    methods = {(r["figure"], r["method"]) for r in quick.records}
    assert {("1", "svm"), ("1", "knn"), ("1", "svm-gb"), ("3", "svm-bow"), ("3", "svm-plsa"), ("3", "svm-gb")} <= methods
    # Fig. 3: every method at every C of the grid, the run's choice, and pLSA fitted on all documents.
    news = [r for r in quick.records if r["figure"] == "3"]
    grid = get_pipeline(NAME).N.QUICK_C_GRID
    assert {(r["method"], r["setting"]) for r in news} == {
        *((m, f"C = {C:g}") for m in ("svm-bow", "svm-plsa", "svm-gb") for C in grid),
        *((m, "as run") for m in ("svm-bow", "svm-plsa", "svm-gb")),
        ("svm-plsa", "pLSA on all documents"), ("svm-gb", "pLSA on all documents")}
    gb = next(r for r in news if r["method"] == "svm-gb" and r["setting"] == "as run")
    assert gb["svc_C"] == next(r for r in news if r["method"] == "svm-bow" and r["setting"] == "as run")["svc_C"]
    assert payload["settings"] and "verdicts" in payload
    for verdict in payload["verdicts"]:
        Verdict(**verdict)


def test_report_numbers_equal_the_records(quick):
    report = (quick.outdir / "report.md").read_text()
    labels = get_pipeline(NAME).METHOD_LABELS
    assert "relation to the paper" in report
    # Fig. 1 table: one row per training size, one column per method, the accuracy of the record.
    header = next(line for line in report.splitlines() if line.startswith("| n_train |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    for rec in (r for r in quick.records if r["figure"] == "1"):
        line = next(line for line in report.splitlines() if line.startswith(f"| {rec['n_train']} |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[columns.index(labels[rec["method"]])] == f"{rec['accuracy']:.3f}"
    for rec in (r for r in quick.records if r["figure"] == "3" and r["setting"] == "as run"):
        subset = rec["dataset"].split("-")[-1] + ".*"
        line = next(line for line in report.splitlines()
                    if line.startswith(f"| {subset} | {rec['n_train']} | {rec['n_test']} |"))
        assert f"| {rec['accuracy']:.3f} |" in line and "±" not in line  # one split: no standard error shown
    # Each verdict is a row of the report's verdict table, its evidence with it.
    for verdict in json.loads((quick.outdir / "results.json").read_text())["verdicts"]:
        assert f"| {verdict['claim']} | {verdict['verdict']} | {verdict['evidence']} |" in report.replace("\\|", "|")
    gb, knn = (next(r["accuracy"] for r in quick.records if r["figure"] == "1" and r["method"] == m)
               for m in ("svm-gb", "knn-geodesic"))
    assert f"SVM-GB {gb:.3f}, kNN {knn:.3f}" in report


def test_a_quick_run_says_it_is_reduced(quick):
    report = (quick.outdir / "report.md").read_text()
    line = next(line for line in report.splitlines() if line.startswith("| run size |"))
    assert "differs from the paper" in line and "--quick" in line
