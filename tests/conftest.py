"""Shared pytest fixtures."""

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _processes import stop_in_turn

#: Most test processes ``-n auto`` starts (pyproject.toml's addopts): each may start a cluster of its own.
MAX_TEST_PROCESSES = 4


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """One test process per core of this process's CPU set, at most :data:`MAX_TEST_PROCESSES`."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cores, MAX_TEST_PROCESSES))


# --------------------------------------------------------------------------- #
# Data sets
# --------------------------------------------------------------------------- #


@pytest.fixture(scope="session")
def data_home():
    """Folder holding the benchmark data sets (usps/, uci/, 20newsgroups/ ...).

    ``$DKERNEL_DATA`` if set (a relative path is taken from the current
    directory, as the README's ``DKERNEL_DATA=../shared/data``, and made
    absolute), else ``<repo>/../shared/data``; tests that use this fixture
    are skipped when neither exists.
    """
    env = os.environ.get("DKERNEL_DATA")
    if env:
        return Path(env).absolute()
    default = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    if default.is_dir():
        return default
    pytest.skip(
        "dataset folder not found: set DKERNEL_DATA to the folder holding "
        "usps/, uci/, 20newsgroups/ ..."
    )


@pytest.fixture
def cmc_classes_1_2():
    """Contraceptive method choice, classes 1 and 2 (unscaled): ``(X, y)``; skipped without the data set."""
    import numpy as np

    from dkernel.datasets import load

    try:
        cmc = load("cmc", download=False)
    except Exception as exc:  # noqa: BLE001 - the data set is optional here
        pytest.skip(f"cmc not available: {exc}")
    X, y = np.asarray(cmc.X, dtype=np.float64), np.asarray(cmc.y)
    keep = np.isin(y, [1, 2])
    return X[keep], y[keep]


# --------------------------------------------------------------------------- #
# A Dask scheduler and workers started as separate processes
# --------------------------------------------------------------------------- #

REPO = Path(__file__).resolve().parents[1]


def _wait_until(predicate, timeout, what, process):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline or process.poll() is not None:
            pytest.fail(f"{what} did not start")
        time.sleep(0.1)


@pytest.fixture
def scheduler_address(tmp_path, request):
    """``tcp://127.0.0.1:PORT`` of a scheduler and two one-thread workers, each its own process.

    They are started as a user would (``python -m distributed.cli.dask_scheduler`` /
    ``dask_worker``, every server on 127.0.0.1 as in ``cluster/README.md``)
    and terminated afterwards; the workers can import this repository (the
    pipelines), as workers of a real deployment would, and run without
    ``$DKERNEL_DATA``: only the client knows where the data sets are.
    Parametrized indirectly, the parameter is a dict of environment
    variables set for the workers only.
    """
    from distributed import Client

    scheduler_file = tmp_path / "scheduler.json"
    env = {key: value for key, value in os.environ.items() if key != "DKERNEL_DATA"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    common = {"cwd": REPO, "env": env, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    worker_env = {**env, **getattr(request, "param", {})}
    processes = [subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
         "--scheduler-file", str(scheduler_file), "--no-dashboard", "--dashboard-address", "127.0.0.1:0"],
        **common)]  # fmt: skip
    try:
        _wait_until(scheduler_file.exists, 60, "the dask scheduler", processes[0])
        time.sleep(0.2)
        address = json.loads(scheduler_file.read_text())["address"]
        processes.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nworkers", "2", "--nthreads", "1",
             "--host", "127.0.0.1", "--no-dashboard", "--dashboard-address", "127.0.0.1:0"],
            **{**common, "env": worker_env}))  # fmt: skip
        with Client(address, timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        stop_in_turn(reversed(processes))


class _Records(logging.Handler):
    """Keeps the messages of the records it is given (whether or not pytest's logging plugin runs)."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture
def solver_log():
    """The messages the ``dkernel.solver`` logger emits at INFO and above during the test."""
    handler, logger = _Records(), logging.getLogger("dkernel.solver")
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler.messages
    logger.removeHandler(handler)
    logger.setLevel(previous)


@pytest.fixture(scope="module")
def nanny_cluster():
    """A client of two worker processes, each under a nanny that starts a replacement when it dies."""
    import warnings

    import distributed

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                      dashboard_address=None) as local, distributed.Client(local) as client:
            yield client


@pytest.fixture
def cli_files(tmp_path, monkeypatch):
    """For the command line's tests, in a fresh cwd: X.npy (40 x 3), y.npy (+-1), the Gram store K.zarr (blocks of
    20) and the model m.zarr, written by the commands themselves."""
    import numpy as np

    from dkernel.cli import main

    monkeypatch.chdir(tmp_path)
    X = np.random.default_rng(0).normal(size=(40, 3))
    np.save("X.npy", X)
    np.save("y.npy", np.where(X[:, 0] > 0, 1, -1))
    assert main(["gram", "--input", "X.npy", "--out", "K.zarr", "--chunk", "20", "--no-progress"]) == 0
    assert main(["fit", "--data", "X.npy", "--labels", "y.npy", "--model", "m.zarr", "--quiet"]) == 0
    return tmp_path
