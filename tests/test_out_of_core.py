"""Out of core on a real cluster: worker memory does not grow with the Gram, and a stalled run fails clearly."""

import numpy as np
import pytest

import dask

from dkernel import GramMatrix
from dkernel._runtime.memory import peak_memory, reset_peak_memory
from dkernel._runtime.client import compute_with_progress, resolve_client
from dkernel._runtime.progress import TextProgress
from dkernel.exceptions import ClusterStalledError
from _streams import RecordingStream


@pytest.fixture
def limited_cluster():
    """Two one-thread worker processes limited to 1 GB each, bound to 127.0.0.1."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None, memory_limit="1GB") as cluster, Client(cluster) as client:
        yield client


@pytest.mark.slow
@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/clear_refs"), reason="needs Linux /proc")
def test_worker_memory_does_not_grow_with_the_number_of_blocks(tmp_path, limited_cluster):
    client = limited_cluster
    n, chunk = 10000, 1250  # 8 x 8 grid: 36 evaluated blocks, >= 16 per worker
    block_bytes = chunk * chunk * 8  # 12.5 MB
    X = np.random.default_rng(0).normal(size=(n, 8))
    # Warm up every worker (imports, zarr, the data's first copy) on a small store of its own.
    GramMatrix.compute(X[:2 * chunk], kernel="rbf", gamma=0.1, chunk=chunk, store=tmp_path / "warm.zarr",
                       client=client, progress=False)
    baseline = client.run(reset_peak_memory)
    gram = GramMatrix.compute(X, kernel="rbf", gamma=0.1, chunk=chunk, store=tmp_path / "K.zarr", client=client,
                              progress=False)
    peaks = client.run(peak_memory)
    assert gram.n_blocks_computed == 36 and gram.complete
    # Without a pool per run and worker, each finished block kept its buffer alive: 18 x 12.5 MB per worker.
    # A block in flight takes a few buffers (kernel, distances, compressed copy) and the allocator keeps some
    # slack: 6 blocks is a third of what a leak would hold.
    for worker, peak in peaks.items():
        growth = peak - baseline[worker]
        assert growth < 6 * block_bytes, (
            f"{worker}: peak RSS grew by {growth / 2**20:.0f} MiB during a run of 36 blocks of "
            f"{block_bytes / 2**20:.1f} MiB"
        )
    # The run's buffers are gone from the workers once it ended.
    from dkernel._runtime.buffers import pool_nbytes

    assert set(client.run(pool_nbytes).values()) == {0}
    # And the stored values are right.
    rows = gram.rows([0, 4321, n - 1])
    from sklearn.metrics.pairwise import rbf_kernel

    np.testing.assert_allclose(rows, rbf_kernel(X[[0, 4321, n - 1]], X, gamma=0.1), rtol=1e-12, atol=1e-14)


@pytest.mark.slow
def test_a_run_on_paused_workers_fails_with_a_clear_error(tmp_path):
    """Workers whose memory stays above their pause threshold: the run fails and names the cause."""
    from distributed import Client, LocalCluster

    low_pause = {"distributed.worker.memory.pause": 0.05, "distributed.worker.memory.target": False,
                 "distributed.worker.memory.spill": False, "dkernel.stall-timeout": "3s"}
    X = np.random.default_rng(0).normal(size=(200, 3))  # 20 x 20 blocks: 210 tasks, more than run before a pause
    with dask.config.set(low_pause), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                         dashboard_address=None, memory_limit="1GB") as cluster, Client(cluster) as client:
        with pytest.raises(ClusterStalledError, match=r"all 2 workers are paused .*memory_limit"):
            GramMatrix.compute(X, kernel="rbf", chunk=10, store=tmp_path / "K.zarr", client=client,
                               progress=False)
    # The blocks written before the workers paused are kept; a new run computes exactly the others.
    import zarr

    done = zarr.open_array(str(tmp_path / "K.zarr"), path="done", mode="r")[:]
    missing = int((done == 0)[np.triu_indices(20)].sum())
    assert missing > 0
    gram = GramMatrix.compute(X, kernel="rbf", chunk=10, store=tmp_path / "K.zarr", client=False, progress=False)
    assert gram.complete and gram.n_blocks_computed == missing


class _CountHeld:
    """A progress object that records how many finished results the scheduler still holds at each update."""

    def __init__(self, client):
        self.client, self.held = client, []

    def update(self, done):
        self.held.append(self.client.run_on_scheduler(
            lambda dask_scheduler: sum(1 for ts in dask_scheduler.tasks.values() if ts.state == "memory")))


@pytest.mark.slow
def test_results_come_back_in_order_and_futures_are_released_as_they_complete(limited_cluster):
    import time

    from dkernel._runtime.client import gather_as_completed

    client = limited_cluster
    # Tasks of 0.1 s on two workers: about four finish in the time the spy takes to ask the scheduler, even
    # when the machine is busy with other processes.
    futures = client.map(lambda k: time.sleep(0.1) or k * k, range(40), pure=False)
    spy = _CountHeld(client)
    assert gather_as_completed(client, futures, spy) == [k * k for k in range(40)]
    assert futures == []  # the list was handed over
    # Held results stay bounded by what finished since the last release, not by what finished so far (up to 40).
    assert len(spy.held) >= 5 and max(spy.held) <= 8, spy.held
    tasks = [dask.delayed(lambda k: k + 1, pure=False)(k) for k in range(10)]
    assert compute_with_progress(tasks, client, progress=False) == list(range(1, 11))


def test_the_poll_pause_starts_at_a_millisecond_doubles_to_fifty_and_resets(monkeypatch):
    from dkernel._runtime import client as client_module

    slept = []
    monkeypatch.setattr(client_module.time, "sleep", slept.append)
    pause = client_module.PollPause()
    for _ in range(9):
        pause.wait()
    pause.reset()
    pause.wait()
    assert slept == pytest.approx([0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.05, 0.05, 0.05, 0.001])


def test_a_task_of_a_few_milliseconds_is_gathered_without_the_longest_pause(limited_cluster, monkeypatch):
    """The pauses taken while a short task runs stay at the first ones (no fixed 50 ms look)."""
    import time

    from dkernel._runtime import client as client_module

    slept = []
    real_sleep = time.sleep

    def spy(seconds):
        slept.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(client_module.time, "sleep", spy)
    futures = limited_cluster.map(lambda k: k + 1, range(3), pure=False)
    assert client_module.gather_as_completed(limited_cluster, futures) == [1, 2, 3]
    assert slept and slept[0] == client_module.PollPause.shortest


def test_a_failed_task_raises_its_own_error(limited_cluster):
    def fail(k):
        if k == 3:
            raise ArithmeticError("block 3 failed")
        return k

    tasks = [dask.delayed(fail, pure=False)(k) for k in range(6)]
    with pytest.raises(ArithmeticError, match="block 3 failed"):
        compute_with_progress(tasks, limited_cluster, progress=False)


def test_client_false_runs_in_this_process(tmp_path, limited_cluster):
    """``client=False`` means this process even when a default client exists (as in SVC)."""
    assert resolve_client(False) == (None, False)
    X = np.random.default_rng(0).normal(size=(30, 3))
    gram = GramMatrix.compute(X, kernel="rbf", chunk=10, store=tmp_path / "K.zarr", client=False, progress=False)
    assert gram.complete
    assert client_tasks_seen(limited_cluster) == 0


def client_tasks_seen(client):
    """Block-writing task groups the cluster's scheduler has seen."""
    return client.run_on_scheduler(
        lambda dask_scheduler: sum(1 for prefix in dask_scheduler.task_prefixes if "write_block" in prefix))


def test_resolve_client_rejects_other_values():
    with pytest.raises(TypeError, match="scheduler address"):
        resolve_client(3)


def test_progress_is_a_bar_on_a_terminal_and_lines_otherwise():
    tty = RecordingStream(True)
    bar = TextProgress(4, "blocks", stream=tty, interval=0)
    for k in range(1, 5):
        bar.update(k)
    bar.close()
    assert "\r[" in tty.text and "4/4 blocks" in tty.text and tty.text.endswith("\n")
    plain = RecordingStream(False)
    bar = TextProgress(4, "blocks", stream=plain, interval=3600)
    for k in range(1, 5):
        bar.update(k)
    bar.close()
    assert "\r" not in plain.text and "[" not in plain.text
    lines = plain.text.splitlines()
    assert lines[0].startswith("1/4 blocks") and lines[-1].startswith("4/4 blocks")
    assert len(lines) <= 3  # the first, the last, the closing line: not one per task
    silent = RecordingStream(True)
    TextProgress(4, stream=silent, enabled=False).update(2)
    assert silent.text == ""
