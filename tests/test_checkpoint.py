"""Checkpoints of the solver: written safely, resumed on the same path, refused for another problem."""

import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_classification

from dkernel import SVC
from dkernel.gram._sources import DenseGram, KernelGram
from dkernel.cli import main
from dkernel.exceptions import ArtifactPathError
from dkernel.solver import Checkpoint, solve_qp
from dkernel.svm import load_model

distributed = pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parents[1]
OPTIONS = dict(tol=1e-6, working_set_size=8)


def _problem(n=300, seed=3):
    X, y = make_classification(n_samples=n, n_features=6, flip_y=0.1, random_state=seed)
    return X, np.where(y == 1, 1.0, -1.0)


def _resumed_iterations(messages):
    found = [int(m.rsplit(" ", 1)[1]) for m in messages if "resuming from the checkpoint" in m]
    assert len(found) >= 1, messages
    return found


def _stop_at(iteration):
    return lambda it, alpha, gap: it == iteration


# ----------------------------------------------------------------- in this process
def test_a_stopped_solve_resumes_on_the_path_of_an_uninterrupted_one(tmp_path, solver_log):
    X, y = _problem()
    rows = DenseGram(KernelGram(X, "rbf", gamma=0.2).to_numpy())
    whole = solve_qp(rows, y, 1.0, **OPTIONS)
    path = tmp_path / "svm.ckpt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stopped = solve_qp(rows, y, 1.0, checkpoint=Checkpoint(path, every_iter=5), callback=_stop_at(37), **OPTIONS)
    assert stopped.stop_reason == "callback" and stopped.n_iter == 37 < whole.n_iter
    resumed = solve_qp(rows, y, 1.0, checkpoint=path, **OPTIONS)
    assert _resumed_iterations(solver_log) == [37]
    np.testing.assert_array_max_ulp(resumed.alpha, whole.alpha, maxulp=4)
    # The gradient's part from the variables at C (libsvm's G_bar) is summed again at a resume, not kept: its
    # last bits differ from those the uninterrupted run accumulated.
    np.testing.assert_allclose(resumed.gradient, whole.gradient, rtol=1e-12, atol=1e-12)
    assert resumed.n_iter == whole.n_iter and resumed.n_kernel_rows == whole.n_kernel_rows
    # The solved checkpoint returns its solution without iterating.
    calls = []
    again = solve_qp(rows, y, 1.0, checkpoint=path, callback=lambda *a: calls.append(a), **OPTIONS)
    assert calls == [] and again.converged
    np.testing.assert_array_max_ulp(again.alpha, whole.alpha, maxulp=4)


def test_a_checkpoint_of_another_problem_is_refused_and_left_as_it_is(tmp_path):
    X, y = _problem()
    rows = KernelGram(X, "rbf", gamma=0.2)
    path = tmp_path / "svm.ckpt"
    solve_qp(rows, y, 1.0, checkpoint=path, **OPTIONS)
    before = {p: p.stat().st_mtime_ns for p in path.rglob("*")}
    cases = [
        (dict(C=2.0), "the bounds C"),
        (dict(rows=KernelGram(X, "rbf", gamma=0.3)), "the kernel matrix"),
        (dict(y=-y), "the labels y"),
        (dict(tol=1e-3), "tol"),
    ]
    for change, named in cases:
        args = {"rows": rows, "y": y, "C": 1.0, **OPTIONS, **change}
        with pytest.raises(ValueError, match=f"written for another problem; these differ: {named}"):
            solve_qp(args.pop("rows"), args.pop("y"), args.pop("C"), checkpoint=path, **args)
    assert {p: p.stat().st_mtime_ns for p in path.rglob("*")} == before
    other = tmp_path / "notes"
    other.mkdir()
    (other / "todo.txt").write_text("mine")
    with pytest.raises(ArtifactPathError, match="not a dkernel solver checkpoint"):
        solve_qp(rows, y, 1.0, checkpoint=other, **OPTIONS)
    assert (other / "todo.txt").read_text() == "mine"


def test_an_estimator_checkpoint_keeps_one_problem_per_folder_and_refuses_another_fit(tmp_path, solver_log):
    X, y = make_classification(n_samples=300, n_features=6, n_informative=4, n_classes=3, random_state=4)
    params = dict(kernel="rbf", gamma=0.2, tol=1e-6, working_set_size=8)
    path = tmp_path / "fit.ckpt"
    first = SVC(checkpoint=path, **params).fit(X, y)
    assert sorted(p.name for p in path.iterdir() if not p.name.startswith(".")) == [
        "problem-0", "problem-1", "problem-2", "zarr.json"]
    again = SVC(checkpoint=path, **params).fit(X, y)
    assert sum("holds the solution" in m for m in solver_log) == 3
    np.testing.assert_array_max_ulp(again.decision_function(X), first.decision_function(X), maxulp=4)
    with pytest.raises(ValueError, match="holds the state of 3 binary problems, but this fit has 1"):
        SVC(checkpoint=path, **params).fit(X[y < 2], y[y < 2])


# ----------------------------------------------------------------- a killed process
_DRIVER = textwrap.dedent("""
    import sys, time, warnings
    import numpy as np
    from sklearn.datasets import make_classification
    import dkernel.solver._loop as loop

    solve = loop.smo_subproblem

    def slow_subproblem(*args):  # slow enough that the process is killed in the middle of the fit
        time.sleep(0.05)
        return solve(*args)

    loop.smo_subproblem = slow_subproblem
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "cli":
        from dkernel.cli import main
        sys.exit(main(sys.argv[3:]))
    from dkernel import SVC
    from dkernel.solver import Checkpoint
    X, y = make_classification(n_samples=NSAMPLES, n_features=6, n_informative=4, n_classes=int(sys.argv[3]),
                               random_state=5)
    model = SVC(checkpoint=Checkpoint(path, every_iter=3), **PARAMS)
    if mode == "local":
        model.fit(X, y)
    else:
        import distributed
        warnings.simplefilter("ignore")
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                      dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            model.set_params(client=client).fit(X, y)
""")
N_SAMPLES = 300
PARAMS = dict(kernel="rbf", gamma=0.2, C=1.0, tol=1e-6, working_set_size=16)


def _data(n_classes):
    return make_classification(n_samples=N_SAMPLES, n_features=6, n_informative=4, n_classes=n_classes,
                               random_state=5)


def _run_until(tmp_path, argv, written, timeout=120):
    """Run the driver with ``argv``; SIGKILL it once the checkpoint file ``written`` exists."""
    driver = tmp_path / "driver.py"
    driver.write_text(_DRIVER.replace("NSAMPLES", str(N_SAMPLES)).replace("PARAMS", f"dict(**{PARAMS!r})"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen([sys.executable, str(driver), *argv], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    try:
        while not written.exists():
            assert process.poll() is None, process.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "no checkpoint was written"
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()


@pytest.mark.parametrize("mode, n_classes, written", [("local", 2, "problem-0"), ("distributed", 3, "problem-1")])
def test_a_killed_fit_resumes_from_its_checkpoint(tmp_path, solver_log, mode, n_classes, written):
    X, y = _data(n_classes)
    path = tmp_path / "fit.ckpt"
    _run_until(tmp_path, [mode, str(path), str(n_classes)], path / written / "zarr.json")
    single = SVC(client=False, **PARAMS).fit(X, y)
    if mode == "local":
        uninterrupted, resumed = single, SVC(checkpoint=path, client=False, **PARAMS).fit(X, y)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                          dashboard_address=None) as cluster, distributed.Client(cluster) as client:
                uninterrupted = SVC(client=client, **PARAMS).fit(X, y)
                del solver_log[:]
                resumed = SVC(checkpoint=path, client=client, **PARAMS).fit(X, y)
        # The first problem was solved before the kill: it is not solved again.
        assert any("holds the solution" in m for m in solver_log)
    assert _resumed_iterations(solver_log)[0] >= 3
    np.testing.assert_allclose(resumed.decision_function(X), single.decision_function(X), atol=1e-6)
    # The same optimum as the uninterrupted fit. Not the same steps to the bit: kernel rows computed in blocks of
    # other shapes after the resume may differ in their last bits (BLAS), which can change a later working set.
    np.testing.assert_allclose(resumed.decision_function(X), uninterrupted.decision_function(X), atol=1e-6)
    np.testing.assert_array_equal(resumed.support_, uninterrupted.support_)


def test_dkernel_fit_resumes_from_its_checkpoint_with_the_same_command(tmp_path, solver_log, capsys):
    X, y = _data(2)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    path = tmp_path / "fit.ckpt"
    fit = ["fit", "--data", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"), "--gamma", "0.2",
           "--tol", "1e-6", "--working-set-size", "16", "--model", str(tmp_path / "model.zarr"),
           "--checkpoint", str(path), "--quiet"]
    assert main(fit[:-3] + ["--resume", "--quiet"]) == 2
    assert "--resume requires a checkpoint to resume from" in capsys.readouterr().err
    assert main(fit[:-3] + ["--checkpoint", str(tmp_path / "none"), "--resume", "--quiet"]) == 2
    assert "no checkpoint in --checkpoint" in capsys.readouterr().err
    _run_until(tmp_path, ["cli", str(path), *fit, "--checkpoint-iterations", "3"], path / "problem-0" / "zarr.json")
    assert not (tmp_path / "model.zarr").exists()
    assert main(fit) == 0  # the same command goes on from the checkpoint (--resume only requires one)
    assert _resumed_iterations(solver_log)[0] >= 3
    model = load_model(tmp_path / "model.zarr")
    uninterrupted = SVC(**PARAMS).fit(X, y)
    np.testing.assert_allclose(model.decision_function(X), uninterrupted.decision_function(X), atol=1e-6)


def test_a_fit_without_a_checkpoint_loads_none_of_the_checkpoints_code():
    """The checkpoint's module (zarr groups, digests, four dataclasses made at import: 2-3 ms of a fresh fit)
    is imported by a checkpointed solve only."""
    code = textwrap.dedent("""
        import sys
        import numpy as np
        from sklearn.datasets import make_classification
        from dkernel import SVC
        X, y = make_classification(n_samples=3000, n_features=10, random_state=0)
        SVC(kernel="rbf", gamma="scale", client=False).fit(X, y)
        assert "dkernel.solver._solve" in sys.modules, "the block solver did not run"
        print(any(name.startswith("dkernel.solver._checkpoint") for name in sys.modules))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    from dkernel import solver

    assert solver.Checkpoint is Checkpoint and "Checkpoint" in dir(solver)
