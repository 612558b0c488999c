"""The li_generalized_bias pipeline: a quick run end to end, its report generated from its records."""

import csv
import json
import os
import re
from pathlib import Path

import pytest

from pipelines import get_pipeline
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
        assert {"dataset", "figure", "method", "n_train", "setting", "repeat", "accuracy"} <= rec.keys()
        assert 0.0 <= rec["accuracy"] <= 1.0
    methods = {(r["figure"], r["method"]) for r in quick.records}
    assert {("1", "svm"), ("1", "knn"), ("1", "svm-gb"), ("3", "svm-bow"), ("3", "svm-plsa"), ("3", "svm-gb")} <= methods


def test_report_numbers_equal_the_records(quick):
    report = (quick.outdir / "report.md").read_text()
    labels = get_pipeline(NAME).METHOD_LABELS
    # Fig. 1 table: one row per training size, one column per method, each "mean ± se" of the records.
    header = next(line for line in report.splitlines() if line.startswith("| n_train |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    for rec in (r for r in quick.records if r["figure"] == "1"):
        line = next(line for line in report.splitlines() if line.startswith(f"| {rec['n_train']} |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[columns.index(labels[rec["method"]])] == f"{rec['accuracy']:.3f} ± 0.000"
    for rec in (r for r in quick.records if r["figure"] == "3"):
        subset = rec["dataset"].split("-")[-1] + ".*"
        line = next(line for line in report.splitlines() if line.startswith(f"| {subset} | {rec['n_train']} |"))
        assert f"{rec['accuracy']:.3f} ± 0.000" in line
    # The verdict on SVM-GB against SVM on the bag of words is counted from the records.
    news = [r for r in quick.records if r["figure"] == "3"]
    acc = {(r["dataset"], r["n_train"], r["method"]): r["accuracy"] for r in news}
    cells = {(d, n) for d, n, _ in acc}
    wins = sum(acc[d, n, "svm-gb"] > acc[d, n, "svm-bow"] for d, n in cells)
    assert re.search(rf"SVM-GB > SVM \(BoW\) in {wins}/{len(cells)} \(subset, size\) cells", report)
    gb, knn = (next(r["accuracy"] for r in quick.records if r["figure"] == "1" and r["method"] == m)
               for m in ("svm-gb", "knn-geodesic"))
    assert f"SVM-GB {gb:.3f}, kNN geodesic {knn:.3f}" in report
    agreement = {m: next(r["knn_agreement"] for r in quick.records if r["figure"] == "1" and r["method"] == m)
                 for m in ("svm", "svm-gb")}
    assert all(0.0 <= a <= 1.0 for a in agreement.values())
    assert (f"test predictions equal to geodesic kNN's: SVM-GB {agreement['svm-gb']:.3f}, SVM "
            f"{agreement['svm']:.3f}") in report


def test_claims_a_quick_run_cannot_measure_say_so(quick):
    report = (quick.outdir / "report.md").read_text()
    line = next(line for line in report.splitlines() if "800 training documents or more" in line)
    assert "no training size of 800 or more in this run" in line and line.rstrip().endswith("| not measured |")
