"""The examples in README.md and in the docstrings run and print what they show; the docs' links and figures hold."""

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import dkernel

ROOT = Path(__file__).resolve().parents[1]

#: Every module of the package (``__main__`` modules run a command when imported): each docstring example runs.
MODULES = sorted(info.name for info in pkgutil.walk_packages(dkernel.__path__, "dkernel.")
                 if not info.name.endswith(".__main__"))


def test_readme_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = doctest.testfile(str(ROOT / "README.md"), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 10
    assert result.failed == 0


#: The documents a reader follows links in.
DOCUMENTS = ["README.md", "cluster/README.md", "benchmarks/README.md",
             *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]

_FENCED = re.compile(r"^(```|~~~~).*?^\1", re.DOTALL | re.MULTILINE)
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")


def relative_links(markdown):
    """The targets of the Markdown links of ``markdown`` outside code blocks that are not URLs or anchors."""
    prose = _FENCED.sub("", markdown)
    return [target.split("#", 1)[0] for target in _LINK.findall(prose)
            if not re.match(r"[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")]


def test_relative_links_find_links_and_skip_urls_anchors_and_code():
    text = ("[a](docs/design.md) [b](https://dask.org) [c](#speed) [d](../x.py#L3)\n"
            "```\n[e](not/a/link.md)\n```\n")
    assert relative_links(text) == ["docs/design.md", "../x.py"]


def test_readme_is_a_short_users_document():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) < 350, f"README.md has {len(lines)} lines; keep it under 350 (move detail to docs/)"
    assert (ROOT / "docs" / "design.md").is_file()


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_relative_link_points_to_an_existing_file(document):
    path = ROOT / document
    broken = [target for target in relative_links(path.read_text()) if not (path.parent / target).exists()]
    assert not broken, f"{document} links to paths that do not exist: {broken}"


def test_readme_speed_figures_come_from_the_benchmark_records():
    readme = (ROOT / "README.md").read_text()
    speed = readme.split("\n## Speed\n", 1)[1].split("\n## ", 1)[0]
    records = "\n".join(p.read_text() for p in sorted((ROOT / "benchmarks" / "results").glob("*.txt")))
    prose = re.sub(r"\b[0-9a-f]{10,40}\b", "", speed.replace("100 000", "100000"))   # commit names aside
    figures = re.findall(r"\d+(?:\.\d+)?", prose)
    assert len(figures) > 8
    unrecorded = [f for f in figures if not re.search(r"(?<![\d.])" + re.escape(f) + r"(?!\d)", records)]
    assert not unrecorded, f"README.md's Speed section quotes figures that no record in benchmarks/results holds: " \
                           f"{unrecorded}"


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_ci_runs_the_readme_commands_as_written():
    readme = (ROOT / "README.md").read_text()
    main_command, test_command = (block.split("```", 1)[0].strip() for block in readme.split("```bash\n")[1:3])
    assert "DKERNEL_DATA=../shared/data" in main_command and "pytest" in test_command
    ci = (ROOT / ".ci" / "run").read_text()
    lines = ci.splitlines()
    # Each README command is a line of .ci/run, run from the repository root, with nothing exported around it.
    assert main_command in lines and test_command in lines
    assert lines.index(main_command) < lines.index(test_command)
    assert lines.index('cd "$(dirname "$0")/.."') < lines.index(main_command)
    assert "export DKERNEL_DATA" not in ci and "unset DKERNEL_DATA" in ci
    assert re.findall(r"\brm\b.*", ci) == ["rm -rf .venv"]
