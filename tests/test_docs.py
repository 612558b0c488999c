"""The examples in README.md and in the docstrings run and print what they show."""

import doctest
import importlib
import pkgutil
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


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_ci_runs_the_readme_commands_as_written():
    import re

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
