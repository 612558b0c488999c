"""What a data-safety trial found: a resume with no solver state to resume from, and the temporary folders of
writers killed mid-write."""

import os
import subprocess
import sys

import numpy as np
import pytest

import dkernel
from dkernel._runtime import artifacts
from dkernel.cli import main


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4))
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", (X[:, 0] + 0.3 * rng.normal(size=300) > 0).astype(int))
    return tmp_path


def fit(tmp, *more):
    return main(["fit", "--data", str(tmp / "X.npy"), "--labels", str(tmp / "y.npy"), "--gamma", "0.5", "--C", "100",
                 "--quiet", *more])


def test_resume_from_a_checkpoint_without_solver_state_is_refused(data, capsys):
    ck = data / "ck"
    assert fit(data, "--model", str(data / "m1"), "--checkpoint", str(ck), "--checkpoint-iterations", "20") == 0
    assert (ck / "problem-0" / "zarr.json").is_file()
    import shutil

    shutil.rmtree(ck / "problem-0")  # the root still says: 1 problem
    capsys.readouterr()
    assert fit(data, "--model", str(data / "m2"), "--checkpoint", str(ck), "--resume") == 2
    err = capsys.readouterr().err
    assert "--resume" in err and "holds no solver state to resume from" in err and "without --resume" in err
    assert not (data / "m2").exists()
    assert fit(data, "--model", str(data / "m2"), "--checkpoint", str(ck)) == 0  # without --resume: starts over


def _dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_next_write_deletes_the_temporary_folders_of_killed_writers_only(tmp_path):
    X, y = np.random.default_rng(0).normal(size=(40, 3)), np.arange(40) % 2
    from dkernel._runtime.siblings import _machine_tag

    tag = _machine_tag()
    abandoned = tmp_path / f".m.dkernel-tmp-{tag}-{_dead_pid()}-0123abcd"
    alive = tmp_path / f".m.dkernel-tmp-{tag}-{os.getppid()}-0123abcd"  # a writer still running
    elsewhere = tmp_path / f".m.dkernel-tmp-{'f' * 8 if tag != 'f' * 8 else '0' * 8}-{_dead_pid()}-0123abcd"
    old_style = tmp_path / ".m.dkernel-tmp-0123abcd"  # no writer recorded: never deleted
    users = tmp_path / ".m.dkernel-tmp-notes"
    for folder in (abandoned, alive, elsewhere, old_style, users):
        folder.mkdir()
        (folder / "part").write_bytes(b"x" * 100)
    link = tmp_path / f".m.dkernel-tmp-{tag}-{_dead_pid()}-44444444"
    link.symlink_to(users)
    dkernel.SVC().fit(X, y).save(tmp_path / "m")
    assert not abandoned.exists()
    assert all(p.exists() for p in (alive, elsewhere, old_style, users, link))
    assert (users / "part").read_bytes() == b"x" * 100
    assert dkernel.load_model(tmp_path / "m").predict(X).shape == (40,)


def test_a_save_killed_mid_write_leaves_nothing_after_the_next_save(tmp_path):
    script = (f"import numpy as np, dkernel, os, signal\n"
              f"from dkernel._runtime import artifacts\n"
              f"real = artifacts.install\n"
              f"def die(*a, **k): os.kill(os.getpid(), signal.SIGKILL)\n"
              f"artifacts.install = die\n"
              f"X, y = np.random.default_rng(0).normal(size=(40, 3)), np.arange(40) % 2\n"
              f"dkernel.SVC().fit(X, y).save({str(tmp_path / 'm')!r})\n")
    assert subprocess.run([sys.executable, "-c", script]).returncode == -9
    assert [p.name for p in tmp_path.iterdir() if ".dkernel-tmp-" in p.name]  # the killed save left its folder
    X, y = np.random.default_rng(0).normal(size=(40, 3)), np.arange(40) % 2
    dkernel.SVC().fit(X, y).save(tmp_path / "m")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]
