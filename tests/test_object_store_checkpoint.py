"""Solver checkpoints at an s3:// URL (solve_qp, SVC, dkernel fit --checkpoint), against moto's S3 server on
127.0.0.1 (the fixtures of test_object_store): written without rename, resumed as a local checkpoint."""

import logging
import warnings

import numpy as np
import pytest

pytest.importorskip("moto.server", reason="moto[server] is not installed (pip install 'moto[server]')")
pytest.importorskip("s3fs", reason="s3fs is not installed")

import test_object_store as s3_fixtures
from sklearn.datasets import make_classification
from test_object_store import KEY, SECRET, _cli_options, _objects

from dkernel import SVC
from dkernel.exceptions import ArtifactPathError, CorruptStoreError
from dkernel.gram import GramMatrix
from dkernel.gram._sources import DenseGram, KernelGram
from dkernel.solver import Checkpoint, _checkpoint, solve_qp

endpoint, bucket, options = s3_fixtures.endpoint, s3_fixtures.bucket, s3_fixtures.options

OPTIONS = {"tol": 1e-6, "working_set_size": 8}
PARAMS = {"kernel": "rbf", "gamma": 0.2, "C": 1.0, "tol": 1e-6, "working_set_size": 16}


def _problem(n=300, seed=3):
    X, y = make_classification(n_samples=n, n_features=6, flip_y=0.1, random_state=seed)
    return X, np.where(y == 1, 1.0, -1.0)


def _resumed_iterations(messages):
    return [int(m.rsplit(" ", 1)[1]) for m in messages if "resuming from the checkpoint" in m]


class _Stop(KeyboardInterrupt):
    """A Ctrl-C right after a checkpoint write."""


@pytest.fixture
def stop_after_a_write(monkeypatch):
    """Makes a fit stop (as a killed one) right after its first checkpoint write at iteration 3 or later."""
    real = _checkpoint.CheckpointWriter.write

    def write_then_stop(self, state):
        real(self, state)
        if state.iteration >= 3 and state.stop_reason is None:
            raise _Stop(f"stopped at {state.iteration}")

    monkeypatch.setattr(_checkpoint.CheckpointWriter, "write", write_then_stop)
    return lambda: monkeypatch.setattr(_checkpoint.CheckpointWriter, "write", real)


def _no_secret(s3, name, text=""):
    assert SECRET not in text and KEY not in text
    for body in _objects(s3, name).values():
        assert SECRET.encode() not in body and KEY.encode() not in body


def test_a_stopped_solve_resumes_from_a_url_checkpoint_as_from_a_local_one(bucket, options, tmp_path, solver_log,
                                                                           caplog):
    name, s3 = bucket
    X, y = _problem()
    rows = DenseGram(KernelGram(X, "rbf", gamma=0.2).to_numpy())
    whole = solve_qp(rows, y, 1.0, **OPTIONS)
    url = f"s3://{name}/svm.ckpt"
    stop = lambda it, alpha, gap: it == 37
    caplog.set_level(logging.DEBUG, logger="dkernel")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stopped = solve_qp(rows, y, 1.0, checkpoint=Checkpoint(url, every_iter=5, storage_options=options),
                           callback=stop, **OPTIONS)
        solve_qp(rows, y, 1.0, checkpoint=Checkpoint(tmp_path / "svm.ckpt", every_iter=5), callback=stop, **OPTIONS)
    assert stopped.stop_reason == "callback" and stopped.n_iter == 37 < whole.n_iter
    keys = set(_objects(s3, name))  # the manifest and one state: the earlier states were removed after each commit
    assert len(keys) == 2 and "svm.ckpt/dkernel.json" in keys
    resumed = solve_qp(rows, y, 1.0, checkpoint=Checkpoint(url, storage_options=options), **OPTIONS)
    local = solve_qp(rows, y, 1.0, checkpoint=tmp_path / "svm.ckpt", **OPTIONS)
    assert _resumed_iterations(solver_log) == [37, 37]
    np.testing.assert_array_equal(resumed.alpha, local.alpha)
    np.testing.assert_array_max_ulp(resumed.alpha, whole.alpha, maxulp=4)
    assert resumed.n_iter == whole.n_iter and resumed.n_kernel_rows == whole.n_kernel_rows
    calls = []
    again = solve_qp(rows, y, 1.0, checkpoint=Checkpoint(url, storage_options=options),
                     callback=lambda *a: calls.append(a), **OPTIONS)
    assert calls == [] and again.converged
    np.testing.assert_array_max_ulp(again.alpha, whole.alpha, maxulp=4)
    _no_secret(s3, name, caplog.text + repr(Checkpoint(url, storage_options=options)))


def test_a_damaged_url_checkpoint_is_detected_and_never_read(bucket, options):
    name, s3 = bucket
    X, y = _problem(120)
    rows = KernelGram(X, "rbf", gamma=0.2)
    url = f"s3://{name}/svm.ckpt"
    checkpoint = Checkpoint(url, storage_options=options)
    solve_qp(rows, y, 1.0, checkpoint=checkpoint, **OPTIONS)
    state = next(k for k in _objects(s3, name) if k.endswith("/state.npz"))
    body = bytearray(s3.get_object(Bucket=name, Key=state)["Body"].read())
    for damaged in (bytes(body[:-1]) + bytes([body[-1] ^ 1]), bytes(body[:40])):
        s3.put_object(Bucket=name, Key=state, Body=damaged)
        with pytest.raises(CorruptStoreError, match="damaged"):
            solve_qp(rows, y, 1.0, checkpoint=checkpoint, **OPTIONS)
    s3.delete_object(Bucket=name, Key=state)
    with pytest.raises(CorruptStoreError, match="missing"):
        solve_qp(rows, y, 1.0, checkpoint=checkpoint, **OPTIONS)


def test_a_url_checkpoint_of_another_problem_a_foreign_prefix_and_other_artifacts_are_refused(bucket, options):
    name, s3 = bucket
    X, y = _problem(120)
    rows = KernelGram(X, "rbf", gamma=0.2)
    url = f"s3://{name}/svm.ckpt"
    solve_qp(rows, y, 1.0, checkpoint=Checkpoint(url, storage_options=options), **OPTIONS)
    GramMatrix.compute(X, chunk=64, store=f"s3://{name}/K.zarr", storage_options=options, client=False,
                       progress=False)
    s3.put_object(Bucket=name, Key="notes/todo.txt", Body=b"mine")
    before = _objects(s3, name)
    with pytest.raises(ValueError, match="written for another problem; these differ: the bounds C"):
        solve_qp(rows, y, 2.0, checkpoint=Checkpoint(url, storage_options=options), **OPTIONS)
    with pytest.raises(ValueError, match="holds the state of one solver run"):
        SVC(checkpoint=url, storage_options=options, **PARAMS).fit(X, y)
    with pytest.raises(ArtifactPathError, match="did not write"):
        SVC(checkpoint=f"s3://{name}/notes", storage_options=options, **PARAMS).fit(X, y)
    with pytest.raises(ArtifactPathError, match="not the manifest of a dkernel solver checkpoint"):
        SVC(checkpoint=f"s3://{name}/K.zarr", storage_options=options, **PARAMS).fit(X, y)
    assert _objects(s3, name) == before


def test_a_stopped_svc_fit_resumes_from_its_url_checkpoint(bucket, options, tmp_path, solver_log,
                                                           stop_after_a_write):
    name, s3 = bucket
    X, y = make_classification(n_samples=300, n_features=6, n_informative=4, n_classes=3, random_state=5)
    url = f"s3://{name}/fit.ckpt"
    for where, extra in ((Checkpoint(url, every_iter=3), {"storage_options": options}),
                         (Checkpoint(tmp_path / "fit.ckpt", every_iter=3), {})):
        with pytest.raises(_Stop):
            SVC(checkpoint=where, client=False, **extra, **PARAMS).fit(X, y)
    assert {k.split("/")[1] for k in _objects(s3, name)} == {"dkernel.json", "problem-0"}
    stop_after_a_write()
    resumed = SVC(checkpoint=url, storage_options=options, client=False, **PARAMS).fit(X, y)
    local = SVC(checkpoint=tmp_path / "fit.ckpt", client=False, **PARAMS).fit(X, y)
    assert _resumed_iterations(solver_log)[0] >= 3
    uninterrupted = SVC(client=False, **PARAMS).fit(X, y)
    np.testing.assert_allclose(resumed.decision_function(X), local.decision_function(X), rtol=0, atol=1e-10)
    np.testing.assert_allclose(resumed.decision_function(X), uninterrupted.decision_function(X), atol=1e-6)
    np.testing.assert_array_equal(resumed.support_, uninterrupted.support_)
    assert "problem-2/dkernel.json" in {k.split("/", 1)[1] for k in _objects(s3, name)}
    _no_secret(s3, name)


def test_dkernel_fit_resumes_from_a_url_checkpoint_with_the_same_command(bucket, options, tmp_path, solver_log,
                                                                         stop_after_a_write, capsys):
    from dkernel import cli, load_model

    name, s3 = bucket
    X, y = make_classification(n_samples=300, n_features=6, n_informative=4, random_state=5)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    url = f"s3://{name}/fit.ckpt"
    fit = ["fit", "--data", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "--gamma", "0.2",
           "--tol", "1e-6", "--working-set-size", "16", "--model", str(tmp_path / "model.zarr"),
           "--checkpoint", url, "--checkpoint-iterations", "3", "--quiet", *_cli_options(options)]
    assert cli.main([*fit, "--resume"]) == 2
    assert "no checkpoint in --checkpoint" in capsys.readouterr().err
    assert cli.main(fit) == 130
    assert f"kept in --checkpoint {url}; run the same command again" in capsys.readouterr().err
    assert not (tmp_path / "model.zarr").exists()
    stop_after_a_write()
    assert cli.main([*fit, "--resume"]) == 0
    assert _resumed_iterations(solver_log)[0] >= 3
    uninterrupted = SVC(**PARAMS).fit(X, y)
    np.testing.assert_allclose(load_model(tmp_path / "model.zarr").decision_function(X),
                               uninterrupted.decision_function(X), atol=1e-6)
    captured = capsys.readouterr()
    _no_secret(s3, name, captured.out + captured.err)


def test_a_fit_on_a_local_cluster_checkpoints_at_a_url_and_a_second_fit_returns_its_solutions(bucket, options,
                                                                                              solver_log):
    distributed = pytest.importorskip("distributed")

    name, s3 = bucket
    X, y = make_classification(n_samples=300, n_features=6, n_informative=4, n_classes=3, random_state=5)
    url = f"s3://{name}/fit.ckpt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                      dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            first = SVC(checkpoint=url, storage_options=options, client=client, **PARAMS).fit(X, y)
            del solver_log[:]
            again = SVC(checkpoint=url, storage_options=options, client=client, **PARAMS).fit(X, y)
    assert sum("holds the solution" in m for m in solver_log) == 3
    np.testing.assert_allclose(again.decision_function(X), first.decision_function(X), rtol=0, atol=1e-10)
    np.testing.assert_allclose(first.decision_function(X), SVC(client=False, **PARAMS).fit(X, y).decision_function(X),
                               atol=1e-6)
    _no_secret(s3, name, " ".join(solver_log))
