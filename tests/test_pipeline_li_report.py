"""The li_generalized_bias report's section on where the measurements part from the paper, on made-up records."""

from pipelines import get_pipeline
from pipelines._runner import summarize

li = get_pipeline("li_generalized_bias")


def _news(dataset, n, repeat, bow, plsa, gb):
    return [dict(dataset=dataset, figure="3", method=m, n_train=n, setting="linear, C = 1", repeat=repeat, accuracy=a)
            for m, a in (("svm-bow", bow), ("svm-plsa", plsa), ("svm-gb", gb))]


def _coil(n, svm, knn):
    return [dict(dataset="coil20", figure="1", method=m, n_train=n, setting="s", repeat=0, accuracy=a)
            for m, a in (("svm", svm), ("knn-geodesic", knn), ("svm-gb", knn), ("knn", svm))]


def _records():
    records = _coil(120, 0.60, 0.80) + _coil(240, 0.90, 0.85)
    # sci n=100: SVM-GB below BoW within noise (differences -0.02 and +0.01 over two splits).
    records += _news("20newsgroups-sci", 100, 0, 0.80, 0.70, 0.78) + _news("20newsgroups-sci", 100, 1, 0.80, 0.70, 0.81)
    # sci n=800: SVM-GB below BoW by far more than two standard errors, pLSA best.
    records += _news("20newsgroups-sci", 800, 0, 0.90, 0.93, 0.85) + _news("20newsgroups-sci", 800, 1, 0.90, 0.93, 0.86)
    # comp n=800: SVM-GB best.
    records += _news("20newsgroups-comp", 800, 0, 0.80, 0.75, 0.85) + _news("20newsgroups-comp", 800, 1, 0.80, 0.75, 0.86)
    return records


def test_differences_are_counted_from_the_records():
    records = _records()
    lines = li._differences(summarize(records), records)
    text = "\n".join(lines)
    assert lines[0] == "## Where the measurements part from the paper"
    # Two cells where SVM-GB is not above BoW (sci 100 on the mean: -0.005; sci 800), one of them within noise.
    assert "of the 2 cell(s) where SVM-GB is not above, 1 are within two standard errors" in text
    assert "over 2 split(s) (sci n=100 (-0.005 ± 0.015))" in text
    # At n >= 800 the best where SVM-GB is not: pLSA at sci 800 by 0.93 - 0.855.
    assert "the best is SVM (pLSA) at sci n=800 (by 0.075)." in text
    assert "comp n=800" not in text
    # Fig. 1: the SVM reaches kNN at 12 images per class only.
    assert "the SVM reaches kNN at 12 images per class" in text


def test_no_differences_no_section():
    records = _coil(120, 0.60, 0.80) + _news("20newsgroups-comp", 800, 0, 0.80, 0.75, 0.85)
    assert li._differences(summarize(records), records) == []
