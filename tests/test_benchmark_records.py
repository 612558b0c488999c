"""Recorded benchmark figures name the commit they measured, and no module they measure changed since."""

import ast
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("bench_*.py"))


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
