"""The client of a distributed fit only steers: its process uses a small share of the CPU time of the workers."""

import os
import time
import warnings

import numpy as np
import psutil
import pytest
from sklearn.datasets import make_classification

from dkernel import SVC
from dkernel.gram import GramMatrix

distributed = pytest.importorskip("distributed")

N_SAMPLES = 4000
PARAMS = dict(kernel="rbf", gamma=0.01, C=10.0, centering="class-balanced", normalize=True, tol=1e-3)


def _cpu_seconds(pids):
    times = [psutil.Process(pid).cpu_times() for pid in pids]
    return sum(t.user + t.system for t in times)


def test_a_stored_centered_normalized_fit_on_workers_matches_one_process_with_a_light_client(tmp_path):
    X, y = make_classification(n_samples=N_SAMPLES, n_features=32, flip_y=0.1, random_state=8)
    store = tmp_path / "K.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                      dashboard_address=None) as local, distributed.Client(local) as client:
            for data, path in ((X[:300], tmp_path / "warm.zarr"), (X, store)):
                GramMatrix.compute(data, kernel="rbf", gamma=PARAMS["gamma"], store=path, client=client,
                                   progress=False)
            pids = list(client.run(os.getpid).values())
            SVC(client=client, store=tmp_path / "warm.zarr", **PARAMS).fit(X[:300], y[:300])  # code loaded everywhere
            workers_before, client_before = _cpu_seconds(pids), time.process_time()
            model = SVC(client=client, store=store, **PARAMS).fit(X, y)
            client_cpu, workers_cpu = time.process_time() - client_before, _cpu_seconds(pids) - workers_before
    single = SVC(client=False, store=store, **PARAMS).fit(X, y)
    np.testing.assert_allclose(model.decision_function(X), single.decision_function(X), atol=1e-6)
    print(f"client {client_cpu:.2f} s, workers {workers_cpu:.2f} s, ratio {client_cpu / workers_cpu:.3f}, "
          f"{int(model.n_iter_[0])} iterations")
    assert client_cpu < 0.2 * workers_cpu
