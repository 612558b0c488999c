"""A pytest plugin that runs scikit-learn's own SVM tests with ``sklearn.svm`` classes replaced by dkernel's.

``$DKERNEL_SKLEARN_CLASSES`` names the classes replaced (comma-separated; ``SVC`` when unset). ``SVC`` is replaced
in each test, as the tests call ``svm.SVC``; ``SVR`` and ``OneClassSVM`` are replaced before the test modules are
imported, so that the names they import (``from sklearn.svm import SVR``) and the estimators built in their
parametrizations are dkernel's too. The plugin records which tests fit one of the replaced classes and their
outcome in the JSON file named by ``$DKERNEL_SKLEARN_OUTCOMES``.
"""

import functools
import json
import os

import pytest
import sklearn.svm

import dkernel

_CLASSES = tuple(name.strip() for name in os.environ.get("DKERNEL_SKLEARN_CLASSES", "SVC").split(",") if name.strip())
#: Classes replaced for the whole session (the others, per test).
_AT_IMPORT = tuple(name for name in _CLASSES if name != "SVC")
_CURRENT = [None]
_FITTING = set()
_OUTCOMES = {}


def _recorded(fit):
    @functools.wraps(fit)
    def recorded_fit(self, *args, **kwargs):
        _FITTING.add(_CURRENT[0])
        return fit(self, *args, **kwargs)

    return recorded_fit


for _name in _AT_IMPORT:
    _cls = getattr(dkernel, _name)
    _cls.fit = _recorded(_cls.fit)
    setattr(sklearn.svm, _name, _cls)


if _AT_IMPORT and "SVC" not in _CLASSES:
    @pytest.fixture
    def global_random_seed():
        """scikit-learn's conftest fixture (outside scikit-learn's tree its conftest is not loaded): its default
        seed, 42."""
        return 42


@pytest.fixture(autouse=True)
def _dkernel_svc(monkeypatch, request):
    _CURRENT[0] = request.node.nodeid
    if "SVC" in _CLASSES:
        monkeypatch.setattr(sklearn.svm, "SVC", dkernel.SVC)
        monkeypatch.setattr(dkernel.SVC, "fit", _recorded(dkernel.SVC.fit))


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        _OUTCOMES.setdefault(report.nodeid, report.outcome)


def pytest_sessionfinish(session):
    fitting = {test: outcome for test, outcome in _OUTCOMES.items() if test in _FITTING}
    with open(os.environ["DKERNEL_SKLEARN_OUTCOMES"], "w") as f:
        json.dump(fitting, f, indent=1)
