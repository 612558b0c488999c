"""The one-class origin figure of docs/: it runs, and the supports it draws are the ones its text describes."""

import importlib.util
import os
import sys

import numpy as np
import pytest

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")


@pytest.fixture(scope="module")
def figure_module():
    spec = importlib.util.spec_from_file_location("one_class_origin", os.path.join(DOCS, "one_class_origin.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules["one_class_origin"] = module
    spec.loader.exec_module(module)
    return module


def _ranges(module, kernel):
    X = module.two_clusters(np.random.default_rng(0))
    grid = np.random.default_rng(1).uniform(-0.5, 5.5, size=(3000, 2))
    models = [module.fit_panel(X, kernel, c, s) for _, c, s, _ in module.origins(X)]
    return X, models, [np.ptp(m.decision_function(grid)) for m in models]


def test_feature_space_origin_panel_is_scikit_learns_model(figure_module):
    from sklearn.svm import OneClassSVM

    X, models, _ = _ranges(figure_module, "rbf")
    grid = np.random.default_rng(2).uniform(-0.5, 5.5, size=(500, 2))
    reference = OneClassSVM(kernel="rbf", gamma=0.5, nu=figure_module.NU).fit(X)
    np.testing.assert_allclose(models[0].decision_function(grid), reference.decision_function(grid), atol=1e-2)


@pytest.mark.parametrize("kernel, flat", [("linear", [False, False, True, True]), ("rbf", [False, False, False, True])])
def test_the_panels_described_as_flat_are_flat_and_the_others_are_not(figure_module, kernel, flat):
    _, _, ranges = _ranges(figure_module, kernel)
    assert [r < figure_module.FLAT * ranges[0] for r in ranges] == flat, ranges


def test_the_rbf_model_with_its_origin_among_the_data_keeps_the_far_plane(figure_module):
    _, models, _ = _ranges(figure_module, "rbf")
    far = np.array([[50.0, -50.0]])
    assert models[0].decision_function(far)[0] < 0  # the feature-space origin: a bounded support
    assert models[2].decision_function(far)[0] > 0  # the origin at the point in the middle: -rho > 0 far away


def test_the_script_writes_its_figure_where_told(figure_module, tmp_path):
    out = tmp_path / "figure.png"
    figure_module.main(["--out", str(out)])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_script_leaves_an_existing_file_alone(figure_module, tmp_path):
    mine = tmp_path / "notes.png"
    mine.write_text("my notes")
    for argv in (["--out", str(mine)], ["--out", str(mine), "--overwrite"]):
        with pytest.raises(SystemExit) as stop:
            figure_module.main(argv)
        assert stop.value.code == 2
    assert mine.read_text() == "my notes"
