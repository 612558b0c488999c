"""Cluster specs (``--cluster``, ``client=``): parsing and its errors, and real runs on the engines.

The SLURM and SSH tests start real daemons with ``cluster/slurm-single-node.sh`` and
``cluster/ssh-localhost.sh`` (and stop them); they skip where the binaries are absent. The
Kubernetes manifest is validated against the DaskCluster CRD shipped in dask-kubernetes.
"""

import importlib.util
import ipaddress
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from dkernel import SVC, GramMatrix, RBFKernel, cli
from dkernel._runtime.clusters import CLUSTER_EXTRA, parse_cluster_spec
from dkernel._runtime.client import describe_cluster, scheduler_client
from dkernel.exceptions import ClusterSpecError

REPO = Path(__file__).resolve().parents[1]
CLUSTER = REPO / "cluster"


def _write(path, text):
    path.write_text(text)
    return str(path)


# --------------------------------------------------------------------------- #
# Parsing: every form, and the errors that name the flag
# --------------------------------------------------------------------------- #


def test_local_and_address_specs():
    assert parse_cluster_spec("local").kind == "local" and parse_cluster_spec("local").n_workers is None
    assert parse_cluster_spec("local:3").n_workers == 3
    spec = parse_cluster_spec("tls://10.0.0.1:8786")
    assert (spec.kind, spec.address, spec.starts_cluster) == ("address", "tls://10.0.0.1:8786", False)


@pytest.mark.parametrize(("text", "message"), [
    ("local:0", "--cluster local:0: a local cluster needs at least one worker"),
    ("http://10.0.0.1:8786", "--cluster http://10.0.0.1:8786: unknown scheme http://"),
    ("missing.yaml", "--cluster missing.yaml: no such file"),
    ("nonsense", "--cluster nonsense: not a cluster spec; a cluster spec is 'local'"),
])
def test_malformed_specs_name_the_flag(text, message):
    with pytest.raises(ClusterSpecError) as error:
        parse_cluster_spec(text, "--cluster")
    assert str(error.value).startswith(message)


def test_scheduler_file_spec(tmp_path):
    path = _write(tmp_path / "scheduler.json", json.dumps({"address": "tcp://127.0.0.1:8786", "id": "x"}))
    assert parse_cluster_spec(path).address == "tcp://127.0.0.1:8786"
    bad = _write(tmp_path / "bad.json", "{}")
    with pytest.raises(ClusterSpecError, match="has no 'address'"):
        parse_cluster_spec(bad)


def test_a_binary_file_given_as_a_spec_is_named_with_the_flag(tmp_path):
    path = tmp_path / "X.npy"
    path.write_bytes(b"\x93NUMPY\x01\x00v\x00")
    with pytest.raises(ClusterSpecError, match=r"^--cluster .*X\.npy: cannot read the cluster YAML"):
        parse_cluster_spec(str(path), "--cluster")


@pytest.mark.parametrize(("document", "message"), [
    ("kind: lsf\n", "unknown kind 'lsf'; one of slurm, pbs, ssh, kubernetes, scheduler"),
    ("jobs: 2\n", "a mapping with a 'kind'"),
    ("kind: slurm\nworkers: 2\n", "unknown key(s) workers for kind slurm; it takes security, jobs, cluster"),
    ("kind: slurm\njobs: 0\n", "'jobs' must be an integer >= 1; got 0"),
    ("kind: ssh\nhosts: [a]\n", "'hosts' must list at least two hosts"),
    ("kind: ssh\nhosts: [10.0.0.1, 10.0.0.2]\nworker_options: {interface: eth0}\n",
     "hosts beyond this machine: set 'interface' (e.g. eth0) or 'host' in scheduler_options"),
    ("kind: ssh\nhosts: [127.0.0.1, 127.0.0.1]\nsecurity: temporary\n", "security: temporary is for kind slurm"),
    ("kind: scheduler\naddress: tls://10.0.0.1:8786\nsecurity: {ca-file: /nonexistent/ca.pem}\n",
     "security: no such file /nonexistent/ca.pem"),
    ("kind: kubernetes\nnamespace: x\n", "kind kubernetes needs 'name'"),
])
def test_malformed_yaml_specs(tmp_path, document, message):
    path = _write(tmp_path / "spec.yaml", document)
    if "kubernetes" in document and importlib.util.find_spec("dask_kubernetes") is None:
        pytest.skip("dask-kubernetes is not installed")
    if "ssh" in document and importlib.util.find_spec("asyncssh") is None:
        pytest.skip("asyncssh is not installed")
    with pytest.raises(ClusterSpecError) as error:
        parse_cluster_spec(path, "--scheduler")
    assert str(error.value).startswith(f"--scheduler {path}: ")
    assert message in str(error.value)


def test_a_missing_engine_package_names_the_extra(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "dask_jobqueue" else real(name))
    path = _write(tmp_path / "slurm.yaml", "kind: slurm\njobs: 1\n")
    with pytest.raises(ClusterSpecError) as error:
        parse_cluster_spec(path)
    assert str(error.value) == (f"--cluster {path}: kind slurm needs the package dask-jobqueue; install it with "
                                f"{CLUSTER_EXTRA}.")


def test_jobqueue_spec_binds_to_loopback_unless_an_interface_is_named(tmp_path):
    pytest.importorskip("dask_jobqueue")
    spec = parse_cluster_spec(_write(tmp_path / "a.yaml", "kind: slurm\njobs: 3\ncluster: {cores: 1}\n"))
    assert spec.n_workers == 3 and spec.starts_cluster
    assert spec.options["scheduler_options"] == {"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"}
    assert spec.options["worker_extra_args"] == ["--host", "127.0.0.1", "--no-dashboard", "--dashboard-address",
                                                 "127.0.0.1:0"]
    spec = parse_cluster_spec(_write(tmp_path / "b.yaml", "kind: pbs\ncluster: {interface: ib0}\n"))
    assert spec.options["scheduler_options"] == {"dashboard_address": "127.0.0.1:0"}
    assert "--host" not in spec.options["worker_extra_args"]


def test_ssh_spec_on_loopback_hosts_binds_to_loopback(tmp_path):
    pytest.importorskip("asyncssh")
    spec = parse_cluster_spec(_write(tmp_path / "s.yaml", "kind: ssh\nhosts: [localhost, 127.0.0.1]\n"))
    assert spec.options["scheduler_options"]["host"] == spec.options["worker_options"]["host"] == "127.0.0.1"


def test_the_example_specs_parse(tmp_path):
    """cluster/*.yaml as shipped (the TLS files of ssh.yaml replaced by files that exist)."""
    pytest.importorskip("dask_jobqueue")
    pytest.importorskip("asyncssh")
    assert parse_cluster_spec(str(CLUSTER / "slurm.yaml")).security is True
    assert parse_cluster_spec(str(CLUSTER / "pbs.yaml")).options["interface"] == "ib0"
    for name in ("ca.pem", "client.pem", "client-key.pem", "scheduler.pem", "scheduler-key.pem", "worker.pem",
                 "worker-key.pem"):
        (tmp_path / name).write_text("")
    text = (CLUSTER / "ssh.yaml").read_text().replace("/etc/dkernel/tls", str(tmp_path))
    spec = parse_cluster_spec(_write(tmp_path / "ssh.yaml", text))
    assert spec.options["scheduler_options"]["protocol"] == "tls://"
    assert spec.options["worker_options"]["interface"] == "eth0"
    if importlib.util.find_spec("dask_kubernetes"):
        spec = parse_cluster_spec(str(CLUSTER / "kubernetes" / "dkernel.yaml"))
        assert (spec.options["name"], spec.starts_cluster) == ("dkernel", False)


# --------------------------------------------------------------------------- #
# The command line: --cluster, its alias --scheduler, checked before any work
# --------------------------------------------------------------------------- #


def test_cli_refuses_a_bad_cluster_before_reading_anything(tmp_path, capsys):
    out = tmp_path / "K.zarr"
    assert cli.main(["gram", "--input", str(tmp_path / "absent.npy"), "--cluster", "nope.yaml",
                     "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith("dkernel: error: --cluster nope.yaml: no such file")
    assert cli.main(["fit", "--data", "x.npy", "--model", str(tmp_path / "m"), "--scheduler", "ftp://x"]) == 2
    assert capsys.readouterr().err.startswith("dkernel: error: --scheduler ftp://x: unknown scheme ftp://")
    assert cli.main(["gram", "--demo", "--cluster", "local", "--scheduler", "local", "--out", str(out)]) == 2
    assert "--cluster and --scheduler are the same option" in capsys.readouterr().err
    assert not out.exists()


def test_pipeline_refuses_a_bad_cluster_before_any_task(tmp_path, capsys):
    assert cli.main(["run", "meila_shift_synthetic", "--quick", "--cluster", "slurm.yml", "--out",
                     str(tmp_path)]) == 2
    assert "--cluster slurm.yml: no such file" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_gram_and_svc_accept_a_local_spec(tmp_path):
    """``client="local:2"`` starts two worker processes for the call and closes them after it."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=120) > 0, 1, -1)
    K = GramMatrix.compute(X, kernel="rbf", gamma=0.5, store=tmp_path / "K.zarr", chunk=50, client="local:2",
                           progress=False)
    np.testing.assert_allclose(K.to_numpy(), RBFKernel(gamma=0.5)(X, X), rtol=1e-12)
    on_cluster = SVC(kernel="rbf", gamma=0.5, client="local:2").fit(X, y)
    here = SVC(kernel="rbf", gamma=0.5, client=False).fit(X, y)
    np.testing.assert_allclose(on_cluster.decision_function(X), here.decision_function(X), atol=1e-3)
    import distributed

    with pytest.raises(ValueError):
        distributed.default_client()  # nothing left open


# --------------------------------------------------------------------------- #
# Real engines
# --------------------------------------------------------------------------- #


def _loopback(address):
    host = address.split("://", 1)[1].rsplit(":", 1)[0]
    return ipaddress.ip_address(host).is_loopback


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    return X, np.where(X[:, 0] - X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1, -1)


def _script(name, action, env):
    return subprocess.run([str(CLUSTER / name), action], env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A single-node SLURM of cluster/slurm-single-node.sh for this module: ``SLURM_CONF`` set, stopped after."""
    if not (shutil.which("sbatch") and shutil.which("slurmctld") and shutil.which("slurmd")
            and shutil.which("munged")):
        pytest.skip("SLURM is not installed here (no sbatch/slurmctld/slurmd/munged)")
    if os.geteuid() != 0:
        pytest.skip("cluster/slurm-single-node.sh starts slurmd, which runs as root")
    pytest.importorskip("dask_jobqueue")
    folder = tmp_path_factory.mktemp("slurm") / "state"
    env = {**os.environ, "DKERNEL_SLURM_DIR": str(folder)}
    up = _script("slurm-single-node.sh", "up", env)
    assert up.returncode == 0, up.stdout + up.stderr
    previous = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(folder / "slurm.conf")
    try:
        yield folder
    finally:
        down = _script("slurm-single-node.sh", "down", env)
        if previous is None:
            os.environ.pop("SLURM_CONF")
        else:
            os.environ["SLURM_CONF"] = previous
        assert down.returncode == 0 and not folder.exists(), down.stdout + down.stderr


def _squeue():
    return subprocess.run(["squeue", "--noheader", "--format=%i %T"], capture_output=True, text=True,
                          check=True).stdout.split()


def _slurm_spec(tmp_path):
    text = (CLUSTER / "slurm.yaml").read_text()
    text = text.replace("/tmp/dkernel-slurm-logs", str(tmp_path / "logs")).replace(
        "shared_temp_directory: /tmp", f"shared_temp_directory: {tmp_path}")
    return _write(tmp_path / "slurm.yaml", text)


def test_slurm_workers_are_batch_jobs(slurm, tmp_path):
    """cluster/slurm.yaml: two SLURM jobs run the workers, over TLS on 127.0.0.1; the jobs end with the client."""
    X, y = _data()
    with scheduler_client(_slurm_spec(tmp_path)) as client:
        description = describe_cluster(client)
        jobs = [job.job_id for job in client.cluster.workers.values()]
        queue = _squeue()
        info = client.scheduler_info(n_workers=-1)
        K = GramMatrix.compute(X, kernel="rbf", gamma=0.5, store=tmp_path / "K.zarr", chunk=64, client=client,
                               progress=False)
        clf = SVC(kernel="rbf", gamma=0.5, client=client).fit(X, y)
    assert description.startswith("a SLURMCluster at tls://127.0.0.1:") and "with 2 workers" in description
    assert len(jobs) == 2 and all(f"{job} RUNNING" in " ".join(queue) for job in jobs), (jobs, queue)
    assert info["address"].startswith("tls://") and _loopback(info["address"])
    assert len(info["workers"]) == 2 and all(_loopback(a) and a.startswith("tls://") for a in info["workers"])
    np.testing.assert_allclose(K.to_numpy(), RBFKernel(gamma=0.5)(X, X), rtol=1e-12)
    here = SVC(kernel="rbf", gamma=0.5, client=False).fit(X, y)
    np.testing.assert_allclose(clf.decision_function(X), here.decision_function(X), atol=1e-3)
    deadline = time.monotonic() + 60
    while _squeue() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _squeue() == []


def test_slurm_cli_fit(slurm, tmp_path, capsys):
    X, y = _data(seed=1)
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "y.npy", y)
    code = cli.main(["fit", "--data", str(tmp_path / "X.npy"), "--labels", str(tmp_path / "y.npy"),
                     "--gamma", "0.5", "--model", str(tmp_path / "model.zarr"), "--quiet",
                     "--cluster", _slurm_spec(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "dkernel: started a SLURMCluster at tls://127.0.0.1:" in err and "(batch jobs " in err
    assert "trained on 200 samples" in out


@pytest.fixture
def ssh_spec(tmp_path):
    """The spec written by cluster/ssh-localhost.sh up (a throwaway sshd on 127.0.0.1); the sshd stopped after."""
    pytest.importorskip("asyncssh")
    if not (shutil.which("sshd") or os.path.exists("/usr/sbin/sshd")):
        pytest.skip("no sshd binary here (openssh-server is not installed)")
    folder = tmp_path / "sshd"
    env = {**os.environ, "DKERNEL_SSHD_DIR": str(folder), "PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(
               os.pathsep) if p])}
    up = _script("ssh-localhost.sh", "up", env)
    assert up.returncode == 0, up.stdout + up.stderr
    sshd = int((folder / "sshd.pid").read_text())
    try:
        yield str(folder / "ssh-localhost.yaml"), sshd
    finally:
        down = _script("ssh-localhost.sh", "down", env)
        assert down.returncode == 0 and not folder.exists(), down.stdout + down.stderr
    import psutil

    assert not psutil.pid_exists(sshd) or psutil.Process(sshd).status() == psutil.STATUS_ZOMBIE


def _listening_below(pid):
    """(pid, ip, port) of the listening sockets of ``pid``'s descendants."""
    import psutil

    found = set()
    for process in psutil.Process(pid).children(recursive=True):
        try:
            found |= {(process.pid, c.laddr.ip, c.laddr.port) for c in process.net_connections(kind="inet")
                      if c.status == psutil.CONN_LISTEN}
        except psutil.NoSuchProcess:
            continue
    return found


def test_ssh_cluster_on_localhost_binds_loopback(ssh_spec):
    spec, sshd = ssh_spec
    X, y = _data()
    with scheduler_client(spec) as client:
        info = client.scheduler_info(n_workers=-1)
        sockets = _listening_below(sshd)
        clf = SVC(kernel="rbf", gamma=0.5, client=client).fit(X, y)
    assert _loopback(info["address"]) and len(info["workers"]) == 2
    assert all(_loopback(address) for address in info["workers"])
    # The scheduler (server, HTTP server) and two nannies with their workers (server, HTTP server each).
    assert len({pid for pid, _, _ in sockets}) >= 3 and len(sockets) >= 6, sockets
    assert all(ipaddress.ip_address(ip).is_loopback for _, ip, _ in sockets), sockets
    here = SVC(kernel="rbf", gamma=0.5, client=False).fit(X, y)
    np.testing.assert_allclose(clf.decision_function(X), here.decision_function(X), atol=1e-3)


# --------------------------------------------------------------------------- #
# Kubernetes: the DaskCluster manifest against the operator's CRD
# --------------------------------------------------------------------------- #


def _strict(schema):
    """The CRD schema as Kubernetes applies it: unknown fields are not kept (pruned), so refuse them."""
    if isinstance(schema, dict):
        schema = {k: _strict(v) for k, v in schema.items()}
        if schema.get("x-kubernetes-int-or-string"):
            schema.pop("type", None)
            schema["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        if "properties" in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema.setdefault("additionalProperties", False)
        return schema
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    return schema


@pytest.fixture(scope="module")
def daskcluster_schema():
    pytest.importorskip("jsonschema")
    spec = importlib.util.find_spec("dask_kubernetes")
    if spec is None:
        pytest.skip(f"dask-kubernetes is not installed ({CLUSTER_EXTRA})")
    crd = Path(spec.origin).parent / "operator/deployment/helm/dask-kubernetes-operator/crds/daskcluster.yaml"
    document = yaml.safe_load(crd.read_text())
    (version,) = [v for v in document["spec"]["versions"] if v["name"] == "v1"]
    schema = _strict(version["schema"]["openAPIV3Schema"])
    # Fields every Kubernetes object has, which a CRD's schema leaves implicit.
    schema["properties"].update({"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                 "metadata": {"type": "object"}})
    return document["spec"]["group"], schema


def test_daskcluster_manifest_matches_the_operator_crd(daskcluster_schema):
    import jsonschema

    group, schema = daskcluster_schema
    manifest = yaml.safe_load((CLUSTER / "kubernetes" / "daskcluster.yaml").read_text())
    assert manifest["apiVersion"] == f"{group}/v1" and manifest["kind"] == "DaskCluster"
    jsonschema.validate(manifest, schema)
    pod_specs = [manifest["spec"]["scheduler"]["spec"], manifest["spec"]["worker"]["spec"]]
    for pod in pod_specs:
        (container,) = pod["containers"]
        assert container["image"].startswith("ghcr.io/dkernel/dkernel")
        assert {"name": "store", "mountPath": "/store"} in container["volumeMounts"]
        assert pod["volumes"] == [{"name": "store", "persistentVolumeClaim": {"claimName": "dkernel-store"}}]
    pvc = yaml.safe_load((CLUSTER / "kubernetes" / "store-pvc.yaml").read_text())
    assert pvc["metadata"]["name"] == "dkernel-store" and pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    assert manifest["spec"]["scheduler"]["service"]["type"] == "ClusterIP"


def test_the_object_store_manifest_matches_the_crd_mounts_no_volume_and_takes_credentials_from_a_secret(
        daskcluster_schema):
    import jsonschema

    _, schema = daskcluster_schema
    text = (CLUSTER / "kubernetes" / "daskcluster-s3.yaml").read_text()
    manifest = yaml.safe_load(text)
    jsonschema.validate(manifest, schema)
    for pod in (manifest["spec"]["scheduler"]["spec"], manifest["spec"]["worker"]["spec"]):
        (container,) = pod["containers"]
        assert "volumes" not in pod and "volumeMounts" not in container
        env = {e["name"]: e for e in container["env"]}
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            assert "value" not in env[name]
            assert env[name]["valueFrom"]["secretKeyRef"] == {"name": "dkernel-s3", "key": name}
    assert "s3://" in text and "[s3]" in (CLUSTER / "kubernetes" / "Dockerfile").read_text()


def test_the_crd_check_refuses_a_misspelled_field(daskcluster_schema):
    import jsonschema

    _, schema = daskcluster_schema
    manifest = yaml.safe_load((CLUSTER / "kubernetes" / "daskcluster.yaml").read_text())
    manifest["spec"]["worker"]["replica"] = manifest["spec"]["worker"].pop("replicas")
    with pytest.raises(jsonschema.ValidationError, match="replica"):
        jsonschema.validate(manifest, schema)


def test_a_store_url_is_written_through_its_filesystem_not_as_a_local_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    GramMatrix.compute(np.eye(3), kernel="linear", store="memory://dk/K.zarr", client=False, progress=False)
    assert list(tmp_path.iterdir()) == []
    np.testing.assert_array_equal(GramMatrix.open("memory://dk/K.zarr").to_numpy(), np.eye(3))
