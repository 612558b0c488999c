"""The Kandola pipelines (Tables 1–6): quick runs end to end; the report's numbers are the records'."""

import json
import re

import numpy as np
import pytest

from pipelines import get_pipeline
from pipelines._kandola import MEASURE_KEYS
from pipelines._kandola_paper import PAPER, cell_agrees, spread
from pipelines._runner import PipelineConfig, run_pipeline

RECORD_KEYS = ("dataset", "algorithm", "matrix", "train_fraction", "repeat", *MEASURE_KEYS)


@pytest.fixture(scope="module")
def quick_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    config = PipelineConfig(quick=True, scheduler="threads", out=out, progress=False)
    return {name: run_pipeline(get_pipeline(name), config) for name in ("kandola_uneven", "kandola_regression")}


@pytest.mark.parametrize("name", ["kandola_uneven", "kandola_regression"])
def test_quick_run_writes_complete_records_and_files(quick_runs, name):
    result = quick_runs[name]
    for filename in ("results.csv", "results.json", "report.md", "tables.png"):
        assert (result.outdir / filename).stat().st_size > 0
    assert (result.outdir / "tables.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    payload = json.loads((result.outdir / "results.json").read_text())
    assert len(payload["records"]) == len(result.records) == 3 * 2 * 4  # fractions × repeats × (algorithm, matrix)
    for rec in result.records:
        assert set(RECORD_KEYS) <= set(rec)
        assert rec["algorithm"] in ("transductive", "inductive") and rec["matrix"] in ("K", "G")
    task = "uneven" if name == "kandola_uneven" else "regression"
    for rec in result.records:
        assert (rec["svc_error"] is None) == (task == "regression")
        assert (rec["rr_error"] is None) == (task == "uneven")


def test_inductive_training_alignment_of_G_is_never_below_K(quick_runs):
    for result in quick_runs.values():
        by_split = {}
        for rec in result.records:
            if rec["algorithm"] == "inductive":
                by_split.setdefault((rec["dataset"], rec["train_fraction"], rec["repeat"]), {})[rec["matrix"]] = rec
        for pair in by_split.values():
            assert pair["G"]["train_alignment"] >= pair["K"]["train_alignment"] - 1e-12


def _cells(report, title):
    """The dkernel ``mean (sd)`` cells of one table of report.md: {(row, header): (mean, sd)}."""
    section = report.split(f"## {title}:")[1].split("\n## ")[0]
    lines = section.split("\n|", 1)[1].split("\n\n")[0].splitlines()  # the first table of the section
    lines = ["|" + lines[0], *lines[1:]]
    headers = [h.strip() for h in lines[0].strip("|").split("|")]
    cells = {}
    for line in lines[2:]:
        values = [v.strip() for v in line.strip("|").split("|")]
        for header, value in zip(headers[1:], values[1:]):
            if header.endswith("dkernel"):
                mean, sd = re.match(r"(-?[\d.]+) \((-?[\d.]+)\)", value).groups()
                cells[(values[0], header)] = (float(mean), float(sd), "✗" in value)
    return cells


@pytest.mark.parametrize("name", ["kandola_uneven", "kandola_regression"])
def test_report_numbers_are_the_records(quick_runs, name):
    result = quick_runs[name]
    report = (result.outdir / "report.md").read_text()
    module = get_pipeline(name)
    agreeing = total = 0
    for dataset, algorithm in module.TABLES:
        if not any(r["dataset"] == dataset for r in result.records):
            assert PAPER[(dataset, algorithm)][0] in report.split("Not run")[1].splitlines()[0]
            continue
        title, paper = PAPER[(dataset, algorithm)]
        cells = _cells(report, title)
        from pipelines._kandola_paper import HEADERS

        for (matrix, pct), paper_cells in paper.items():
            for key, paper_value in paper_cells.items():
                mean, sd, marked = cells[(f"{matrix}{pct}", f"{HEADERS[key]} dkernel")]
                got = spread(result.records, key, dataset=dataset, algorithm=algorithm, matrix=matrix,
                             train_fraction=pct / 100)
                digits = 2 if key == "rr_error" and dataset == "auto-mpg" else 3
                assert mean == pytest.approx(round(got[0], digits), abs=10**-digits)
                assert sd == pytest.approx(round(got[1], digits), abs=10**-digits)
                assert marked == (not cell_agrees(paper_value, got))
                agreeing += not marked
                total += 1
    assert f"**Overall: {agreeing}/{total} cells agree with the paper**" in report


def _records_around_the_paper(dataset, algorithm):
    """Two repeats per cell of a table, their mean placed against the paper's by the cell's position: equal, apart
    by more than the paper's sd but within the sum of the two sds, or beyond the sum (either side of the paper's)."""
    records = []
    for i, ((matrix, pct), cells) in enumerate(PAPER[(dataset, algorithm)][1].items()):
        pair = [{"dataset": dataset, "algorithm": algorithm, "matrix": matrix, "train_fraction": pct / 100,
                 "repeat": repeat} for repeat in (0, 1)]
        for j, (key, (mean, sd)) in enumerate(cells.items()):
            half = 0.01 * (1 + j)  # the two values are the mean ± half: their sd is half · √2
            measured_sd = half * np.sqrt(2)
            offset = (0.0, sd + 0.9 * measured_sd, sd + 1.1 * measured_sd)[(i + j) % 3] * (-1) ** i
            pair[0][key], pair[1][key] = mean + offset - half, mean + offset + half
        records += pair
    return records


@pytest.mark.parametrize("table", [("toy", "transductive"), ("sinc", "transductive")])
def test_the_crosses_and_the_disagreement_counts_are_cell_agrees_of_the_records(table):
    from pipelines._kandola import side_by_side
    from pipelines._kandola_checks import disagreement_line
    from pipelines._kandola_paper import HEADERS

    dataset, algorithm = table
    records = _records_around_the_paper(dataset, algorithm)
    _, rows, verdicts = side_by_side(records, dataset, algorithm)
    paper = PAPER[table][1]
    expected, counts = [], {}
    for row, ((matrix, pct), cells) in zip(rows, paper.items()):
        assert row[""] == f"{matrix}{pct}"
        for key, paper_value in cells.items():
            got = spread(records, key, dataset=dataset, algorithm=algorithm, matrix=matrix, train_fraction=pct / 100)
            agrees = cell_agrees(paper_value, got)
            expected.append(agrees)
            assert row[f"{HEADERS[key]} dkernel"].endswith(" ✗") == (not agrees)
            differ, total = counts.get(HEADERS[key], (0, 0))
            counts[HEADERS[key]] = (differ + (not agrees), total + 1)
            # Within the sum of the two sds but beyond the paper's alone: agreement by the paper's yardstick only.
            if paper_value[1] < abs(got[0] - paper_value[0]) <= paper_value[1] + got[1]:
                assert agrees
    assert verdicts == expected and 0 < sum(expected) < len(expected)
    line = disagreement_line(records, dataset, algorithm)
    assert line.startswith(f"**Why {expected.count(False)} of {len(expected)} cells differ**")
    for header, (differ, total) in counts.items():
        assert f"{header} {differ}/{total}" in line


def test_spread_is_the_sample_standard_deviation():
    records = [{"dataset": "toy", "f1": v} for v in (0.5, 0.7, 0.9)]
    mean, sd, count = spread(records, "f1", dataset="toy")
    assert (mean, count) == (pytest.approx(0.7), 3) and sd == pytest.approx(np.std([0.5, 0.7, 0.9], ddof=1))
    assert spread(records, "f1", dataset="medline") is None


def test_medline_words_are_porter_stems_without_stop_words_or_punctuation():
    import pickle

    from dkernel.datasets._stemming import PorterAnalyzer

    analyzer = pickle.loads(pickle.dumps(PorterAnalyzer()))
    assert analyzer("The patients were running; relational studies, generalizations!") == [
        "patient", "run", "relat", "studi", "gener"]


@pytest.mark.parametrize("name", ["kandola_uneven", "kandola_regression"])
def test_the_notes_under_each_table_are_the_records(quick_runs, name):
    from pipelines._kandola_methods import C_GRID

    result = quick_runs[name]
    report = (result.outdir / "report.md").read_text()
    for dataset, algorithm in get_pipeline(name).TABLES:
        if not any(r["dataset"] == dataset for r in result.records):
            continue
        title, paper = PAPER[(dataset, algorithm)]
        section = report.split(f"## {title}:")[1].split("\n## ")[0]
        marked = sum(m for _, _, m in _cells(report, title).values())
        assert f"**Why {marked} of {sum(len(c) for c in paper.values())} cells differ**" in section
        match = dict(dataset=dataset, algorithm=algorithm, matrix="K", train_fraction=0.8)
        check = section.split("Measured check")[1]
        row = next(line for line in check.splitlines() if line.startswith("| K80 |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        if name == "kandola_uneven":
            by_C = {C: spread(result.records, f"error_svc_C{C:g}", **match) for C in C_GRID}
            best = min(by_C, key=lambda C: by_C[C][0])
            assert cells[-1] == f"{best:g}" and cells[-2].startswith(f"{by_C[best][0]:.3f}")
            share = spread(result.records, "error_all_positive", dataset=dataset, algorithm=algorithm, matrix="K")[0]
            assert f"+1 ({share:.3f}" in section or f"relevant errs on {share:.3f}" in section
        else:
            for column, key in ((2, "alignment_train_wide"), (4, "alignment_test_wide"), (6, "error_rr_wide")):
                assert cells[column].startswith(f"{spread(result.records, key, **match)[0]:.3f}")
