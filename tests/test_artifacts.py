"""Safe writing of Gram stores, derived stores, models and pipeline results; provenance of stores.

Every writer (``GramMatrix.compute(store=)`` / ``dkernel gram``, ``to_zarr`` /
``dkernel center --out``, ``SVC.save`` / ``dkernel fit --model``,
``run_pipeline`` / ``dkernel run``) refuses a path that is not its own kind of
artifact and leaves it untouched, replaces its own kind only with overwrite,
and survives a SIGKILL in the middle of a write with the previous artifact
intact. Values are compared with kernels and centerings computed in numpy.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

import numpy as np
import pytest
import zarr

from dkernel._runtime import artifacts
from dkernel.centering import Centering
from dkernel.cli import main
from dkernel.exceptions import ArtifactPathError, StoreMismatchError
from dkernel.gram import GramMatrix
from dkernel.gram import weights_fingerprint
from dkernel.views import CenteredGram, NormalizedGram
from dkernel.svm import SVC, load_model
from pipelines._command import main_for
from pipelines._runner import PipelineConfig, run_pipeline

REPO = Path(__file__).resolve().parents[1]
GAMMA = 0.5


# --------------------------------------------------------------------------- #
# Ground truth in numpy
# --------------------------------------------------------------------------- #


def rbf(X, gamma):
    sq = (X**2).sum(1)
    return np.exp(-gamma * np.maximum(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0))


def class_balanced_centered(K, y):
    """Meilă eq. (14) with γ_i = 1/(2 n_class(i)): K - 1hᵀ - h1ᵀ + h0."""
    gamma = np.where(y == y[0], 0.5 / np.sum(y == y[0]), 0.5 / np.sum(y != y[0]))
    h = K @ gamma
    return K - h[:, None] - h[None, :] + gamma @ K @ gamma, float(gamma @ K @ gamma)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=60) > 0, 1, -1)
    return X, y


def make_store(path, X, gamma=GAMMA):
    return GramMatrix.compute(X, kernel="rbf", gamma=gamma, store=path, chunk=16, progress=False)


def make_model(X, y, C=1.0):
    return SVC(kernel="rbf", gamma=0.3, C=C).fit(X, y)


def foreign_folder(path):
    path.mkdir()
    (path / "notes.txt").write_text("keep me")
    return path


def assert_untouched(folder):
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    assert (folder / "notes.txt").read_text() == "keep me"


def hidden_siblings(parent):
    return sorted(p.name for p in parent.iterdir() if ".dkernel-" in p.name)


# --------------------------------------------------------------------------- #
# A small pipeline module (the runner's protocol) for the results writer
# --------------------------------------------------------------------------- #


def fake_pipeline(calls=None, value=1.0):
    calls = calls if calls is not None else []

    def make_tasks(config):
        calls.append("make_tasks")
        return [{"repeat": r} for r in range(2)]

    def run_task(task):
        calls.append("run_task")
        return [{"dataset": "toy", "repeat": task["repeat"], "test_error": value * (task["repeat"] + 1) / 10}]

    def write_report(result, outdir):
        path = Path(outdir) / "report.md"
        path.write_text(f"# fake_pipeline\n\nvalue {value}\n")
        return [path]

    return types.SimpleNamespace(NAME="fake_pipeline", DESCRIPTION="a toy pipeline", make_tasks=make_tasks,
                                 run_task=run_task, write_report=write_report)


def run_fake(out, overwrite=False, calls=None, value=1.0):
    config = PipelineConfig(quick=True, scheduler="threads", out=out, progress=False, overwrite=overwrite)
    return run_pipeline(fake_pipeline(calls, value), config)


# --------------------------------------------------------------------------- #
# The rule itself
# --------------------------------------------------------------------------- #


def test_artifact_kind_is_read_from_the_metadata(data, tmp_path):
    X, y = data
    make_store(tmp_path / "K.zarr", X)
    make_model(X, y).save(tmp_path / "model.zarr")
    run_fake(tmp_path / "results")
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "results.json").write_text(json.dumps({"pipeline": "x", "records": []}))
    other_zarr = zarr.open_group(str(tmp_path / "other.zarr"), mode="w")
    other_zarr.attrs["format"] = "something-else"
    foreign_folder(tmp_path / "mine")
    kinds = {name: artifacts.artifact_kind(tmp_path / name)
             for name in ("K.zarr", "model.zarr", "results/fake_pipeline", "legacy", "other.zarr", "mine",
                          "nothing")}
    assert kinds == {"K.zarr": "gram", "model.zarr": "model", "results/fake_pipeline": "results",
                     "legacy": "results", "other.zarr": None, "mine": None, "nothing": None}


def test_check_target_refuses_what_is_not_its_kind(data, tmp_path):
    X, y = data
    make_store(tmp_path / "K.zarr", X)
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "empty").mkdir()
    foreign_folder(tmp_path / "mine")
    assert artifacts.check_target(tmp_path / "new", "gram") == "absent"
    assert artifacts.check_target(tmp_path / "empty", "model") == "empty"
    assert artifacts.check_target(tmp_path / "K.zarr", "gram", overwrite=True) == "same"
    assert artifacts.check_target(tmp_path / "K.zarr", "gram", reuse=True) == "same"
    cases = [("file.txt", "gram", True, "is a file"), ("mine", "gram", True, "not a dkernel Gram store"),
             ("K.zarr", "model", True, "holds a dkernel Gram store, not a dkernel model"),
             ("K.zarr", "gram", False, "already holds a dkernel Gram store")]
    for name, kind, overwrite, message in cases:
        with pytest.raises(ArtifactPathError, match=message):
            artifacts.check_target(tmp_path / name, kind, overwrite)
    assert_untouched(tmp_path / "mine")


def test_remove_own_deletes_only_dkernel_artifacts(data, tmp_path):
    X, _ = data
    make_store(tmp_path / "K.zarr", X)
    foreign_folder(tmp_path / "mine")
    with pytest.raises(ArtifactPathError, match="not deleted"):
        artifacts.remove_own(tmp_path / "mine", "gram")
    with pytest.raises(ArtifactPathError, match="not deleted"):
        artifacts.remove_own(tmp_path / "K.zarr", "model")
    assert_untouched(tmp_path / "mine")
    assert GramMatrix.open(tmp_path / "K.zarr").complete
    artifacts.remove_own(tmp_path / "K.zarr", "gram")
    assert not (tmp_path / "K.zarr").exists()


def test_failed_write_leaves_the_previous_artifact(data, tmp_path):
    X, y = data
    old = make_model(X, y, C=1.0)
    path = old.save(tmp_path / "model.zarr")
    with pytest.raises(RuntimeError, match="disk full"):
        with artifacts.writing(path, "model", overwrite=True) as tmp:
            (Path(tmp) / "zarr.json").write_text("{}")
            raise RuntimeError("disk full")
    np.testing.assert_array_equal(load_model(path).decision_function(X), old.decision_function(X))
    assert hidden_siblings(tmp_path) == []


# --------------------------------------------------------------------------- #
# Every writer: a foreign folder is refused (even with overwrite) and survives
# --------------------------------------------------------------------------- #


def _writers(data, tmp_path):
    X, y = data
    K = make_store(tmp_path / "K.zarr", X)
    model = make_model(X, y)
    view = CenteredGram(K, Centering.class_balanced(y))
    return {
        "gram": lambda path, overwrite: GramMatrix.compute(X, kernel="rbf", gamma=GAMMA, store=path, chunk=16,
                                                           progress=False, overwrite=overwrite),
        "to_zarr": lambda path, overwrite: view.to_zarr(path, overwrite=overwrite),
        "save": lambda path, overwrite: model.save(path, overwrite=overwrite),
        "run": lambda path, overwrite: run_fake(path.parent, overwrite=overwrite),
    }


@pytest.mark.parametrize("writer", ["gram", "to_zarr", "save", "run"])
@pytest.mark.parametrize("overwrite", [False, True])
def test_every_writer_refuses_a_foreign_folder(writer, overwrite, data, tmp_path):
    write = _writers(data, tmp_path)[writer]
    parent = tmp_path / "out"
    parent.mkdir()
    target = foreign_folder(parent / ("fake_pipeline" if writer == "run" else "target"))
    with pytest.raises(ArtifactPathError, match="not deleted"):
        write(target, overwrite)
    assert_untouched(target)
    assert sorted(p.name for p in parent.iterdir()) == [target.name]  # nothing written beside it either


@pytest.mark.parametrize("writer", ["gram", "to_zarr", "save", "run"])
def test_every_writer_refuses_an_artifact_of_another_kind(writer, data, tmp_path):
    X, y = data
    write = _writers(data, tmp_path)[writer]
    parent = tmp_path / "out"
    parent.mkdir()
    target = parent / ("fake_pipeline" if writer == "run" else "target")
    model = make_model(X, y, C=3.0)
    if writer == "save":
        make_store(target, X)
    else:
        model.save(target)
    with pytest.raises(ArtifactPathError, match="overwrite replaces only"):
        write(target, True)
    if writer == "save":
        np.testing.assert_array_equal(GramMatrix.open(target).to_numpy(), GramMatrix.open(tmp_path / "K.zarr")
                                      .to_numpy())
    else:
        np.testing.assert_array_equal(load_model(target).decision_function(X), model.decision_function(X))


@pytest.mark.parametrize("writer", ["gram", "to_zarr", "save", "run"])
def test_every_writer_refuses_a_path_under_a_file_before_writing(writer, data, tmp_path):
    write = _writers(data, tmp_path)[writer]
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    target = a_file / "deeper" / ("fake_pipeline" if writer == "run" else "target")
    with pytest.raises(ArtifactPathError, match=f"{a_file} is a file, so .* cannot be written at"):
        write(target, False)
    assert a_file.read_text() == "mine"


def test_run_command_line_refuses_out_under_a_file_before_any_task(tmp_path, capsys):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    calls = []
    argv = ["--scheduler", "threads", "--out", str(a_file), "--no-progress"]
    assert main_for(fake_pipeline(calls), argv) == 2
    assert f"{a_file} is a file" in capsys.readouterr().err
    assert "run_task" not in calls and a_file.read_text() == "mine"


def test_an_empty_folder_is_used(data, tmp_path):
    X, y = data
    (tmp_path / "K.zarr").mkdir()
    K = make_store(tmp_path / "K.zarr", X)
    np.testing.assert_allclose(K.to_numpy(), rbf(X, GAMMA), atol=1e-12)
    (tmp_path / "model.zarr").mkdir()
    make_model(X, y).save(tmp_path / "model.zarr")
    assert artifacts.artifact_kind(tmp_path / "model.zarr") == "model"


# --------------------------------------------------------------------------- #
# overwrite replaces an artifact of the same kind
# --------------------------------------------------------------------------- #


def test_gram_overwrite_replaces_a_gram_store_beside_it(data, tmp_path):
    X, _ = data
    make_store(tmp_path / "K.zarr", X, gamma=0.5)
    with pytest.raises(StoreMismatchError, match="gamma=0.5"):
        make_store(tmp_path / "K.zarr", X, gamma=0.2)
    replaced = GramMatrix.compute(X, kernel="rbf", gamma=0.2, store=tmp_path / "K.zarr", chunk=16, progress=False,
                                  overwrite=True)
    assert replaced.path == str(tmp_path / "K.zarr")
    np.testing.assert_allclose(GramMatrix.open(tmp_path / "K.zarr").to_numpy(), rbf(X, 0.2), atol=1e-12)
    assert hidden_siblings(tmp_path) == []


@pytest.mark.parametrize("exchange", [True, False], ids=["atomic-exchange", "renamed-aside"])
def test_a_replaced_artifact_is_swapped_in_one_step_where_the_system_allows(data, tmp_path, monkeypatch, exchange):
    X, _ = data
    make_store(tmp_path / "K.zarr", X, gamma=0.5)
    renames = []
    rename = os.rename
    monkeypatch.setattr(artifacts.os, "rename", lambda a, b: renames.append((a, b)) or rename(a, b))
    if not exchange:  # a system or filesystem without renameat2's exchange
        monkeypatch.setattr(artifacts, "_exchange", lambda a, b: False)
    elif artifacts._renameat2() is None:
        pytest.skip("this system has no renameat2 (Linux >= 3.15 with glibc >= 2.28)")
    GramMatrix.compute(X, kernel="rbf", gamma=0.2, store=tmp_path / "K.zarr", chunk=16, progress=False,
                       overwrite=True)
    # The exchange never leaves the path empty; without it the old store is renamed aside first.
    store = str(tmp_path / "K.zarr")
    assert len([pair for pair in renames if store in pair]) == (0 if exchange else 2)
    np.testing.assert_allclose(GramMatrix.open(tmp_path / "K.zarr").to_numpy(), rbf(X, 0.2), atol=1e-12)
    assert hidden_siblings(tmp_path) == []


def test_to_zarr_overwrite_replaces_a_gram_store(data, tmp_path):
    X, y = data
    K = make_store(tmp_path / "K.zarr", X)
    make_store(tmp_path / "Ka.zarr", X, gamma=0.1)
    view = CenteredGram(K, Centering.class_balanced(y))
    with pytest.raises(ArtifactPathError, match="already holds a dkernel Gram store"):
        view.to_zarr(tmp_path / "Ka.zarr")
    view.to_zarr(tmp_path / "Ka.zarr", overwrite=True)
    expected, _ = class_balanced_centered(rbf(X, GAMMA), y)
    np.testing.assert_allclose(GramMatrix.open(tmp_path / "Ka.zarr").to_numpy(), expected, atol=1e-10)
    assert hidden_siblings(tmp_path) == []


def test_save_overwrite_replaces_a_model(data, tmp_path):
    X, y = data
    make_model(X, y, C=0.01).save(tmp_path / "model.zarr")
    new = make_model(X, y, C=10.0)
    with pytest.raises(FileExistsError, match="already holds a dkernel model"):
        new.save(tmp_path / "model.zarr")
    new.save(tmp_path / "model.zarr", overwrite=True)
    np.testing.assert_array_equal(load_model(tmp_path / "model.zarr").decision_function(X), new.decision_function(X))
    assert hidden_siblings(tmp_path) == []


def test_run_overwrite_replaces_results_and_keeps_user_files(tmp_path):
    first = run_fake(tmp_path, value=1.0)
    outdir = tmp_path / "fake_pipeline"
    payload = json.loads((outdir / "results.json").read_text())
    assert payload["format"] == "dkernel-results"
    assert payload["files"] == ["report.md", "results.csv", "results.json"]
    assert [f.name for f in first.files] == ["results.csv", "results.json", "report.md"]
    assert all(f.parent == outdir and f.is_file() for f in first.files)
    calls = []
    with pytest.raises(ArtifactPathError, match="already holds dkernel pipeline results"):
        run_fake(tmp_path, calls=calls, value=2.0)
    assert calls == []  # refused before any task ran
    run_fake(tmp_path, overwrite=True, value=2.0)
    records = json.loads((outdir / "results.json").read_text())["records"]
    assert [r["test_error"] for r in records] == [0.2, 0.4]
    assert "value 2.0" in (outdir / "report.md").read_text()
    (outdir / "my-notes.md").write_text("keep me")
    with pytest.raises(ArtifactPathError, match="my-notes.md"):
        run_fake(tmp_path, overwrite=True, calls=calls, value=3.0)
    assert calls == [] and (outdir / "my-notes.md").read_text() == "keep me"
    assert hidden_siblings(tmp_path) == []


def test_run_command_line_needs_overwrite(tmp_path, capsys):
    module = fake_pipeline()
    argv = ["--scheduler", "threads", "--out", str(tmp_path), "--no-progress"]
    assert main_for(module, argv) == 0
    capsys.readouterr()
    assert main_for(module, argv) == 2
    err = capsys.readouterr().err
    assert "already holds dkernel pipeline results" in err and "--overwrite" in err
    assert "overwrite=True" not in err  # the command line's words
    assert main_for(module, argv + ["--overwrite"]) == 0


@pytest.mark.parametrize("flag, value", [("--repeats", "0"), ("--seed", "-1"), ("--workers", "0")])
def test_run_command_line_refuses_bad_numbers_before_any_task(flag, value, tmp_path, capsys):
    calls = []
    argv = ["--scheduler", "threads", "--out", str(tmp_path), "--no-progress", flag, value]
    assert main_for(fake_pipeline(calls), argv) == 2
    assert f"{flag} must be >= " in capsys.readouterr().err
    assert calls == [] and not any(tmp_path.iterdir())


def test_a_quick_run_replaces_the_previous_preview_only(tmp_path, monkeypatch, capsys):
    """``--quick`` in the default results/quick/ may run again (the README's first command, twice)."""
    monkeypatch.chdir(tmp_path)
    module = fake_pipeline()
    argv = ["--quick", "--scheduler", "threads", "--no-progress"]
    assert main_for(module, argv) == 0
    assert main_for(module, argv) == 0
    preview = tmp_path / "results" / "quick" / "fake_pipeline"
    assert json.loads((preview / "results.json").read_text())["format"] == "dkernel-results"
    (preview / "my-notes.md").write_text("keep me")
    capsys.readouterr()
    assert main_for(module, argv) == 2  # never replaces a folder holding other files
    assert "my-notes.md" in capsys.readouterr().err and (preview / "my-notes.md").read_text() == "keep me"
    # A quick run into another folder, and a full run, still need --overwrite.
    other = ["--quick", "--scheduler", "threads", "--no-progress", "--out", str(tmp_path / "mine")]
    assert main_for(module, other) == 0
    assert main_for(module, other) == 2


# --------------------------------------------------------------------------- #
# A write killed midway (SIGKILL) leaves the previous artifact intact
# --------------------------------------------------------------------------- #


def _start(code, tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(textwrap.dedent(code))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def _kill_when(process, ready, timeout=120):
    """SIGKILL ``process`` as soon as ``ready()`` holds; fails if it ended first."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            out, err = process.communicate()
            pytest.fail(f"the writer ended (code {process.returncode}) before it was killed:\n{err.decode()[-3000:]}")
        try:
            if ready():
                break
        except Exception:  # not there yet, or half written
            pass
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail("the writer never reached the point where it is killed")
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL


def _siblings_of(path, tag):
    return [p for p in path.parent.iterdir() if p.name.startswith(f".{path.name}.dkernel-{tag}")]


def test_killed_gram_replacement_keeps_the_old_store_and_resumes(data, tmp_path):
    X, _ = data
    np.save(tmp_path / "X.npy", X)
    path = tmp_path / "K.zarr"
    make_store(path, X, gamma=0.5)
    process = _start(f"""
        import time
        import dask
        import numpy as np
        from dkernel.gram import GramMatrix, _compute

        slow = _compute._evaluate_block
        def evaluate(*args, **kwargs):
            time.sleep(0.3)
            return slow(*args, **kwargs)
        _compute._evaluate_block = evaluate
        with dask.config.set(scheduler="synchronous"):
            GramMatrix.compute(np.load("X.npy"), kernel="rbf", gamma=0.2, store={str(path)!r}, chunk=16,
                               progress=False, overwrite=True, client=False)
    """, tmp_path)
    partial = Path(artifacts.partial_path(path))
    _kill_when(process, lambda: zarr.open_array(str(partial), path="done", mode="r")[:].sum() >= 2)
    old = GramMatrix.open(path)
    assert old.kernel.gamma == 0.5 and old.complete
    np.testing.assert_allclose(old.to_numpy(), rbf(X, 0.5), atol=1e-12)
    flags = zarr.open_array(str(partial), path="done", mode="r")[:]
    # Blocks (i <= j) written before the kill: both flags set (the kill may fall between the two), as a resume counts.
    written = int(np.triu(flags & flags.T).sum())
    assert 1 <= written < 10  # 4 x 4 blocks, 10 of them evaluated
    # The same call resumes the replacement beside the store, then swaps it in.
    done = GramMatrix.compute(X, kernel="rbf", gamma=0.2, store=path, chunk=16, progress=False, overwrite=True)
    assert done.n_blocks_computed == 10 - written
    np.testing.assert_allclose(GramMatrix.open(path).to_numpy(), rbf(X, 0.2), atol=1e-12)
    assert hidden_siblings(tmp_path) == []


def test_killed_in_place_centering_keeps_the_input_store(data, tmp_path):
    X, y = data
    np.save(tmp_path / "y.npy", y)
    path = tmp_path / "K.zarr"
    make_store(path, X)
    process = _start(f"""
        import time
        import dask
        import numpy as np
        from dkernel.centering import Centering
        from dkernel.gram import GramMatrix
        from dkernel.centering._origins import centered_block as _center_block
        from dkernel.views import CenteredGram

        def slow(*args, **kwargs):
            time.sleep(0.3)
            return _center_block(*args, **kwargs)
        CenteredGram._apply = staticmethod(slow)
        K = GramMatrix.open({str(path)!r})
        view = CenteredGram(K, Centering.class_balanced(np.load("y.npy")))
        with dask.config.set(scheduler="synchronous"):
            view.to_zarr(K.path, overwrite=True)
    """, tmp_path)
    _kill_when(process, lambda: any((p / "K").is_dir() for p in _siblings_of(path, "tmp")))
    K = GramMatrix.open(path)
    assert K.is_raw and K.complete
    np.testing.assert_allclose(K.to_numpy(), rbf(X, GAMMA), atol=1e-12)


def test_killed_save_keeps_the_old_model(data, tmp_path):
    X, y = data
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    path = tmp_path / "model.zarr"
    old = make_model(X, y, C=0.01)
    old.save(path)
    process = _start(f"""
        import time
        import numpy as np
        import zarr
        from dkernel.svm import SVC

        clf = SVC(kernel="rbf", gamma=0.3, C=10.0).fit(np.load("X.npy"), np.load("y.npy"))
        create = zarr.Group.create_array
        def slow(self, *args, **kwargs):
            time.sleep(0.5)
            return create(self, *args, **kwargs)
        zarr.Group.create_array = slow
        clf.save({str(path)!r}, overwrite=True)
    """, tmp_path)
    _kill_when(process, lambda: any((p / "zarr.json").exists() for p in _siblings_of(path, "tmp")))
    np.testing.assert_array_equal(load_model(path).decision_function(X), old.decision_function(X))


def test_killed_pipeline_run_keeps_the_old_results(tmp_path):
    run_fake(tmp_path, value=1.0)
    outdir = tmp_path / "fake_pipeline"
    before = {p.name: p.read_bytes() for p in outdir.iterdir()}
    process = _start(f"""
        import sys, time, types
        from pathlib import Path
        from pipelines._runner import PipelineConfig, run_pipeline

        def write_report(result, outdir):
            (Path(outdir) / "report.md").write_text("new")
            time.sleep(60)

        module = types.SimpleNamespace(
            NAME="fake_pipeline", DESCRIPTION="", make_tasks=lambda config: [{{"repeat": 0}}],
            run_task=lambda task: [{{"dataset": "toy", "repeat": 0, "test_error": 0.9}}], write_report=write_report)
        run_pipeline(module, PipelineConfig(scheduler="threads", out=Path({str(tmp_path)!r}), progress=False,
                                            overwrite=True))
    """, tmp_path)
    _kill_when(process, lambda: any((p / "report.md").exists() for p in _siblings_of(outdir, "tmp")))
    assert {p.name: p.read_bytes() for p in outdir.iterdir()} == before


# --------------------------------------------------------------------------- #
# Centering in place
# --------------------------------------------------------------------------- #


def test_center_in_place_needs_overwrite_then_gives_the_centered_store(data, tmp_path, capsys):
    X, y = data
    np.save(tmp_path / "y.npy", y)
    path = make_store(tmp_path / "K.zarr", X).path
    argv = ["center", path, "--labels", str(tmp_path / "y.npy"), "--out", path]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "is the Gram store this view reads" in err and "--overwrite" in err
    np.testing.assert_allclose(GramMatrix.open(path).to_numpy(), rbf(X, GAMMA), atol=1e-12)
    assert main(argv + ["--overwrite"]) == 0
    capsys.readouterr()
    expected, h0 = class_balanced_centered(rbf(X, GAMMA), y)
    stored = GramMatrix.open(path)
    assert stored.complete and not stored.is_raw
    np.testing.assert_allclose(stored.to_numpy(), expected, atol=1e-10)
    np.testing.assert_allclose(stored.diag(), np.diagonal(expected), atol=1e-10)
    assert [step["name"] for step in stored.operators] == ["centered"]
    assert stored.operators[0]["h0"] == pytest.approx(h0, rel=1e-10)
    assert hidden_siblings(tmp_path) == []


def test_api_in_place_centering_closes_the_replaced_gram(data, tmp_path):
    X, y = data
    K = make_store(tmp_path / "K.zarr", X)
    view = CenteredGram(K, Centering.class_balanced(y))
    out = view.to_zarr(K.path, overwrite=True)
    np.testing.assert_allclose(out.to_numpy(), class_balanced_centered(rbf(X, GAMMA), y)[0], atol=1e-10)
    with pytest.raises(StoreMismatchError, match="was replaced by the derived store"):
        K.rows([0])
    with pytest.raises(StoreMismatchError, match="was replaced by the derived store"):
        view.rows([0])


# --------------------------------------------------------------------------- #
# Provenance
# --------------------------------------------------------------------------- #


@pytest.fixture
def centered(data, tmp_path):
    X, y = data
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    K = make_store(tmp_path / "K.zarr", X)
    centering = Centering.class_balanced(y)
    CenteredGram(K, centering).to_zarr(tmp_path / "Ka.zarr")
    return X, y, tmp_path / "Ka.zarr", centering


def test_a_centered_store_records_its_provenance(centered, tmp_path):
    X, y, path, centering = centered
    stored = GramMatrix.open(path)
    info = stored.info()
    raw = GramMatrix.open(tmp_path / "K.zarr")
    assert raw.is_raw and raw.info()["matrix"] == "K(X, X)" and raw.provenance["operators"] == []
    assert info["matrix"] == "centered(K(X, X))"
    provenance = info["provenance"]
    assert provenance["kernel"] == {"name": "rbf", "params": {"gamma": GAMMA}}
    assert provenance["fingerprint"] == raw.fingerprint
    (step,) = provenance["operators"]
    assert step["name"] == "centered" and step["scheme"] == "class-balanced"
    assert (step["n"], step["n_support"]) == (60, 60)
    assert step["h0"] == pytest.approx(class_balanced_centered(rbf(X, GAMMA), y)[1], rel=1e-10)
    assert step["weights"] == weights_fingerprint(centering)
    assert step["weights"] == weights_fingerprint(Centering.class_balanced(y.copy()))
    assert step["weights"] != weights_fingerprint(Centering.standard(60))
    assert step["weights"] != weights_fingerprint(Centering.class_balanced(np.roll(y, 1)))


def test_info_command_shows_the_provenance(centered, capsys):
    X, y, path, centering = centered
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "centered(K(X, X)), symmetric" in out
    assert "rbf(gamma=0.5) (of the raw Gram)" in out
    assert "op 1:" in out and "centered (origin class-balanced on 60 of 60 points" in out
    assert weights_fingerprint(centering) in out
    assert main(["info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["provenance"]["operators"][0]["weights"] == weights_fingerprint(centering)


def test_a_chain_of_views_is_recorded_in_order(data, tmp_path):
    X, y = data
    K = make_store(tmp_path / "K.zarr", X)
    view = NormalizedGram(CenteredGram(K, Centering.standard(60)))
    stored = view.to_zarr(tmp_path / "Kn.zarr")
    assert stored.info()["matrix"] == "normalized(centered(K(X, X)))"
    assert [s["name"] for s in stored.operators] == ["centered", "normalized"]
    assert stored.operators[0]["scheme"] == "standard"
    # A view over a derived store extends its chain.
    again = CenteredGram(stored, Centering.class_balanced(y)).to_zarr(tmp_path / "Knc.zarr")
    assert [s["name"] for s in again.operators] == ["centered", "normalized", "centered"]


def test_a_derived_store_without_the_provenance_attribute_is_recognized(centered):
    X, y, path, centering = centered
    root = zarr.open_group(str(path), mode="r+")
    attrs = dict(root.attrs)
    for key in ("provenance", "write_id", "writer", "attribute_checksums"):  # as a store written before them
        attrs.pop(key, None)
    attrs["format_version"] = 3  # (whose checksums were not keyed by a write_id)
    root.attrs.put(attrs)
    stored = GramMatrix.open(path)
    assert [s["name"] for s in stored.operators] == ["centered"]
    assert stored.operators[0]["weights"] == weights_fingerprint(centering)
    with pytest.raises(StoreMismatchError, match="centered"):
        GramMatrix.compute(X, kernel="rbf", gamma=GAMMA, store=path, chunk=16, progress=False)


def test_compute_refuses_a_centered_store_naming_the_difference(centered):
    X, y, path, _ = centered
    before = GramMatrix.open(path).to_numpy()
    with pytest.raises(StoreMismatchError, match=r"operators \(store: centered .*requested: none \(a raw Gram\)"):
        GramMatrix.compute(X, kernel="rbf", gamma=GAMMA, store=path, chunk=16, progress=False)
    np.testing.assert_array_equal(GramMatrix.open(path).to_numpy(), before)
    # With overwrite it is replaced by the raw Gram.
    GramMatrix.compute(X, kernel="rbf", gamma=GAMMA, store=path, chunk=16, progress=False, overwrite=True)
    np.testing.assert_allclose(GramMatrix.open(path).to_numpy(), rbf(X, GAMMA), atol=1e-12)


def test_gram_command_refuses_a_centered_store(centered, capsys):
    X, y, path, _ = centered
    before = GramMatrix.open(path).to_numpy()
    code = main(["gram", "--input", str(path.parent / "X.npy"), "--kernel", "rbf", "--gamma", str(GAMMA),
                 "--chunk", "16", "--out", str(path), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "centered(K(X, X))" in err and "--overwrite" in err
    np.testing.assert_array_equal(GramMatrix.open(path).to_numpy(), before)


def test_fit_store_refuses_a_centered_store(centered, capsys, monkeypatch):
    X, y, path, _ = centered
    import dkernel.svm

    def never(*args, **kwargs):
        raise AssertionError("the fit started")

    monkeypatch.setattr(dkernel.svm.SVC, "fit", never)
    model = path.parent / "model.zarr"
    code = main(["fit", "--data", str(path.parent / "X.npy"), "--labels", str(path.parent / "y.npy"),
                 "--kernel", "rbf", "--gamma", str(GAMMA), "--store", str(path), "--model", str(model), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "centered" in err and "raw Gram" in err
    assert not model.exists()


def test_estimator_refuses_a_centered_store(centered):
    X, y, path, _ = centered
    with pytest.raises(StoreMismatchError, match="centered"):
        SVC(kernel="rbf", gamma=GAMMA, store=path).fit(X, y)


def test_new_points_are_refused_on_a_derived_store(centered):
    X, y, path, _ = centered
    view = CenteredGram(GramMatrix.open(path), Centering.standard(60))
    with pytest.raises(ValueError, match="derived matrix"):
        view.cross(X[:3], X)


# --------------------------------------------------------------------------- #
# The command line checks its output paths before any work
# --------------------------------------------------------------------------- #


def test_fit_with_an_existing_model_fails_before_reading_or_training(tmp_path, capsys, monkeypatch):
    import dkernel.cli._files
    import dkernel.svm

    rng = np.random.default_rng(0)
    X = rng.normal(size=(10000, 5))
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", np.where(X[:, 0] > 0, 1, -1))
    make_model(X[:50], np.where(X[:50, 0] > 0, 1, -1)).save(tmp_path / "model.zarr")
    started = []
    monkeypatch.setattr(dkernel.svm.SVC, "fit", lambda *a, **k: started.append("fit"))
    monkeypatch.setattr(dkernel.cli._files, "load_input", lambda *a, **k: started.append("load"))
    argv = ["fit", "--data", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "--quiet",
            "--model", str(tmp_path / "model.zarr")]
    begin = time.perf_counter()
    code = main(argv)
    elapsed = time.perf_counter() - begin
    err = capsys.readouterr().err
    assert code == 2 and "already holds a dkernel model" in err and "--overwrite" in err
    assert started == [] and elapsed < 2.0


def test_fit_model_overwrite_never_replaces_another_kind(data, tmp_path, capsys, monkeypatch):
    X, y = data
    import dkernel.svm

    monkeypatch.setattr(dkernel.svm.SVC, "fit", lambda *a, **k: pytest.fail("the fit started"))
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    make_store(tmp_path / "K.zarr", X)
    foreign_folder(tmp_path / "mine")
    base = ["fit", "--data", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "--quiet", "--overwrite"]
    assert main(base + ["--model", str(tmp_path / "K.zarr")]) == 2
    assert "holds a dkernel Gram store, not a dkernel model" in capsys.readouterr().err
    np.testing.assert_allclose(GramMatrix.open(tmp_path / "K.zarr").to_numpy(), rbf(X, GAMMA), atol=1e-12)
    assert main(base + ["--model", str(tmp_path / "mine")]) == 2
    assert "not deleted" in capsys.readouterr().err
    assert_untouched(tmp_path / "mine")


def test_gram_and_center_refuse_foreign_out_before_any_work(data, tmp_path, capsys, monkeypatch):
    X, y = data
    import dkernel.cli._files
    import dkernel.views._centered

    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    K = make_store(tmp_path / "K.zarr", X)
    make_model(X, y).save(tmp_path / "model.zarr")
    foreign_folder(tmp_path / "mine")
    monkeypatch.setattr(dkernel.cli._files, "load_input", lambda *a, **k: pytest.fail("the input was read"))
    monkeypatch.setattr(dkernel.views._centered, "origin_products", lambda *a, **k: pytest.fail("h was computed"))
    for out, message in [("mine", "not deleted"), ("model.zarr", "overwrite replaces only")]:
        assert main(["gram", "--input", str(tmp_path / "X.npy"), "--out", str(tmp_path / out), "--overwrite"]) == 2
        assert message in capsys.readouterr().err
        assert main(["center", K.path, "--labels", str(tmp_path / "y.npy"), "--out", str(tmp_path / out),
                     "--overwrite"]) == 2
        assert message in capsys.readouterr().err
    assert_untouched(tmp_path / "mine")
    assert load_model(tmp_path / "model.zarr").classes_.tolist() == [-1, 1]


def test_center_overwrite_replaces_a_centered_store(data, tmp_path, capsys):
    X, y = data
    np.save(tmp_path / "y.npy", y)
    K = make_store(tmp_path / "K.zarr", X)
    out = str(tmp_path / "Ka.zarr")
    assert main(["center", K.path, "--scheme", "standard", "--out", out]) == 0
    assert main(["center", K.path, "--labels", str(tmp_path / "y.npy"), "--out", out]) == 2
    assert "already holds a dkernel Gram store" in capsys.readouterr().err
    assert main(["center", K.path, "--labels", str(tmp_path / "y.npy"), "--out", out, "--overwrite"]) == 0
    np.testing.assert_allclose(GramMatrix.open(out).to_numpy(), class_balanced_centered(rbf(X, GAMMA), y)[0],
                               atol=1e-10)
    assert GramMatrix.open(out).operators[0]["scheme"] == "class-balanced"
