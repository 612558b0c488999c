"""A killed writer's temporary output file is deleted by the next write beside it (only that file); a Gram computed
with a given ``chunk`` does not ask the scheduler for the workers' memory."""

import os
import subprocess
import sys

import numpy as np
import pytest

from dkernel._runtime import outputs, siblings


def _dead_pid():
    """The id of a process that has exited (reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _temporary(folder, name, pid, machine=None, suffix=".npy", rest="0123abcd"):
    return folder / f".{name}.dkernel-tmp-{machine or siblings._machine_tag()}-{pid}-{rest}{suffix}"


def _save(path, overwrite=False):
    outputs.save_npy(path, np.arange(3.0), "labels", what="the predicted labels", name="--out",
                     writer="dkernel predict", overwrite=overwrite)


def test_the_temporary_file_of_a_killed_writer_is_deleted_by_the_next_write(tmp_path):
    target = tmp_path / "pred.npy"
    abandoned = _temporary(tmp_path, "pred.npy", _dead_pid())
    abandoned.write_bytes(b"half an array")
    _save(target)
    assert not abandoned.exists()
    np.testing.assert_array_equal(np.load(target), np.arange(3.0))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pred.npy"]


def test_only_abandoned_temporary_files_of_this_machine_are_deleted(tmp_path):
    target = tmp_path / "pred.npy"
    kept = {
        "live writer": _temporary(tmp_path, "pred.npy", os.getpid()),
        "another machine": _temporary(tmp_path, "pred.npy", _dead_pid(), machine="0badf00d"),
        "an older unnamed one": tmp_path / ".pred.npy.dkernel-tmp-0123abcd.npy",
        "a user's file": tmp_path / ".pred.npy.dkernel-tmp-notes.npy",
        "another suffix": _temporary(tmp_path, "pred.npy", _dead_pid(), suffix=".txt"),
        "another target's": _temporary(tmp_path, "other.npy", _dead_pid()),
    }
    for label, path in kept.items():
        path.write_text(label)
    linked = _temporary(tmp_path, "pred.npy", _dead_pid(), rest="feedbeef")
    (tmp_path / "elsewhere.npy").write_text("the link's target")
    linked.symlink_to(tmp_path / "elsewhere.npy")
    _save(target)
    for label, path in kept.items():
        assert path.read_text() == label, label
    assert linked.is_symlink() and (tmp_path / "elsewhere.npy").read_text() == "the link's target"


def test_a_folder_named_as_a_temporary_file_is_left(tmp_path):
    folder = _temporary(tmp_path, "pred.npy", _dead_pid())
    folder.mkdir()
    (folder / "mine.txt").write_text("a user's file")
    _save(tmp_path / "pred.npy")
    assert (folder / "mine.txt").read_text() == "a user's file"


def test_a_temporary_file_is_named_by_machine_and_process(tmp_path):
    name = os.path.basename(siblings.new_sibling_file(tmp_path / "pred.npy", ".npy"))
    assert name.startswith(f".pred.npy.dkernel-tmp-{siblings._machine_tag()}-{os.getpid()}-")
    assert name.endswith(".npy")
    with pytest.raises(ValueError, match="ends in one of"):
        siblings.new_sibling_file(tmp_path / "pred.txt", ".txt")


def test_a_given_chunk_asks_the_scheduler_nothing(monkeypatch, tmp_path):
    import distributed

    from dkernel import GramMatrix
    from dkernel.gram import _matrix

    asked = []
    monkeypatch.setattr(_matrix, "worker_memory_limit", lambda client: asked.append(client) or None)
    X = np.random.default_rng(0).normal(size=(60, 3))
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as client:
        G = GramMatrix.compute(X, chunk=20, client=client, progress=False)
        assert asked == []
        assert tuple(G.chunks) == (20, 20)
        GramMatrix.compute(X, client=client, progress=False)
        assert asked == [client]
