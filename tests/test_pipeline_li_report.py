"""The li_generalized_bias verdicts on made-up records: rule 3 of pipelines/_fidelity.py, cell by cell."""

from scipy.stats import binomtest

from pipelines import _li_news as N
from pipelines import get_pipeline
from pipelines._fidelity import Verdict

li = get_pipeline("li_generalized_bias")


def _news(dataset, n, repeat, bow, plsa, gb, setting=N.AS_RUN, converged=True):
    return [dict(dataset=f"20newsgroups-{dataset}", figure="3", method=m, n_train=n, setting=setting,
                 repeat=repeat, accuracy=a, converged=converged or m != "svm-gb", n_test=500, svc_C=1.0)
            for m, a in (("svm-bow", bow), ("svm-plsa", plsa), ("svm-gb", gb)) if a is not None]


def _cells(bow_gb, setting=N.AS_RUN, converged=True):
    """Three splits of sci at n = 100 and 800; ``bow_gb`` maps n to (BoW, GB) accuracies of split 0."""
    records = []
    for n, (bow, gb) in bow_gb.items():
        for repeat, (jitter, other) in enumerate(((0.0, 0.002), (0.004, -0.006), (-0.003, 0.001))):
            records += _news("sci", n, repeat, bow + jitter, 0.80, gb + other, setting, converged)
    return records


def _claim(verdicts, start):
    return next(v for v in verdicts if v.claim.startswith(start))


def test_svm_gb_below_svm_beyond_the_noise_with_converged_fits_is_not_reproduced():
    verdicts = li.verdicts(_cells({100: (0.80, 0.85), 800: (0.90, 0.80)}), None)
    gb = _claim(verdicts, "Fig. 3: SVM-GB is better than SVM on the bag of words")
    assert gb.verdict == "not reproduced" and gb.converged and gb.beyond_noise
    failed, held = gb.evidence.split("; reproduced on ")
    assert "sci n=800" in failed and "SE" in failed and "sci n=100" not in failed and held == "sci n=100"
    Verdict(**gb.__dict__)


def test_an_unconverged_fit_or_a_difference_within_the_noise_is_inconclusive():
    unconverged = li.verdicts(_cells({800: (0.90, 0.80)}, converged=False), None)
    gb = _claim(unconverged, "Fig. 3: SVM-GB is better than SVM on the bag of words")
    assert gb.verdict == "inconclusive" and "not converged" in gb.evidence
    records = _news("sci", 800, 0, 0.90, 0.8, 0.89) + _news("sci", 800, 1, 0.90, 0.8, 0.92) + \
        _news("sci", 800, 2, 0.90, 0.8, 0.88)
    within = _claim(li.verdicts(records, None), "Fig. 3: SVM-GB is better than SVM on the bag of words")
    assert within.verdict == "inconclusive"


def test_the_sensitivity_reads_each_protocol_from_its_own_records():
    records = _cells({100: (0.80, 0.70)})  # as run: SVM-GB below
    records += _cells({100: (0.80, 0.70)}, setting=N.fixed(1.0))
    # pLSA on all documents: SVM-GB above the as-run SVM (BoW); BoW has no records of that setting.
    records += [r for r in _cells({100: (0.80, 0.90)}, setting=N.TRANSDUCTIVE) if r["method"] != "svm-bow"]
    rows = [r for r in li.sensitivity(records, None) if r.claim.startswith("Fig. 3: SVM-GB is better")]
    by = {r.alternative: r for r in rows}
    assert by["all documents of the subset, test ones unlabeled"].verdict == "reproduced"
    assert by["all documents of the subset, test ones unlabeled"].verdict_as_run == "not reproduced"
    assert by["C = 1 for every method"].verdict == "not reproduced" and not by["C = 1 for every method"].flips


def _coil(n, accuracy, discordant, converged=True):
    return [dict(dataset="coil20", figure="1", method=m, n_train=n, setting="s", repeat=0, accuracy=a,
                 converged=converged, n_test=1320, discordant=discordant[m]) for m, a in accuracy.items()]


def test_fig1_verdicts_use_mcnemars_exact_test_on_the_disagreements():
    accuracy = {"svm": 0.70, "svm-gb": 0.83, "knn-geodesic": 0.84, "knn": 0.62}
    discordant = {"svm": {"knn-geodesic": [10, 200], "knn": [150, 50], "svm-gb": [5, 180]},
                  "svm-gb": {"knn-geodesic": [16, 23], "knn": [300, 20], "svm": [180, 5]},
                  "knn-geodesic": {"svm": [200, 10], "svm-gb": [23, 16], "knn": [300, 10]},
                  "knn": {"svm": [50, 150], "svm-gb": [20, 300], "knn-geodesic": [10, 300]}}
    beats, like = li._fig1_judgements(_coil(120, accuracy, discordant), "knn-geodesic")
    assert beats.verdict == "reproduced" and like.verdict == "reproduced"
    assert f"p = {binomtest(16, 39, 0.5).pvalue:.2g}" in like.evidence
    beats, like = li._fig1_judgements(_coil(120, accuracy, discordant), "knn")
    assert beats.verdict == "not reproduced" and like.verdict == "not reproduced"
    # kNN higher, but on few disagreements (McNemar p ≥ 0.05): no evidence that it is better.
    discordant["knn-geodesic"]["svm"], discordant["svm"]["knn-geodesic"] = [14, 8], [8, 14]
    beats, _ = li._fig1_judgements(_coil(120, accuracy, discordant), "knn-geodesic")
    assert beats.verdict == "inconclusive" and f"p = {binomtest(8, 22, 0.5).pvalue:.2g}" in beats.evidence


def test_a_higher_accuracy_within_the_noise_does_not_reproduce_a_claim_of_better():
    records = _news("sci", 800, 0, 0.90, 0.8, 0.91) + _news("sci", 800, 1, 0.90, 0.8, 0.89) + \
        _news("sci", 800, 2, 0.90, 0.8, 0.92)
    within = _claim(li.verdicts(records, None), "Fig. 3: SVM-GB is better than SVM on the bag of words")
    assert within.verdict == "inconclusive" and "+0.00667" in within.evidence


def test_fig2_spread_verdict_carries_its_noise():
    rows = [dict(dataset="coil20", figure="2", method=m, n_train=960, setting=s, repeat=0, accuracy=a,
                 converged=True, n_test=480)
            for s, accs in (("a", (0.42, 0.885)), ("b", (0.92, 0.887)), ("c", (0.9, 0.886)), ("d", (0.6, 0.886)))
            for m, a in zip(("svm", "svm-gb"), accs)]
    verdict = li._fig2_judgement(rows)
    assert verdict.verdict == "reproduced" and "SE" in verdict.evidence
    assert "SVM 0.500, SVM-GB 0.002" in verdict.evidence


def test_a_failed_fit_leaves_its_cell_inconclusive():
    records = _cells({800: (0.90, 0.80)})
    failed = next(r for r in records if r["method"] == "svm-gb" and r["repeat"] == 1)
    failed.update(accuracy=None, converged=False)
    gb = _claim(li.verdicts(records, None), "Fig. 3: SVM-GB is better than SVM on the bag of words")
    assert gb.verdict == "inconclusive" and "2 splits" in gb.evidence and "1 fit(s) not converged" in gb.evidence


def test_a_generalized_bias_fit_that_fails_in_its_linear_program_is_recorded_as_a_failed_fit(monkeypatch):
    import numpy as np
    import scipy.sparse as sp

    from dkernel.svm import GeneralizedBiasSVC

    def failing_fit(self, X, y):
        raise RuntimeError("The linear program of the samples held at zero failed: HiGHS Status 15")

    monkeypatch.setattr(GeneralizedBiasSVC, "fit", failing_fit)
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 30)
    X = sp.csr_matrix(rng.poisson(np.where(np.arange(40)[None, :] < 20, 1.0 + y[:, None], 2.0 - y[:, None])),
                      dtype=np.float64)
    order = rng.permutation(60)
    rows = N.news_split(X, y, order[:40], order[40:], (1.0,), rng, alternatives=False)
    by_method = {method: (accuracy, converged) for method, _, _, accuracy, _, converged in rows}
    assert by_method["svm-gb"] == (None, False)
    assert by_method["svm-bow"][0] > 0.5 and by_method["svm-bow"][1]
