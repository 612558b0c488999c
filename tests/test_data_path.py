"""The data's path through ``SVC.fit``, followed as the program runs.

The training matrix ``X`` and every value made from it (its validated copy,
the kernel, the Gram, the views over it) are followed from the estimator to
the solver: each call of a ``dkernel`` function that receives one of them is
an event, and the module of that function a module the data passes through.
The packages stand on floors given by their imports (a package stands above
every package it imports; ``tests/test_layout.py`` keeps the imports one
way). The path goes one way down when no call runs from a lower package into
a higher one, except through the Gram protocol (``rows``, ``diag``, ``n``,
… of ``dkernel.gram._sources``): a view handed down to a lower layer is read
by it through the protocol, without that layer importing the view's package.
"""

import collections
import sys
import threading
import types

import numpy as np
import pytest
from sklearn.datasets import make_classification

import dkernel

from test_layout import PACKAGE, import_graph

#: The Gram protocol (``dkernel.gram._sources``): what a lower layer may call on a source handed down to it.
PROTOCOL = {"n", "shape", "chunks", "dtype", "rows", "diag", "block", "columns", "dask", "on_workers", "submatrix",
            "column_slab", "rows_in_memory", "row_source", "threads"}

#: The modules the default fit's data may pass through before the solver.
MAX_MODULES = 10


def _package(module):
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def package_floors():
    """The floor of each package of ``dkernel``: 1 + the highest floor of the packages it imports."""
    deps = collections.defaultdict(set)
    for a, targets in import_graph(PACKAGE).items():
        deps[_package(a)]
        for b in targets:
            if _package(a) != _package(b):
                deps[_package(a)].add(_package(b))
    floors = {}

    def floor(p, seen=()):
        if p not in floors:
            floors[p] = 1 + max((floor(q, seen + (p,)) for q in deps.get(p, ()) if q not in seen), default=0)
        return floors[p]

    for p in list(deps):
        floor(p)
    return floors


def _property_name(frame):
    """The name of the property whose getter ``frame`` runs (a ``lambda`` in a class body), or None."""
    owner = frame.f_locals.get("self")
    for cls in type(owner).__mro__ if owner is not None else ():
        for name, value in vars(cls).items():
            if isinstance(value, property) and getattr(value.fget, "__code__", None) is frame.f_code:
                return name
    return None


class DataPath:
    """The calls of ``dkernel`` functions that receive the data, or what was made from it, until the solver."""

    def __init__(self, X):
        self.made = {}
        self.calls = []
        self.done = False
        self._entered = set()
        self._mark(X)

    def _mark(self, value):
        """Follow ``value`` from here on: a matrix, or an object (a kernel, a Gram, a view); not a scalar, a
        function or a vector (labels, indices, weights and diagonals are not the data matrix)."""
        if isinstance(value, (int, float, bool, str, type(None), np.generic, types.FunctionType, type)):
            return
        if isinstance(value, np.ndarray) and value.ndim < 2:
            return
        self.made[id(value)] = value

    def _carries(self, value):
        """Whether ``value`` is followed, or is a NumPy view of a followed array (a slice of rows, a transpose)."""
        while value is not None:
            if id(value) in self.made and self.made[id(value)] is value:
                return True
            value = value.base if isinstance(value, np.ndarray) else None
        return False

    def __call__(self, frame, event, arg):
        if self.done:
            return
        module = frame.f_globals.get("__name__", "")
        if event == "call" and module.startswith("dkernel") and (self.calls or frame.f_code.co_name == "fit"):
            code = frame.f_code
            arguments = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
            if not any(name in frame.f_locals and self._carries(frame.f_locals[name]) for name in arguments):
                return
            self._entered.add(id(frame))
            name = code.co_name if code.co_name != "<lambda>" else (_property_name(frame) or "<lambda>")
            caller = frame.f_back.f_globals.get("__name__", "") if frame.f_back else ""
            self.calls.append((caller, module, name))
            self.done = module.startswith("dkernel.solver")
        elif event == "return" and id(frame) in self._entered:
            self._entered.discard(id(frame))
            for value in arg if isinstance(arg, tuple) else (arg,):
                self._mark(value)
            if frame.f_code.co_name == "__init__" and "self" in frame.f_locals:
                self._mark(frame.f_locals["self"])

    def modules(self):
        """The modules the data passes through before the solver, in order."""
        seen = [module for _, module, _ in self.calls if not module.startswith("dkernel.solver")]
        return list(dict.fromkeys(seen))

    def calls_up(self, floors):
        """The calls from a lower package of ``dkernel`` into a higher one."""
        return [(caller, module, name) for caller, module, name in self.calls
                if caller.startswith("dkernel")
                and floors.get(_package(module), 0) > floors.get(_package(caller), 0)]


def follow(estimator, X, y):
    path = DataPath(X)
    sys.setprofile(path)
    threading.setprofile(path)
    try:
        estimator.fit(X, y)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return path


@pytest.fixture(scope="module")
def floors():
    return package_floors()


@pytest.fixture(scope="module")
def data():
    # Problems of more than 512 points: a smaller one is solved whole by the compiled SMO, which a profiler
    # does not see (the data would reach it through svm._training alone).
    X, y = make_classification(n_samples=1600, n_features=8, random_state=0)
    return X, y, np.arange(1600) % 3


CONFIGURATIONS = {
    "default": lambda: dkernel.SVC(),
    "normalized (Graf & Borer)": lambda: dkernel.SVC(normalize=True),
    "class-balanced centering (Meila eq. 13)": lambda: dkernel.SVC(centering="class-balanced"),
    "multiclass centering, normalized": lambda: dkernel.SVC(centering="multiclass", normalize=True),
    "probability": lambda: dkernel.SVC(probability=True),
}


def test_the_path_is_followed_to_the_solver(data):
    X, y, _ = data
    path = follow(dkernel.SVC(), X, y)
    assert path.done, "the data never reached dkernel.solver: the tracing lost it"
    assert path.modules()[0] == "dkernel.svm._classes"


def test_the_default_fit_passes_through_at_most_ten_modules(data):
    X, y, _ = data
    modules = follow(dkernel.SVC(), X, y).modules()
    assert len(modules) <= MAX_MODULES, " -> ".join(modules)


@pytest.mark.parametrize("configuration", CONFIGURATIONS)
def test_the_data_goes_one_way_down(configuration, data, floors):
    X, y, y3 = data
    path = follow(CONFIGURATIONS[configuration](), X, y3 if "multiclass" in configuration else y)
    assert path.done, configuration
    up = [call for call in path.calls_up(floors) if call[2] not in PROTOCOL]
    assert not up, f"{configuration}: calls from a lower package into a higher one: {up}"


def test_an_upward_call_outside_the_protocol_is_seen(floors):
    """The check above can fail: a call from gram/ into a function of views/ is reported."""
    path = DataPath(np.zeros(2))
    path.calls = [("dkernel.gram._sources", "dkernel.views._centered", "centered_submatrix"),
                  ("dkernel.gram._sources", "dkernel.views._base", "rows")]
    up = [call for call in path.calls_up(floors) if call[2] not in PROTOCOL]
    assert up == [("dkernel.gram._sources", "dkernel.views._centered", "centered_submatrix")]
