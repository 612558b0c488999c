"""The pipeline runner's saved task records and results folders (``dkernel run``).

* A saved task record carries a checksum verified when a run resumes: a
  changed, truncated or unverifiable (older, checksum-less) record is
  reported on one line and its task computed again, never read as results.
* Quick previews under results/quick are replaced at each quick run (the
  README's first command may run again); the help and the README say so.
* A quick run never replaces full results, even with ``--overwrite``.

A toy pipeline module (the runner's protocol) stands in for the real ones;
the committed full results of ``meila_centering_real`` are copied into a
temporary folder, never written in the repository.
"""

import filecmp
import json
import re
import shutil
import time
import types
from pathlib import Path

import dask
import pytest

from dkernel.exceptions import ArtifactPathError
from pipelines._command import main_for
from pipelines._runner import PipelineConfig, build_parser, run_pipeline

REPO = Path(__file__).resolve().parents[1]
NAME = "toy_records"


def toy_pipeline(calls, value=1.0, stop_at=None, out=None):
    """Three tasks; with ``stop_at``, that task fails once the records of another task are saved in ``out``."""

    def make_tasks(config):
        return [{"dataset": "toy", "repeat": r} for r in range(3)]

    def run_task(task):
        calls.append(task["repeat"])
        if task["repeat"] == stop_at:
            deadline = time.monotonic() + 60
            while not any(task_folder(out).glob("*.json")) and time.monotonic() < deadline:
                time.sleep(0.01)
            raise RuntimeError("stopped on purpose")
        return [{"dataset": "toy", "repeat": task["repeat"], "test_error": value * (task["repeat"] + 1) / 10}]

    def write_report(result, outdir):
        path = Path(outdir) / "report.md"
        rows = "\n".join(f"- repeat {r['repeat']}: {r['test_error']}" for r in result.records)
        path.write_text(f"# {NAME}\n\n{rows}\n")
        return [path]

    return types.SimpleNamespace(NAME=NAME, DESCRIPTION="a toy pipeline", make_tasks=make_tasks, run_task=run_task,
                                 write_report=write_report)


def task_folder(out):
    return Path(out) / f".{NAME}.dkernel-partial" / "tasks"


def config(out, quick=True, overwrite=False):
    return PipelineConfig(quick=quick, scheduler="threads", out=Path(out), progress=False, overwrite=overwrite)


def interrupted_run(out):
    """A run of the first two tasks that stops once the records of task 0 are saved; returns that record's path."""
    module = toy_pipeline([], stop_at=1, out=out)
    make = module.make_tasks
    module.make_tasks = lambda cfg: make(cfg)[:2]
    # Task 1 waits for the record of task 0: two threads, on a machine of one core too.
    with dask.config.set(num_workers=4), pytest.raises(RuntimeError, match="stopped on purpose"):
        run_pipeline(module, config(out))
    saved = sorted(task_folder(out).glob("*.json"))
    assert len(saved) == 1, saved
    assert json.loads(saved[0].read_text())["records"][0]["test_error"] == 0.1
    return saved[0]


def resume(out, capsys):
    calls = []
    capsys.readouterr()
    result = run_pipeline(toy_pipeline(calls), config(out))
    return result, calls, capsys.readouterr().err


def test_an_intact_record_is_resumed_without_a_note(tmp_path, capsys):
    interrupted_run(tmp_path)
    result, calls, err = resume(tmp_path, capsys)
    assert sorted(calls) == [1, 2]  # task 0 came from its record
    assert result.resumed == 1 and "resuming: 1 of 3 tasks" in err
    assert "recomputed" not in err
    assert [r["test_error"] for r in result.records] == [0.1, 0.2, 0.3]
    assert not task_folder(tmp_path).parent.exists()


def _assert_recomputed(tmp_path, capsys, what):
    result, calls, err = resume(tmp_path, capsys)
    assert sorted(calls) == [0, 1, 2], err  # the damaged record's task ran again
    assert result.resumed == 0
    assert [r["test_error"] for r in result.records] == [0.1, 0.2, 0.3]
    payload = json.loads((tmp_path / NAME / "results.json").read_text())
    assert [r["test_error"] for r in payload["records"]] == [0.1, 0.2, 0.3]
    assert "0.9" not in (tmp_path / NAME / "results.csv").read_text()
    assert "0.9" not in (tmp_path / NAME / "report.md").read_text()
    notes = [line for line in err.splitlines() if "recomputed" in line]
    assert len(notes) == 1, err
    note = notes[0]
    assert note.startswith(f"{NAME}: the record saved for task 1 of 3 (") and "repeat=0" in note, note
    assert what in note, note
    assert not task_folder(tmp_path).parent.exists()
    return note


def test_a_changed_record_is_reported_and_recomputed(tmp_path, capsys):
    path = interrupted_run(tmp_path)
    text = path.read_text()
    assert '"test_error": 0.1' in text
    path.write_text(text.replace('"test_error": 0.1', '"test_error": 0.9', 1))
    _assert_recomputed(tmp_path, capsys, "checksum")


def test_a_truncated_record_is_reported_and_recomputed(tmp_path, capsys):
    path = interrupted_run(tmp_path)
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    _assert_recomputed(tmp_path, capsys, "damaged")


def test_a_record_without_a_checksum_is_recomputed(tmp_path, capsys):
    """A record as written before records had checksums cannot be verified: its task runs again."""
    path = interrupted_run(tmp_path)
    saved = json.loads(path.read_text())
    old = {"task": saved["task"], "records": saved["records"]}
    old["records"][0]["test_error"] = 0.9
    path.write_text(json.dumps(old))
    _assert_recomputed(tmp_path, capsys, "no checksum")


def test_a_record_is_saved_with_its_crc32c(tmp_path):
    import google_crc32c

    saved = json.loads(interrupted_run(tmp_path).read_text())
    body = {k: v for k, v in saved.items() if k != "crc32c"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert saved["crc32c"] == int(google_crc32c.value(text.encode("ascii")))


def test_a_record_with_non_finite_and_numpy_values_is_verified_as_saved(tmp_path):
    import numpy as np

    from pipelines._resume import TaskRecords

    saved = TaskRecords(tmp_path / NAME, NAME)
    task = {"dataset": "toy", "repeat": 0, "seed_index": 0, "seed": 0}
    records = [{"test_error": float("nan"), "n_sv": np.int64(3), "alignment": np.float32(0.5), "gap": float("inf"),
                "name": "caf\u00e9"}]
    kept = saved.save(task, records)
    again, problem = saved.inspect(task)
    assert problem is None and json.dumps(again) == json.dumps(kept)
    assert again[0]["n_sv"] == 3 and again[0]["name"] == "caf\u00e9"
    assert saved.inspect({**task, "repeat": 1}) == (None, None)  # nothing saved: no problem to report


# ------------------------------------------------------------------ quick previews and full results
def test_help_and_readme_say_which_results_are_replaced():
    text = " ".join(build_parser(NAME, "a toy pipeline").format_help().split())
    sentence = "quick previews under results/quick are replaced at each quick run; full results only with --overwrite"
    assert sentence in text, text
    readme = " ".join((REPO / "README.md").read_text().replace("`", "").split())
    assert sentence in readme
    assert "earlier results are replaced only with --overwrite" not in readme
    assert len((REPO / "README.md").read_text().splitlines()) < 350


def test_the_quick_preview_is_replaced_at_each_quick_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["--quick", "--scheduler", "threads", "--no-progress"]
    assert main_for(toy_pipeline([], value=1.0), argv) == 0
    assert main_for(toy_pipeline([], value=2.0), argv) == 0
    records = json.loads((tmp_path / "results" / "quick" / NAME / "results.json").read_text())["records"]
    assert [r["test_error"] for r in records] == [0.2, 0.4, 0.6]


def _snapshot(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_quick_run_never_replaces_full_results_even_with_overwrite(tmp_path, capsys):
    run_pipeline(toy_pipeline([]), config(tmp_path, quick=False))
    outdir = tmp_path / NAME
    before = _snapshot(outdir)
    assert json.loads((outdir / "results.json").read_text())["config"]["quick"] is False
    calls = []
    with pytest.raises(ArtifactPathError, match="full results") as refused:
        run_pipeline(toy_pipeline(calls, value=5.0), config(tmp_path, quick=True, overwrite=True))
    assert str(outdir) in str(refused.value) and "--out" in str(refused.value)
    assert calls == [] and _snapshot(outdir) == before
    # A full run may still replace them with --overwrite.
    run_pipeline(toy_pipeline([], value=2.0), config(tmp_path, quick=False, overwrite=True))
    assert [r["test_error"] for r in json.loads((outdir / "results.json").read_text())["records"]] == [0.2, 0.4, 0.6]


def test_a_quick_run_with_overwrite_leaves_the_committed_full_results_byte_for_byte(tmp_path, capsys):
    """``dkernel run meila_centering_real --quick --out DIR --overwrite`` onto a copy of the committed results."""
    from pipelines import meila_centering_real

    committed = REPO / "results" / "meila_centering_real"
    if not (committed / "results.json").is_file():
        pytest.skip("the committed full results are not in this checkout")
    out = tmp_path / "results"
    shutil.copytree(committed, out / "meila_centering_real")
    target = out / "meila_centering_real"
    before = _snapshot(target)
    capsys.readouterr()
    argv = ["--quick", "--out", str(out), "--overwrite", "--scheduler", "threads", "--no-progress"]
    assert main_for(meila_centering_real, argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "full results" in err and str(target) in err, err
    assert re.search(r"another --out", err), err
    assert _snapshot(target) == before
    comparison = filecmp.dircmp(committed, target)
    assert not comparison.diff_files and not comparison.left_only and not comparison.right_only
    assert sorted(p.name for p in out.iterdir()) == ["meila_centering_real"]  # nothing written beside it


def test_a_threaded_run_leaves_the_dask_configuration_as_it_found_it(tmp_path):
    """Tasks in threads that overlap (the first to end started first) must not leave ``scheduler="synchronous"``
    behind: every later computation of the process would run on one thread."""
    def make_tasks(config):
        return [{"dataset": "toy", "repeat": r} for r in range(4)]

    def run_task(task):
        time.sleep(0.05 + 0.1 * task["repeat"])
        return [{"dataset": "toy", "repeat": task["repeat"], "test_error": 0.1}]

    module = toy_pipeline([])
    module.make_tasks, module.run_task = make_tasks, run_task
    before = dask.config.get("scheduler", None)
    with dask.config.set(num_workers=4):
        run_pipeline(module, config(tmp_path / "out"))
    assert dask.config.get("scheduler", None) == before
