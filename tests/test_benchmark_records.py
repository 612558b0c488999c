"""Recorded benchmark figures name the commit they measured, no module they measure changed since, and they are
what a user sees: one fit per fresh process beside scikit-learn and oneDAL, on a machine and versions named."""

import ast
import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("bench_*.py"))
#: The scripts that compare dkernel's fits with scikit-learn's and oneDAL's.
PEER_COMPARISONS = ("bench_centered_fit.py", "bench_matrix.py", "bench_scale.py", "bench_svm.py")


def _readme_module():
    spec = importlib.util.spec_from_file_location("benchmarks_readme_for_records", BENCHMARKS / "_readme.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


readme = _readme_module()


def _git(*args, check=True):
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=check)


def _in_git_history():
    try:
        return _git("rev-parse", "HEAD", check=False).returncode == 0 and \
            _git("rev-parse", "--is-shallow-repository").stdout.strip() == "false"
    except OSError:
        return False


def _measures(script):
    """The ``MEASURES`` tuple of a benchmark script, read without running it."""
    tree = ast.parse((BENCHMARKS / script).read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "MEASURES" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{script} declares no MEASURES (the modules its figures depend on)")


def _recorded_commit(script):
    record = BENCHMARKS / "results" / script.replace(".py", ".txt")
    assert record.exists(), f"no recorded run of {script}: save its output in {record.relative_to(REPO)}"
    first = record.read_text().splitlines()[0]
    match = re.match(r"# commit (\S+)  \S+  python benchmarks/" + re.escape(script), first)
    assert match, f"{record.name} does not start with the header benchmarks/_provenance.py prints: {first!r}"
    return match.group(1)


@pytest.mark.parametrize("script", SCRIPTS)
def test_each_benchmark_declares_existing_modules(script):
    modules = _measures(script)
    assert modules, script
    for module in modules:
        assert (REPO / module).exists(), f"{script}: MEASURES names {module}, which does not exist"


@pytest.mark.skipif(not _in_git_history(), reason="needs the repository's git history (not a shallow clone)")
@pytest.mark.parametrize("script", SCRIPTS)
def test_recorded_figures_are_not_older_than_the_code_they_measure(script):
    sha = _recorded_commit(script)
    assert not sha.endswith("+modified"), f"{script} was recorded on a modified tree ({sha}); commit, then re-run"
    assert _git("cat-file", "-e", sha + "^{commit}", check=False).returncode == 0, f"unknown commit {sha}"
    last_change = _git("log", "-1", "--format=%H", "--", *_measures(script)).stdout.strip()
    newer = _git("merge-base", "--is-ancestor", last_change, sha, check=False).returncode == 0
    assert newer, (
        f"benchmarks/results/{script.replace('.py', '.txt')} measured commit {sha[:10]}, but {last_change[:10]} "
        f"changed the code it measures since: re-run `python benchmarks/{script}` and record its output"
    )
    readme = (BENCHMARKS / "README.md").read_text()
    section = readme.split(f"`{script}`", 2)[-1].split("\n## ", 1)[0]
    assert sha[:10] in section, f"benchmarks/README.md's section on {script} does not name commit {sha[:10]}"


def _runs(script):
    record = BENCHMARKS / "results" / script.replace(".py", ".txt")
    assert record.exists(), f"no recorded run of {script}: save its output in {record.relative_to(REPO)}"
    _, runs = readme.parse_record(record.read_text())
    assert runs, f"{record.name} holds no run header (# commit SHA  DATE  COMMAND)"
    return runs


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_recorded_run_names_its_machine_and_library_versions(script):
    for run in _runs(script):
        assert any(re.search(r"\d+ CPUs", line) for line in run["machine"]), (
            f"{run['command']} at {run['commit'][:10]}: no machine line (N CPUs, ...); re-record with the current script")
        assert any(" numpy " in f" {line}" and " dkernel " in line for line in run["versions"]), (
            f"{run['command']} at {run['commit'][:10]}: no versions line (python X, numpy Y, dkernel Z, ...); "
            f"re-record with the current script")


def _fit_tables(run):
    return [(title, labels, rows) for title, labels, rows in readme.fit_tables(run)
            if {"problem", *readme.SUMMARY_COLUMNS} <= set(labels)]


@pytest.mark.parametrize("script", PEER_COMPARISONS)
def test_peer_comparisons_are_recorded_one_fit_per_fresh_process(script):
    for run in _runs(script):
        where = f"benchmarks/results/{script.replace('.py', '.txt')}, run {run['command']!r} at {run['commit'][:10]}"
        tables = _fit_tables(run)
        assert tables, (f"{where}: no table of fresh-process fits (dkernel, sklearn, oneDAL, dk/sk, dk/oneDAL); "
                        f"it predates one fit per fresh process: re-run `python benchmarks/{script}` and record it")
        assert any(line.startswith("## import of the SVC class") for line in run["body"]), (
            f"{where}: the import time is not reported apart from the fits")
        assert any("scikit-learn-intelex " in line and "not installed" not in line.split("scikit-learn-intelex")[1]
                   .split(",")[0] for line in run["versions"]), (
            f"{where}: recorded without scikit-learn-intelex (pip install dkernel[bench]): no oneDAL column")


def test_matrix_record_covers_every_part_and_the_sizes_of_the_targets():
    runs = _runs("bench_matrix.py")
    headings = [line for run in runs for line in run["body"] if line.startswith("## ")]
    for part in ("tiny sets", "USPS", "20 Newsgroups", "synthetic", "right after pip install", "targets"):
        assert any(part in heading for heading in headings), f"bench_matrix.txt has no {part!r} table"
    sizes = {int(row[labels.index("n")]) for run in runs for title, labels, rows in _fit_tables(run)
             if title.startswith("synthetic") for row in rows}
    assert {12000, 20000, 40000} <= sizes, f"bench_matrix.txt's synthetic part covers n = {sorted(sizes)} only"
