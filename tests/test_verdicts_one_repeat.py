"""A verdict needs a noise estimate: with one repeat there is no standard error, so no difference is beyond the
noise and no claim is tested (reports said "± 0.000" and "beyond 2 SE" of a single split). Also: a claim made
of parts names the parts where it held beside those where it did not; records saved by an unfinished run of
other tasks are said to be unused before the run starts; tasks run in threads find scikit-learn imported."""

from pipelines._verdicts import every, paired


def _records(n_repeats, shift=0.3):
    return [{"experiment": "e", "variant": v, "repeat": r, "test_error": 0.1 + (shift if v == "b" else 0.0)
             + 0.01 * r * (v == "b"), "alignment": 0.2 + (0.5 if v == "b" else 0.0) + 0.01 * r * (v == "b"),
             "converged": True} for v in ("a", "b") for r in range(n_repeats)]  # fmt: skip


def test_one_repeat_tests_no_claim():
    for claim_is in ("higher", "lower", "differs", "equal", "not higher", "not lower"):
        verdict = paired("b differs from a", _records(1), "test_error", {"variant": "b"}, {"variant": "a"},
                         claim_is=claim_is)
        assert verdict.verdict == "inconclusive", claim_is
        assert "no noise estimate" in verdict.evidence and "one repeat, no standard error" in verdict.evidence
        assert not verdict.beyond_noise


def test_two_repeats_test_the_claim():
    verdict = paired("b is higher", _records(2), "test_error", {"variant": "b"}, {"variant": "a"}, claim_is="higher")
    assert verdict.verdict == "reproduced" and verdict.beyond_noise  # +0.305 ± 0.005


def test_meila_alignment_counts_need_a_standard_error():
    from pipelines import meila_centering_real as meila

    records = [{**rec, "variant": "centered" if rec["variant"] == "b" else "original"} for rec in _records(1)]
    down_up, unmoved = meila._alignment_claims(records, ["e"])
    assert "increased by more than 50% beyond 2 SE in 0/1" in down_up.evidence
    assert unmoved.verdict == "inconclusive" and "in 0/1" in unmoved.evidence
    # Three repeats: the alignment rose beyond the noise and the test error did not fall: the claim holds.
    records = [{**rec, "variant": "centered" if rec["variant"] == "b" else "original"} for rec in _records(3)]
    down_up, unmoved = meila._alignment_claims(records, ["e"])
    assert "increased by more than 50% beyond 2 SE in 1/1" in down_up.evidence
    assert unmoved.verdict == "reproduced" and "in 1/1: e" in unmoved.evidence


def test_a_single_record_row_shows_no_standard_error():
    from pipelines._report import cell
    from pipelines._runner import summarize

    rows = summarize([{"variant": "a", "test_error": 0.25}])
    assert cell(rows[0], "test_error") == "0.250"
    rows = summarize([{"variant": "a", "test_error": 0.25}, {"variant": "a", "test_error": 0.35}])
    assert cell(rows[0], "test_error") == "0.300 ± 0.050"


def test_a_claim_of_parts_names_where_it_held():
    from pipelines._fidelity import judge

    held, failed, unsure = judge("", 0.1, se=0.01), judge("", -0.1, se=0.01), judge("", 0.01, se=0.01)
    verdict = every("all", [("6/class", held), ("12/class", held), ("24/class", unsure), ("48/class", failed)])
    assert verdict.verdict == "not reproduced"
    assert verdict.evidence.startswith("not reproduced on 1/4 (48/class: ")
    assert verdict.evidence.endswith("; inconclusive on 24/class; reproduced on 6/class and 12/class")


def test_records_of_another_run_are_said_to_be_unused(tmp_path, capsys):
    from pipelines._resume import TaskRecords
    from pipelines._runner import _tell_other_records

    saved = TaskRecords(tmp_path, "p")
    saved.save({"seed": 0, "n": 1}, [{"x": 1}])
    saved.save({"seed": 0, "n": 2}, [{"x": 2}])
    _tell_other_records("p", saved, 0)
    err = capsys.readouterr().err
    assert "p: 2 task records in" in err and "are not used here; they are deleted when this run completes" in err
    _tell_other_records("p", saved, 2)
    assert capsys.readouterr().err == ""
    assert saved.count() == 2  # nothing deleted by telling it


def test_tasks_in_threads_find_scikit_learn_imported():
    # Two threads importing scikit-learn for the first time at once can see sklearn.base partly initialized
    # (an ImportError of 'clone' in the li pipeline's tasks): it is imported before the tasks start.
    import subprocess
    import sys

    code = ("import sys\n"
            "import pipelines._runner as runner\n"
            "assert 'sklearn.base' not in sys.modules\n"
            "def task(t):\n"
            "    return [{'had': all(m in sys.modules for m in ('sklearn.base', 'sklearn.feature_extraction.text'))}]\n"
            "print(runner._run_tasks(None, task, [{}, {}], False))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[[{'had': True}], [{'had': True}]]"
