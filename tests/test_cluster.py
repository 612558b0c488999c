"""The clusters dkernel starts and connects to: every server on the loopback interface, fast failures.

The listening sockets of each cluster's processes (psutil, over the whole
process tree) are compared with 127.0.0.0/8: the local cluster of
``--scheduler local`` and of the pipelines, and the scheduler and workers
started by the commands of ``cluster/README.md``.
"""

import ipaddress
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
from _processes import stop_in_turn

from dkernel import SVC, cli
from dkernel._runtime.client import resolve_client, start_local_cluster
from dkernel.exceptions import SchedulerUnreachableError

REPO = Path(__file__).resolve().parents[1]


def _listening(pids):
    """``{(pid, ip, port)}`` of the sockets in LISTEN state of ``pids`` and all their descendants."""
    found = set()
    for pid in pids:
        try:
            root = psutil.Process(pid)
            processes = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for process in processes:
            try:
                connections = process.net_connections(kind="inet")
            except psutil.NoSuchProcess:
                continue
            found |= {(process.pid, c.laddr.ip, c.laddr.port) for c in connections if c.status == psutil.CONN_LISTEN}
    return found


def _outside_loopback(sockets):
    loopback = ipaddress.ip_network("127.0.0.0/8")
    return sorted(s for s in sockets if ipaddress.ip_address(s[1]) not in loopback)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_outside_loopback_finds_wildcard_and_public_addresses():
    sockets = {(1, "127.0.0.1", 1), (1, "127.8.0.1", 2), (2, "0.0.0.0", 8787), (3, "10.0.0.2", 5), (4, "::", 6)}
    assert _outside_loopback(sockets) == [(2, "0.0.0.0", 8787), (3, "10.0.0.2", 5), (4, "::", 6)]


@pytest.mark.slow
def test_local_cluster_listens_on_loopback_only():
    before = _listening([os.getpid()])
    cluster, client = start_local_cluster(n_workers=2, threads_per_worker=1)
    with cluster, client:
        client.wait_for_workers(2, timeout=60)
        started = _listening([os.getpid()]) - before
        assert client.submit(sum, [1, 2]).result() == 3
    # This process: the scheduler (and its HTTP server) and two nannies; each worker process: its server and
    # its HTTP server.
    assert len(started) >= 8 and len({pid for pid, _, _ in started}) == 3, started
    assert _outside_loopback(started) == []


@pytest.mark.slow
def test_pipeline_local_cluster_listens_on_loopback_only(monkeypatch, tmp_path):
    import dkernel._runtime.client
    from pipelines._runner import PipelineConfig, execute

    before = _listening([os.getpid()])
    seen = []

    def spy(*args, **kwargs):
        cluster, client = start_local_cluster(*args, **kwargs)
        client.wait_for_workers(kwargs["n_workers"], timeout=60)
        seen.append(_listening([os.getpid()]) - before)
        return cluster, client

    monkeypatch.setattr(dkernel._runtime.client, "start_local_cluster", spy)
    config = PipelineConfig(scheduler="local", n_workers=2, out=tmp_path, progress=False)
    assert execute(len, [{"a": 1}, {"a": 1, "b": 2}], config) == [1, 2]
    assert len(seen) == 1 and len(seen[0]) >= 8 and len({pid for pid, _, _ in seen[0]}) == 3
    assert _outside_loopback(seen[0]) == []


def _readme_commands():
    """The ``dask scheduler`` and ``dask worker`` commands of cluster/README.md's one-machine section."""
    text = (REPO / "cluster" / "README.md").read_text()
    section = text.split("## A scheduler and workers on one machine", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    commands = [line.strip() for line in block.splitlines() if line.strip().startswith("dask ")]
    assert [c.split()[:2] for c in commands] == [["dask", "scheduler"], ["dask", "worker"]]
    return [shlex.split(c) for c in commands]


@pytest.mark.slow
def test_cluster_readme_commands_listen_on_loopback_only(tmp_path):
    scheduler_cmd, worker_cmd = _readme_commands()
    scheduler_file = tmp_path / "scheduler.json"
    port = str(_free_port())

    def adapt(argv):
        # The README's fixed port and scheduler file, moved out of the way of anything else on this machine.
        argv = [port if a == "8786" else str(scheduler_file) if a == "/tmp/dkernel-scheduler.json" else a
                for a in argv]  # fmt: skip
        return [str(Path(sys.executable).parent / "dask"), *argv[1:]]

    common = {"cwd": tmp_path, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    processes = [subprocess.Popen(adapt(scheduler_cmd), **common)]
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists():
            assert time.monotonic() < deadline and processes[0].poll() is None, "the scheduler did not start"
            time.sleep(0.1)
        time.sleep(0.2)
        address = json.loads(scheduler_file.read_text())["address"]
        assert address == f"tcp://127.0.0.1:{port}"
        processes.append(subprocess.Popen(adapt(worker_cmd), **common))
        from distributed import Client

        with Client(address, timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
        sockets = _listening([p.pid for p in processes])
    finally:
        stop_in_turn(reversed(processes), timeout=30)
    # The scheduler (server and HTTP server), the worker command (two nannies), its two worker processes
    # (server and HTTP server each).
    assert len(sockets) >= 8 and len({pid for pid, _, _ in sockets}) == 4, sockets
    assert _outside_loopback(sockets) == []


# --------------------------------------------------------------------------- #
# A scheduler address where nothing answers
# --------------------------------------------------------------------------- #


def test_unreachable_scheduler_fails_within_the_connect_timeout():
    import dask

    from dkernel._runtime.client import connect_timeout

    assert connect_timeout() == 10  # the default, when dask's config does not set dkernel.connect-timeout
    address = f"tcp://127.0.0.1:{_free_port()}"
    with dask.config.set({"dkernel.connect-timeout": "2s"}):
        start = time.monotonic()
        with pytest.raises(SchedulerUnreachableError, match=re.escape(address)) as raised:
            resolve_client(address)
        elapsed = time.monotonic() - start
    assert elapsed < 6  # the timeout set, not distributed's retries for minutes
    assert isinstance(raised.value, OSError) and "check the address" in str(raised.value)


def test_cli_and_estimator_name_the_unreachable_scheduler(tmp_path, capsys):
    import dask

    address = f"tcp://127.0.0.1:{_free_port()}"
    with dask.config.set({"dkernel.connect-timeout": "2s"}):
        start = time.monotonic()
        code = cli.main(["gram", "--demo", "--scheduler", address, "--out", str(tmp_path / "K.zarr"),
                         "--no-progress"])  # fmt: skip
        assert time.monotonic() - start < 15
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1
        assert err.startswith(f"dkernel: error: --scheduler {address}: no Dask scheduler answered")
        assert not (tmp_path / "K.zarr").exists()
        X = np.random.default_rng(0).normal(size=(20, 3))
        with pytest.raises(SchedulerUnreachableError, match=re.escape(address)):
            SVC(client=address).fit(X, np.arange(20) % 2)
