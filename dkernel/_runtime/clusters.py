"""Cluster specs: one string that says where a computation runs, checked before any work starts.

A spec is accepted wherever a client is (``GramMatrix.compute(client=...)``,
``SVC(client=...)``, ``--cluster`` of the ``dkernel`` commands):

============================ ==================================================================
``local``                    a ``distributed.LocalCluster`` of worker processes, every server on
                             127.0.0.1 (:func:`dkernel._runtime.client.start_local_cluster`)
``local:N``                  the same with N worker processes
``tcp://HOST:PORT``          a running scheduler (also ``tls://``, ``ucx://``, ``ws://``, ``wss://``)
``FILE.json``                a scheduler file (``dask scheduler --scheduler-file FILE.json``)
``FILE.yaml``                a cluster engine described in YAML (below)
============================ ==================================================================

The YAML file names its engine by ``kind``:

* ``slurm`` / ``pbs``: ``dask_jobqueue.SLURMCluster`` / ``PBSCluster`` with the
  keyword arguments of ``cluster:``, scaled to ``jobs:`` batch jobs;
* ``ssh``: ``distributed.SSHCluster`` (asyncssh) with ``hosts:``,
  ``connect_options:``, ``scheduler_options:``, ``worker_options:``, ``remote_python:``;
* ``kubernetes``: the dask-kubernetes operator's ``KubeCluster``, either created
  from ``cluster:`` or, with ``name:`` (and ``namespace:``) alone, the scheduler
  of an existing ``DaskCluster`` resource;
* ``scheduler``: a running scheduler at ``address:``.

Every kind takes ``security:``, the TLS files in the layout of Dask's
``distributed.comm.tls`` configuration (``ca-file``, ``client: {cert, key}``,
``scheduler: ...``, ``worker: ...``); the jobqueue kinds also take
``security: temporary``, a throwaway certificate authority made for the run.

**Binding.** Servers that a spec starts listen on 127.0.0.1 unless the spec
says otherwise: for ``slurm``/``pbs`` the scheduler (which runs in the
calling process) and the workers get ``host: 127.0.0.1`` unless ``cluster:``
sets ``interface`` or ``scheduler_options: {host | interface}``; for ``ssh``
on loopback hosts the scheduler and workers get ``host: 127.0.0.1``, and
hosts beyond this machine require the spec to name the host or interface
they listen on. Dashboards listen on ``127.0.0.1:0`` unless the spec sets
``dashboard_address``.

This module only reads and checks specs (no ``distributed`` import); the
clusters are started by :func:`dkernel._runtime.client.open_client`.
"""

import importlib.util
import ipaddress
import json
import os
import re
from dataclasses import dataclass, field

from ..exceptions import ClusterSpecError

__all__ = ["ClusterSpec", "ENGINES", "parse_cluster_spec", "CLUSTER_EXTRA"]

#: How to install the optional engines.
CLUSTER_EXTRA = 'pip install "dkernel[cluster]"'

#: Scheduler address schemes that ``distributed`` connects to.
ADDRESS_SCHEMES = ("tcp", "tls", "ucx", "ws", "wss", "inproc")

LOOPBACK = "127.0.0.1"
LOOPBACK_DASHBOARD = "127.0.0.1:0"


@dataclass(frozen=True)
class Engine:
    """A cluster engine of a YAML spec: the class that starts it and the package that provides it."""

    module: str
    cls: str
    package: str
    keys: tuple


#: ``kind`` of a YAML spec: its engine and the keys the file may hold besides ``kind`` and ``security``.
ENGINES = {
    "slurm": Engine("dask_jobqueue", "SLURMCluster", "dask-jobqueue", ("jobs", "cluster")),
    "pbs": Engine("dask_jobqueue", "PBSCluster", "dask-jobqueue", ("jobs", "cluster")),
    "ssh": Engine("asyncssh", "SSHCluster", "asyncssh",
                  ("hosts", "connect_options", "scheduler_options", "worker_options", "remote_python",
                   "worker_class")),
    "kubernetes": Engine("dask_kubernetes.operator", "KubeCluster", "dask-kubernetes",
                         ("name", "namespace", "cluster", "workers")),
    "scheduler": Engine("distributed", "Client", "distributed", ("address",)),
}  # fmt: skip


@dataclass(frozen=True)
class ClusterSpec:
    """A checked cluster spec.

    Attributes
    ----------
    kind : str
        ``"local"``, ``"address"``, ``"scheduler-file"`` or a key of :data:`ENGINES`.
    text : str
        The spec as given (a path for the file kinds).
    address : str or None
        The scheduler address of ``"address"`` and ``"scheduler"``.
    n_workers : int or None
        Worker processes of ``local:N``; batch jobs of ``slurm``/``pbs``.
    options : dict
        Keyword arguments of the engine, with the loopback defaults filled in.
    security : dict, True or None
        TLS files in the layout of ``distributed.comm.tls``, True for a
        temporary certificate authority, None for none.
    """

    kind: str
    text: str
    address: str | None = None
    n_workers: int | None = None
    options: dict = field(default_factory=dict)
    security: dict | bool | None = None

    @property
    def engine(self):
        """The :class:`Engine` of a YAML spec (None for local, address and scheduler file)."""
        return ENGINES.get(self.kind)

    @property
    def starts_cluster(self):
        """Whether opening the spec starts servers (and closing it stops them)."""
        if self.kind == "kubernetes":
            return "cluster" in self.options
        return self.kind not in ("address", "scheduler-file", "scheduler")

    def start_engine(self, security=None):
        """The cluster object of a YAML spec's engine, started (and scaled) but not waited for.

        Called by :func:`dkernel._runtime.client.open_client`, which makes the client,
        waits for the workers and closes the cluster with the client.
        ``security`` is the ``distributed.Security`` of the spec, or None.
        """
        if self.kind in ("slurm", "pbs"):
            import dask_jobqueue

            engine = getattr(dask_jobqueue, self.engine.cls)
            cluster = engine(**self.options, **({"security": security} if security else {}))
            cluster.scale(jobs=self.n_workers)
            return cluster
        if self.kind == "ssh":
            import dask
            from distributed import SSHCluster

            # The scheduler and workers started over SSH inherit this configuration (the TLS files).
            with dask.config.set(_tls_config(self.security)):
                return SSHCluster(**self.options, **({"security": security} if security else {}))
        if self.kind == "kubernetes":
            from dask_kubernetes.operator import KubeCluster

            where = {"namespace": self.options["namespace"]} if self.options.get("namespace") else {}
            if "cluster" in self.options:
                cluster = KubeCluster(**where, **self.options["cluster"])
            else:
                cluster = KubeCluster.from_name(self.options["name"], **where)
            if self.options.get("workers"):
                cluster.scale(self.options["workers"])
            return cluster
        raise ValueError(f"a {self.kind} spec starts no engine.")


def parse_cluster_spec(spec, option="--cluster"):
    """The :class:`ClusterSpec` of ``spec`` (a string, a path or a ClusterSpec), or :class:`ClusterSpecError`.

    The error names ``option`` (the flag or parameter the user gave) and
    what to do: the forms a spec takes, the missing file, the unknown
    ``kind``, or the package to install (``pip install "dkernel[cluster]"``).
    Files are read here; no server is contacted and nothing is started.
    """
    if isinstance(spec, ClusterSpec):
        return spec
    text = os.fspath(spec).strip() if isinstance(spec, (str, os.PathLike)) else None
    if not text:
        raise ClusterSpecError(f"{option} {spec!r}: {_FORMS}")
    local = re.fullmatch(r"local(?::(\d+))?", text)
    if local:
        n = int(local.group(1)) if local.group(1) else None
        if n == 0:
            raise ClusterSpecError(f"{option} {text}: a local cluster needs at least one worker (local:N, N >= 1).")
        return ClusterSpec("local", text, n_workers=n)
    scheme = re.match(r"([a-z0-9+.-]+)://", text)
    if scheme:
        if scheme.group(1) not in ADDRESS_SCHEMES:
            raise ClusterSpecError(f"{option} {text}: unknown scheme {scheme.group(1)}://; a scheduler address is "
                                   f"{' or '.join(s + '://HOST:PORT' for s in ADDRESS_SCHEMES[:2])}.")
        return ClusterSpec("address", text, address=text)
    if not os.path.isfile(text):
        what = "no such file" if re.search(r"\.(ya?ml|json)$|/", text) else "not a cluster spec"
        raise ClusterSpecError(f"{option} {text}: {what}; {_FORMS}")
    if text.endswith(".json"):
        return _scheduler_file_spec(text, option)
    return _engine_spec(text, _read_yaml(text, option), option)


_FORMS = ("a cluster spec is 'local', 'local:N', a scheduler address (tcp://HOST:PORT, tls://HOST:PORT), a "
          "scheduler file (.json) or a cluster YAML file (kind: slurm, pbs, ssh, kubernetes or scheduler; "
          "examples in cluster/).")


def _scheduler_file_spec(path, option):
    try:
        with open(path) as fh:
            address = json.load(fh).get("address")
    except (OSError, ValueError, AttributeError) as exc:
        raise ClusterSpecError(f"{option} {path}: not a scheduler file ({exc}).") from None
    if not address:
        raise ClusterSpecError(f"{option} {path}: the scheduler file has no 'address'.")
    return ClusterSpec("scheduler-file", path, address=address)


def _read_yaml(path, option):
    import yaml

    try:
        with open(path) as fh:
            document = yaml.safe_load(fh)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:  # a binary file is not text
        raise ClusterSpecError(f"{option} {path}: cannot read the cluster YAML ({' '.join(str(exc).split())}).") \
            from None
    if not isinstance(document, dict) or "kind" not in document:
        raise ClusterSpecError(f"{option} {path}: a cluster YAML file is a mapping with a 'kind' "
                               f"({', '.join(ENGINES)}).")
    return document


def _engine_spec(path, document, option):
    """Check the YAML ``document`` of ``path`` against its engine and fill in the loopback defaults."""
    kind = document["kind"]
    if kind not in ENGINES:
        raise ClusterSpecError(f"{option} {path}: unknown kind {kind!r}; one of {', '.join(ENGINES)}.")
    engine = ENGINES[kind]
    unknown = sorted(set(document) - {"kind", "security", *engine.keys})
    if unknown:
        raise ClusterSpecError(f"{option} {path}: unknown key(s) {', '.join(unknown)} for kind {kind}; it takes "
                               f"{', '.join(('security',) + engine.keys)}.")
    if importlib.util.find_spec(engine.module.split(".")[0]) is None:
        raise ClusterSpecError(f"{option} {path}: kind {kind} needs the package {engine.package}; install it with "
                               f"{CLUSTER_EXTRA}.")
    security = _security(document.get("security"), kind, path, option)
    build = {"slurm": _jobqueue_spec, "pbs": _jobqueue_spec, "ssh": _ssh_spec, "kubernetes": _kubernetes_spec,
             "scheduler": _scheduler_spec}[kind]
    return build(path, kind, document, security, option)


def _mapping(document, key, path, option):
    value = document.get(key) or {}
    if not isinstance(value, dict):
        raise ClusterSpecError(f"{option} {path}: '{key}' must be a mapping of keyword arguments; got {value!r}.")
    return dict(value)


def _security(value, kind, path, option):
    if value is None or value is False:
        return None
    if value in (True, "temporary"):
        if kind not in ("slurm", "pbs"):
            raise ClusterSpecError(f"{option} {path}: security: temporary is for kind slurm or pbs; give the TLS "
                                   f"files (ca-file, client, scheduler, worker) for kind {kind}.")
        return True
    if not isinstance(value, dict) or "ca-file" not in value:
        raise ClusterSpecError(f"{option} {path}: 'security' is 'temporary' or a mapping with ca-file and the "
                               f"client/scheduler/worker cert and key files (as in cluster/dask-tls.yaml).")
    missing = [f for f in _tls_files(value) if not os.path.isfile(f)]
    if missing:
        raise ClusterSpecError(f"{option} {path}: security: no such file {', '.join(missing)}.")
    return value


def _tls_config(security):
    """``security`` (``ca-file``, ``client``/``scheduler``/``worker`` cert and key) as Dask configuration."""
    if not security:
        return {}
    return {"distributed.comm.tls": security, "distributed.comm.require-encryption": True,
            "distributed.comm.default-scheme": "tls"}


def _tls_files(security):
    files = [security["ca-file"]]
    for role in ("client", "scheduler", "worker"):
        files += [security[role][k] for k in ("cert", "key") if isinstance(security.get(role), dict)
                  and security[role].get(k)]
    return files


def _jobs(document, path, option, key="jobs"):
    jobs = document.get(key, 1)
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise ClusterSpecError(f"{option} {path}: '{key}' must be an integer >= 1; got {jobs!r}.")
    return jobs


def _jobqueue_spec(path, kind, document, security, option):
    """SLURM/PBS: the scheduler runs in this process; loopback unless an interface or host is named."""
    options = _mapping(document, "cluster", path, option)
    scheduler = dict(options.get("scheduler_options") or {})
    if not (options.get("interface") or scheduler.get("host") or scheduler.get("interface")):
        scheduler["host"] = LOOPBACK
        options["worker_extra_args"] = list(options.get("worker_extra_args") or []) + ["--host", LOOPBACK]
    scheduler.setdefault("dashboard_address", LOOPBACK_DASHBOARD)
    options["scheduler_options"] = scheduler
    extra = list(options.get("worker_extra_args") or [])
    if "--dashboard-address" not in extra:
        options["worker_extra_args"] = extra + ["--no-dashboard", "--dashboard-address", LOOPBACK_DASHBOARD]
    return ClusterSpec(kind, path, n_workers=_jobs(document, path, option), options=options, security=security)


def _is_loopback(host):
    name = host if isinstance(host, str) else str(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _ssh_spec(path, kind, document, security, option):
    """SSH: loopback hosts bind to 127.0.0.1; other hosts must say where the scheduler and workers listen."""
    hosts = document.get("hosts")
    if not isinstance(hosts, list) or len(hosts) < 2:
        raise ClusterSpecError(f"{option} {path}: 'hosts' must list at least two hosts: the first runs the "
                               f"scheduler, each of the others a worker process.")
    scheduler = _mapping(document, "scheduler_options", path, option)
    worker = _mapping(document, "worker_options", path, option)
    if all(_is_loopback(h) for h in hosts):
        scheduler.setdefault("host", LOOPBACK)
        worker.setdefault("host", LOOPBACK)
    else:
        unset = [name for name, opts in (("scheduler_options", scheduler), ("worker_options", worker))
                 if not (opts.get("host") or opts.get("interface"))]
        if unset:
            raise ClusterSpecError(f"{option} {path}: hosts beyond this machine: set 'interface' (e.g. eth0) or "
                                   f"'host' in {' and '.join(unset)}, the network the servers listen on "
                                   f"(with security: for TLS).")
    scheduler.setdefault("dashboard_address", LOOPBACK_DASHBOARD)
    worker.setdefault("dashboard_address", LOOPBACK_DASHBOARD)
    if security:
        scheduler.setdefault("protocol", "tls://")
    options = {"hosts": [str(h) for h in hosts], "scheduler_options": scheduler, "worker_options": worker,
               "connect_options": _mapping(document, "connect_options", path, option)}
    for key in ("remote_python", "worker_class"):
        if key in document:
            options[key] = document[key]
    return ClusterSpec(kind, path, options=options, security=security)


def _kubernetes_spec(path, kind, document, security, option):
    """Kubernetes: ``cluster:`` creates a KubeCluster; ``name:`` alone connects to an existing DaskCluster."""
    options = {"namespace": document.get("namespace")}
    if "cluster" in document:
        options["cluster"] = _mapping(document, "cluster", path, option)
        if "name" in document:
            options["cluster"].setdefault("name", document["name"])
    elif "name" in document:
        options["name"] = document["name"]
    else:
        raise ClusterSpecError(f"{option} {path}: kind kubernetes needs 'name' (an existing DaskCluster) or "
                               f"'cluster' (the keyword arguments of KubeCluster).")
    workers = document.get("workers")
    if workers is not None:
        options["workers"] = _jobs(document, path, option, key="workers")
    return ClusterSpec(kind, path, options=options, security=security)


def _scheduler_spec(path, kind, document, security, option):
    address = document.get("address")
    if not isinstance(address, str) or not re.match(r"[a-z]+://", address):
        raise ClusterSpecError(f"{option} {path}: kind scheduler needs 'address', e.g. tls://10.0.0.1:8786.")
    return ClusterSpec(kind, path, address=address, security=security)
