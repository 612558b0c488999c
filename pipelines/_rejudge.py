"""Re-derive a finished run's verdicts and report from its own records, by the current rules: ``--rejudge DIR``.

``python -m pipelines NAME --rejudge DIR`` (or ``dkernel run NAME --rejudge
DIR``) reads ``DIR/results.json`` (a run of the pipeline NAME), recomputes
its settings, verdicts and sensitivity with the pipeline's own
``settings(config)``, ``verdicts(records, config)`` and
``sensitivity(records, config)`` under the run's own config, and rewrites
``results.json``'s fidelity lists and ``report.md`` from the records. No fit
runs again. What the report says of the run that the records do not (the
command, its duration, the tasks resumed, the machine: results.json's
``run``) is kept as it was; a results.json written before it held ``run``
has it read back from the run's own report.md (its ``Run:`` and ``Machine:``
lines) and stored. The report gains one line saying that its verdicts were
re-derived from the run's records by the current rules, with the date.
No figure shows a verdict, so the figures are kept as they were; a pipeline
whose figures did would name them in ``VERDICT_FIGURES``.

The folder is rewritten as the runner writes it (:mod:`dkernel._runtime.artifacts`):
a complete new folder built beside it and swapped into place, so that an
interrupted re-derivation leaves the run as it was. A folder without
results.json, a results.json of another pipeline or a damaged one is refused.
"""

import dataclasses
import datetime
import json
import re
import shutil
import tempfile
from pathlib import Path

from ._runner import (
    RESULTS_FORMAT,
    PipelineConfig,
    PipelineResult,
    _record_files,
    fidelity_of,
    results_json,
    summarize,
)

__all__ = ["RejudgeError", "load_run", "rejudge", "recovered_provenance"]


class RejudgeError(ValueError):
    """A folder whose run cannot be re-derived (the message says why, in one line)."""


#: The report's ``Run:`` line (:func:`pipelines._report.run_line`).
_RUN_LINE = re.compile(r"^Run: `(?P<command>[^`]*)` \(seed (?P<seed>\d+); (?P<seconds>\d+(?:\.\d+)?) s"
                       r"(?:, after (?P<resumed>\d+) task\(s\) resumed[^)]*)?\)", re.M)
#: The report's ``Machine:`` line (large_scale_centering), with the priority sentence after it.
_MACHINE_LINE = re.compile(r"^Machine: (?P<machine>.*?)\.(?: The run had niceness (?P<niceness>\d+) .*)?$", re.M)


def load_run(module, folder):
    """``(payload, path)`` of the run in ``folder``: its results.json, checked to be an intact record of a run of
    ``module``; a :class:`RejudgeError` otherwise."""
    folder = Path(folder)
    path = folder / "results.json"
    if not folder.is_dir():
        what = "a file" if folder.exists() else "no such folder"
        raise RejudgeError(f"{folder} is not a folder of results ({what}).")
    if not path.is_file():
        raise RejudgeError(f"{folder} holds no results.json: not the results of a finished run.")
    try:
        payload = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RejudgeError(f"{path} is damaged (not readable JSON: {exc}).") from None
    if not isinstance(payload, dict) or payload.get("format") != RESULTS_FORMAT:
        raise RejudgeError(f"{path} is not the results of a pipeline run (no format {RESULTS_FORMAT!r}).")
    if payload.get("pipeline") != module.NAME:
        raise RejudgeError(f"{path} holds the results of the pipeline {payload.get('pipeline')!r}, not of "
                           f"{module.NAME!r}: rejudge it with that pipeline's name.")
    config = payload.get("config")
    records = payload.get("records")
    if (not isinstance(config, dict) or not isinstance(config.get("quick"), bool)
            or not isinstance(config.get("seed"), int)
            or not (config.get("repeats") is None or isinstance(config.get("repeats"), int))):
        raise RejudgeError(f"{path} is damaged: its config (quick, repeats, seed) is missing or malformed.")
    if not isinstance(records, list) or not records or not all(isinstance(r, dict) for r in records):
        raise RejudgeError(f"{path} is damaged: it holds no list of records.")
    if not isinstance(payload.get("files"), list) or "results.json" not in payload["files"]:
        raise RejudgeError(f"{path} is damaged: it does not list the files its run wrote.")
    return payload, path


def recovered_provenance(report):
    """The provenance (:func:`pipelines._runner.provenance`) a report.md written before results.json held it
    states: the command, seconds and tasks resumed of its ``Run:`` line, the machine of its ``Machine:`` line;
    None without a ``Run:`` line."""
    found = _RUN_LINE.search(report)
    if found is None:
        return None
    run = {"command": found["command"], "seconds": float(found["seconds"]), "resumed": int(found["resumed"] or 0)}
    machine = _MACHINE_LINE.search(report)
    if machine is not None:
        run.update(machine=machine["machine"], niceness=int(machine["niceness"] or 0))
    return run


def _provenance(payload, folder):
    run = payload.get("run")
    if isinstance(run, dict) and {"command", "seconds", "resumed"} <= run.keys():
        return dict(run)
    report = Path(folder) / "report.md"
    try:
        recovered = recovered_provenance(report.read_text())
    except (OSError, UnicodeDecodeError):
        recovered = None
    if recovered is None:
        raise RejudgeError(f"{Path(folder) / 'results.json'} holds no provenance of its run ('run') and {report} "
                           "has no 'Run:' line to read it from: the report could not keep it.")
    return recovered


def rejudge(module, folder, today=None):
    """Re-derive the verdicts and report of the run in ``folder`` (module docstring); returns its
    :class:`~pipelines._runner.PipelineResult`, with ``moved``: ``[(old verdict, new verdict)]`` per claim."""
    from dkernel._runtime import artifacts


    folder = Path(folder)
    payload, path = load_run(module, folder)
    run = _provenance(payload, folder)
    run["rejudged"] = (today or datetime.datetime.now(datetime.timezone.utc).date()).isoformat()
    stored = payload["config"]
    config = PipelineConfig(quick=stored["quick"], repeats=stored["repeats"], seed=stored["seed"],
                            out=folder.parent, progress=False)
    records = payload["records"]
    summary = summarize(records)
    fidelity = fidelity_of(module, records, config)
    old = {v.get("claim"): v.get("verdict") for v in payload.get("verdicts", []) if isinstance(v, dict)}
    moved = [(old.get(v.claim), v.verdict) for v in fidelity.get("verdicts", [])]
    new = {}
    for key, value in payload.items():
        if key == "records":
            new["run"] = run
        if key != "run":
            new[key] = value
    new.update({key: [dataclasses.asdict(item) for item in items] for key, items in fidelity.items()})
    new["files"] = payload["files"]
    result = PipelineResult(name=module.NAME, config=config, records=records, summary=summary, outdir=folder,
                            seconds=float(run["seconds"]), files=[], resumed=int(run["resumed"]),
                            provenance=run)
    with artifacts.writing(folder, "results", overwrite=True) as tmp:
        tmp = Path(tmp)
        for name in payload["files"]:
            source = folder / name
            if source.is_file() and name not in ("results.json", "report.md"):
                (tmp / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, tmp / name)
        (tmp / "results.json").write_text(results_json(new))
        with tempfile.TemporaryDirectory(prefix=f".{module.NAME}-rejudge-") as scratch:
            scratch = Path(scratch)
            module.write_report(result, scratch)
            for name in ("report.md", *getattr(module, "VERDICT_FIGURES", ())):
                shutil.copy2(scratch / name, tmp / name)
        _record_files(tmp)
    result.moved = moved
    result.files = [folder / name for name in payload["files"]]
    return result
