"""Two runs of one pipeline into one folder: the second is refused before any task, naming the process that
writes there (both computed, and the later one's results were refused only when it wrote them)."""

import os
import time

from _cli import error_of
from pipelines._runner import _one_run_at_a_time


def test_a_second_run_into_the_same_folder_is_refused_before_any_task(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with _one_run_at_a_time(tmp_path / "res", "meila_imbalanced"):
        assert (tmp_path / "res" / ".meila_imbalanced.dkernel-lock").read_text() == f"process {os.getpid()}"
        start = time.monotonic()
        err = error_of(["run", "meila_imbalanced", "--quick", "--cluster", "threads", "--out", "res"], capsys,
                       prefix="dkernel run meila_imbalanced: error: res: ")
        assert time.monotonic() - start < 10
    assert "another `dkernel run meila_imbalanced` is writing its results there" in err
    assert f"(process {os.getpid()}); wait for it to finish, or give another --out." in err
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) == []  # nothing written, the lock file removed


def test_the_folder_is_free_again_once_the_run_ends(tmp_path):
    for _ in range(2):
        with _one_run_at_a_time(tmp_path, "p"):
            pass
    assert not (tmp_path / ".p.dkernel-lock").exists()


def test_a_file_of_the_lock_s_name_that_no_run_wrote_is_left_as_it_is(tmp_path):
    import pytest

    from dkernel.exceptions import DKernelError

    mine = tmp_path / ".p.dkernel-lock"
    mine.write_text("my notes")
    with pytest.raises(DKernelError, match="exists and was not written by dkernel run"):
        with _one_run_at_a_time(tmp_path, "p"):
            pass
    assert mine.read_text() == "my notes"
