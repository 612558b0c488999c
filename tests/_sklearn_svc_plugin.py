"""A pytest plugin that runs scikit-learn's own SVM tests with ``sklearn.svm.SVC`` replaced by ``dkernel.SVC``.

It records which tests fit a ``dkernel.SVC`` and their outcome in the JSON
file named by ``$DKERNEL_SKLEARN_OUTCOMES``.
"""

import functools
import json
import os

import pytest
import sklearn.svm

import dkernel

_FIT = dkernel.SVC.fit
_CURRENT = [None]
_FITTING = set()
_OUTCOMES = {}


@functools.wraps(_FIT)
def _recorded_fit(self, *args, **kwargs):
    _FITTING.add(_CURRENT[0])
    return _FIT(self, *args, **kwargs)


@pytest.fixture(autouse=True)
def _dkernel_svc(monkeypatch, request):
    _CURRENT[0] = request.node.nodeid
    monkeypatch.setattr(sklearn.svm, "SVC", dkernel.SVC)
    monkeypatch.setattr(dkernel.SVC, "fit", _recorded_fit)


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        _OUTCOMES.setdefault(report.nodeid, report.outcome)


def pytest_sessionfinish(session):
    fitting = {test: outcome for test, outcome in _OUTCOMES.items() if test in _FITTING}
    with open(os.environ["DKERNEL_SKLEARN_OUTCOMES"], "w") as f:
        json.dump(fitting, f, indent=1)
