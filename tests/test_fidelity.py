"""The rules of pipelines/_fidelity.py, and every committed results.json held to them."""

import json
from pathlib import Path

import pytest

from pipelines import PIPELINES, get_pipeline
from pipelines._fidelity import STATUSES, Sensitivity, Setting, Verdict, judge, settings_table, verdict_table

RESULTS = Path(__file__).resolve().parents[1] / "results"


def test_a_setting_needs_a_known_status_and_its_reason():
    with pytest.raises(ValueError, match="status"):
        Setting("C", "1", "ours", "a guess")
    with pytest.raises(ValueError, match="reason"):
        Setting("C", "1", "differs", " ")
    lines = settings_table([Setting("C", "1 | 10", "silent", "libsvm's default")])
    assert lines[2] == "| C | 1 \\| 10 | paper silent — our choice | libsvm's default |"


def test_not_reproduced_needs_converged_fits_and_a_difference_beyond_the_noise():
    assert judge("centering lowers the error", -0.05, se=0.01).verdict == "not reproduced"
    assert judge("centering lowers the error", -0.05, se=0.03).verdict == "inconclusive"  # within 2 SE
    assert judge("centering lowers the error", -0.05, se=0.01, converged=False, n_unconverged=3).verdict == \
        "inconclusive"
    assert judge("centering lowers the error", -0.05).verdict == "inconclusive"  # no noise estimate
    assert judge("centering lowers the error", 0.03, se=0.01).verdict == "reproduced"
    # One-sided: the claimed way but within the noise (2 SE is not beyond it) is no evidence for the claim.
    assert judge("centering lowers the error", 0.02, se=0.01).verdict == "inconclusive"
    assert judge("b' moves images", -1.0, p_value=0.01).verdict == "not reproduced"
    assert judge("b' moves images", -1.0, p_value=0.2).verdict == "inconclusive"
    assert judge("within the paper's interval", 0.3, se=0.01, agrees=True, reading="D-scaled bias").verdict == \
        "reproduced under reading D-scaled bias"
    with pytest.raises(ValueError, match="converged"):
        Verdict("claim", "not reproduced", "-0.1 ± 0.1", converged=True, beyond_noise=False)
    assert verdict_table([judge("c", -0.05, se=0.01)])[2] == "| c | not reproduced | -0.05 ± 0.01 (5.0 SE) | all |"


def test_a_sensitivity_row_says_whether_the_verdict_flips():
    assert Sensitivity("C", "10", "claim", "inconclusive", "reproduced").flips
    assert not Sensitivity("C", "10", "claim", "reproduced", "reproduced").flips


def _committed(name):
    path = RESULTS / name / "results.json"
    return json.loads(path.read_text()) if path.exists() else None


@pytest.mark.parametrize("name", [name for name in PIPELINES if hasattr(get_pipeline(name), "verdicts")])
def test_every_committed_verdict_keeps_the_rules(name):
    results = _committed(name)
    if results is None:
        pytest.skip(f"no committed results of {name}")
    assert results.get("settings"), f"{name}: results.json has no settings table"
    for setting in results["settings"]:
        assert setting["status"] in STATUSES and setting["reason"].strip(), setting
    assert "verdicts" in results, f"{name}: results.json has no verdicts"
    for verdict in results["verdicts"]:
        Verdict(**verdict)  # raises where a "not reproduced" lacks converged fits or a difference beyond the noise
    report = (RESULTS / name / "report.md").read_text()
    assert "relation to the paper" in report, f"{name}: report.md has no settings table"
