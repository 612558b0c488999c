"""The verdict rule (one-sided claims need a difference beyond the noise), ``--rejudge``, and every committed
results.json holding the verdicts the current rules derive from its own records."""

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from pipelines import PIPELINES, get_pipeline
from pipelines.__main__ import main as pipelines_main
from pipelines._fidelity import Z, judge, one_sided
from pipelines._runner import PipelineConfig, fidelity_of, run_pipeline

RESULTS = Path(__file__).resolve().parents[1] / "results"
REJUDGED = "Verdicts re-derived on "


# ------------------------------------------------------------------ the rule
def test_a_one_sided_claim_within_the_noise_is_inconclusive_whichever_way_it_goes():
    # Kandola's "80 %: G lowers RR Error" as committed before: +0.0056 ± 0.014 (0.4 SE) was "reproduced".
    assert judge("G lowers the error", 0.0056, se=0.014).verdict == "inconclusive"
    assert judge("G lowers the error", -0.0056, se=0.014).verdict == "inconclusive"
    assert judge("G lowers the error", 0.02, se=0.01).verdict == "inconclusive"  # exactly 2 SE: not beyond
    assert judge("b' lowers the error", 1.0, p_value=0.3).verdict == "inconclusive"


def test_a_one_sided_claim_beyond_the_noise_is_reproduced_or_not_reproduced():
    assert judge("G lowers the error", 0.03, se=0.01).verdict == "reproduced"
    assert judge("G lowers the error", 0.03, se=0.01, reading="eq5").verdict == "reproduced under reading eq5"
    assert judge("G lowers the error", -0.03, se=0.01).verdict == "not reproduced"
    assert judge("G lowers the error", -0.03, se=0.01, converged=False, n_unconverged=2).verdict == "inconclusive"
    assert judge("b' lowers the error", 1.0, p_value=0.01).verdict == "reproduced"
    assert judge("b' lowers the error", -1.0, p_value=0.01).verdict == "not reproduced"
    assert one_sided(3 * Z, se=1.0) == (True, False) and one_sided(-3 * Z, se=1.0) == (False, True)


def test_a_one_sided_claim_without_a_noise_estimate_is_inconclusive():
    for difference in (0.5, -0.5, 0.0):
        verdict = judge("G raises the alignment", difference)
        assert verdict.verdict == "inconclusive" and "no noise estimate" in verdict.evidence
    assert judge("G raises the alignment", 0.5, se=0.0).verdict == "inconclusive"
    assert one_sided(0.5) == (False, False)


def test_a_claim_with_its_own_test_of_agreement_keeps_the_rule_it_had():
    # An interval, a number within a tolerance, an exact check: reproduced iff it agrees, whatever the noise.
    assert judge("within 2 SE of 14.5 %", -0.003, se=0.0014, agrees=True).verdict == "reproduced"
    assert judge("within 2 SE of 14.5 %", -0.0129, se=0.0015, agrees=False).verdict == "not reproduced"
    assert judge("within 2 SE of 14.5 %", -0.0129, se=0.0015, agrees=False, converged=False).verdict == "inconclusive"
    assert judge("in the interval", 0.3, se=0.2, agrees=False).verdict == "inconclusive"  # within the noise
    assert judge("predictions equal to 1e-10", 0.0, agrees=True).verdict == "reproduced"  # no noise needed
    assert judge("predictions equal to 1e-10", 1e-3, agrees=False).verdict == "inconclusive"
    assert judge("in the interval", 0.3, agrees=True, reading="D-scaled bias").verdict == \
        "reproduced under reading D-scaled bias"


def test_the_kandola_direction_claims_need_a_difference_beyond_the_noise():
    from pipelines import _kandola_verdicts as K

    claim = K.Claim("direction", ("sinc", "transductive"), None, 80, "rr_error", "80 %: G lowers RR Error")
    within = K.Outcome("eq5", 0.0056, 0.014, 0, *one_sided(0.0056, se=0.014))
    beyond = K.Outcome("alg1", 0.056, 0.014, 0, *one_sided(0.056, se=0.014))
    assert K.verdict_of(claim, [within]).verdict == "inconclusive"
    assert K.verdict_of(claim, [beyond]).verdict == "reproduced"
    assert K.verdict_of(claim, [within, beyond]).verdict == "reproduced under reading alg1"


def test_the_williams_magnitude_claim_is_read_as_about_not_at_most():
    from pipelines import williams_conformal as P

    claim = P._claim("magnitude", "none")
    assert "about 14.5 %" in claim and "not a bound" in claim


# ------------------------------------------------------------------ rejudge
def _quick_run(tmp_path):
    out = tmp_path / "out"
    config = PipelineConfig(quick=True, scheduler="threads", out=out, progress=False)
    return run_pipeline(get_pipeline("graf_coil"), config).outdir


@pytest.fixture(scope="module")
def quick_graf(data_home, tmp_path_factory):
    return _quick_run(tmp_path_factory.mktemp("quick"))


def _without_rejudged_line(report):
    lines = report.split("\n")
    kept = [line for line in lines if not line.startswith(REJUDGED)]
    assert len(lines) - len(kept) == 1
    index = next(k for k, line in enumerate(lines) if line.startswith(REJUDGED))
    assert lines[index + 1] == ""
    return "\n".join(lines[:index] + lines[index + 2:])


def test_rejudge_gives_the_report_of_the_run_but_for_its_one_line(quick_graf, tmp_path, capsys):
    folder = tmp_path / "graf_coil"
    shutil.copytree(quick_graf, folder)
    assert pipelines_main(["graf_coil", "--rejudge", str(folder)]) == 0
    assert "verdicts re-derived" in capsys.readouterr().out
    report, before = (folder / "report.md").read_text(), (quick_graf / "report.md").read_text()
    assert REJUDGED not in before
    assert _without_rejudged_line(report) == before
    old, new = (json.loads((f / "results.json").read_text()) for f in (quick_graf, folder))
    assert new["run"].pop("rejudged")
    assert new == old  # records, summary, config, provenance and files as the run wrote them
    assert (folder / "results.csv").read_bytes() == (quick_graf / "results.csv").read_bytes()
    assert (folder / "fig3_coil20.png").read_bytes() == (quick_graf / "fig3_coil20.png").read_bytes()
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # nothing left beside it


def test_rejudge_reads_the_provenance_of_an_older_run_from_its_report(quick_graf, tmp_path):
    folder = tmp_path / "graf_coil"
    shutil.copytree(quick_graf, folder)
    payload = json.loads((folder / "results.json").read_text())
    run = payload.pop("run")
    (folder / "results.json").write_text(json.dumps(payload))
    from dkernel.cli import main as dkernel_main

    assert dkernel_main(["run", "graf_coil", "--rejudge", str(folder)]) == 0
    assert _without_rejudged_line((folder / "report.md").read_text()) == (quick_graf / "report.md").read_text()
    recovered = json.loads((folder / "results.json").read_text())["run"]
    assert recovered["command"] == run["command"] and recovered["seconds"] == round(run["seconds"])


def _refused(capsys, folder, name="graf_coil"):
    assert pipelines_main([name, "--rejudge", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_rejudge_refuses_a_folder_that_holds_no_run_of_the_pipeline(tmp_path, capsys):
    assert "no results.json" in _refused(capsys, tmp_path)
    assert "no such folder" in _refused(capsys, tmp_path / "missing")
    (tmp_path / "afile").write_text("mine")
    assert "is not a folder of results (a file)" in _refused(capsys, tmp_path / "afile")
    base = {"format": "dkernel-results", "pipeline": "meila_imbalanced", "config": {"quick": True, "repeats": None,
            "seed": 0}, "records": [{"x": 1}], "files": ["results.json"]}  # fmt: skip
    path = tmp_path / "results.json"
    path.write_text(json.dumps(base))
    assert "'meila_imbalanced', not of 'graf_coil'" in _refused(capsys, tmp_path)
    for damaged in ("{not json", json.dumps({**base, "format": "other"}),
                    json.dumps({**base, "pipeline": "graf_coil", "records": "none"}),
                    json.dumps({**base, "pipeline": "graf_coil", "config": {"seed": 0}}), "[]"):
        path.write_text(damaged)
        err = _refused(capsys, tmp_path)
        assert "damaged" in err or "not the results of a pipeline run" in err, err
        assert path.read_text() == damaged  # refused: nothing rewritten


# ---------------------------------------------------------- committed results
@pytest.mark.parametrize("name", [name for name in PIPELINES if hasattr(get_pipeline(name), "verdicts")])
def test_every_committed_result_holds_the_verdicts_the_current_rules_derive(name):
    path = RESULTS / name / "results.json"
    if not path.exists():
        pytest.skip(f"no committed results of {name}")
    payload = json.loads(path.read_text())
    config = PipelineConfig(quick=payload["config"]["quick"], repeats=payload["config"]["repeats"],
                            seed=payload["config"]["seed"])
    derived = fidelity_of(get_pipeline(name), payload["records"], config)
    for key, items in derived.items():
        stored = payload.get(key)
        now = [dataclasses.asdict(item) for item in items]
        assert stored == now, (f"{name}: results.json's {key} are not those the current rules derive from its "
                               f"records; run: python -m pipelines {name} --rejudge results/{name}")
    report = (RESULTS / name / "report.md").read_text()
    for verdict in payload["verdicts"]:
        assert verdict["verdict"] in report


def test_every_committed_report_says_what_each_verdict_needs():
    """The rule sentence names what *reproduced* needs (beyond the noise the claimed way), not only *not reproduced*."""
    from pathlib import Path

    from pipelines._report import verdict_rule

    reports = sorted(Path(__file__).resolve().parents[1].glob("results/*/report.md"))
    assert len(reports) >= 11
    rule = verdict_rule()
    assert "*reproduced* only where the measured difference goes the claimed way beyond the noise" in rule
    for report in reports:
        assert rule in report.read_text(encoding="utf-8"), report
