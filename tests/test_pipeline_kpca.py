"""The kpca_usps pipeline (Schölkopf, Smola & Müller 1998, Table 1): its measurements against direct computations,
its verdicts held to the paper's data, and a quick run's outputs."""

import json

import numpy as np
import pytest
from sklearn.decomposition import KernelPCA as SklearnKernelPCA

from pipelines import _kpca, kpca_usps
from pipelines._runner import PipelineConfig, run_pipeline


def _digits(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, size=(n, 30)) * np.linspace(1.5, 0.3, 30)


def test_paper_table_has_the_papers_shape():
    assert _kpca.COMPONENTS == (32, 64, 128, 256, 512, 1024, 2048)
    assert all(len(row) == 7 for row in _kpca.PAPER_TABLE.values())
    # Linear PCA of 256 pixels has no 512th component: "n.a." in the paper.
    assert [m for m, row in _kpca.PAPER_TABLE.items() if row[0] is None] == [512, 1024, 2048]
    assert min(v for row in _kpca.PAPER_TABLE.values() for v in row if v is not None) == 4.0
    assert [_kpca.available(1, m, 256) for m in (256, 512)] == [True, False]


def test_components_are_scikit_learns_kernel_pca_of_the_homogeneous_polynomial_kernel():
    X, X_test = _digits(300), _digits(40, seed=1)
    K, K_test = _kpca.gram(X, X, 3), _kpca.gram(X_test, X, 3)
    Z, Z_test, _ = _kpca.components(K, K_test, 12)
    reference = SklearnKernelPCA(12, kernel="poly", degree=3, gamma=1, coef0=0, eigen_solver="dense")
    Z_ref = reference.fit_transform(X)
    scale = np.abs(Z_ref).max()
    assert np.abs(Z - Z_ref).max() < 1e-8 * scale
    assert np.abs(Z_test - reference.transform(X_test)).max() < 1e-8 * scale


def test_linear_svm_records_name_the_misclassified_images():
    rng = np.random.default_rng(0)
    Z, Z_test = rng.normal(size=(200, 64)), rng.normal(size=(50, 64))
    y, y_test = (Z[:, 0] > 0).astype(int), (Z_test[:, 0] > 0).astype(int)
    records = _kpca.linear_svm_errors(Z, y, Z_test, y_test)
    assert [r["n_components"] for r in records] == [32, 64]
    for rec in records:
        wrong = [int(i) for i in rec["wrong"].split()]
        assert len(wrong) == rec["n_wrong"] and rec["test_error"] == pytest.approx(rec["n_wrong"] / 50)
        assert rec["converged"] and rec["loss"] == "hinge"


def test_sampled_origin_error_shrinks_as_n_sample_grows():
    X = _digits(400)
    K = _kpca.gram(X, X, 2)
    _, _, exact = _kpca.components(K, K[:5], 30)
    records = _kpca.spectrum_errors(K, exact, (5, 50, 200), k=5)
    errors = [r["eigenvalue_error"] for r in records]
    angles = [r["subspace_sine"] for r in records]
    assert errors[0] > errors[1] > errors[2] and errors[2] < 0.05
    assert angles[0] > angles[2]


def _record(d, m, error, n_train=7291, n_test=2007, wrong=None, **extra):
    n_wrong = round(error * n_test)
    return {"kind": "classification", "degree": d, "n_components": m, "test_error": n_wrong / n_test,
            "n_wrong": n_wrong, "wrong": " ".join(map(str, range(n_wrong) if wrong is None else wrong)),
            "n_train": n_train, "n_test": n_test, "converged": True, "centering": "exact", **kpca_usps.AS_RUN,
            **extra}  # fmt: skip


def test_verdicts_judge_the_papers_numbers_on_its_data_only():
    paper = [_record(d, m, _kpca.PAPER_TABLE[m][d - 1] / 100) for d in (1, 3) for m in (32, 64)]
    verdicts = kpca_usps.verdicts(paper, None)
    claims = [v.claim for v in verdicts]
    assert "Table 1, degree 3: each error within the noise of the paper's" in claims
    assert all(v.verdict == "reproduced" for v in verdicts)
    # Twice the paper's error on the paper's data is beyond the noise.
    worse = [_record(r["degree"], r["n_components"], 2 * r["test_error"]) for r in paper]
    table = [v for v in kpca_usps.verdicts(worse, None) if v.claim.startswith("Table 1")]
    assert table and all(v.verdict == "not reproduced" for v in table)
    # The same errors on a smaller training set are not held against the paper's numbers.
    small = [_record(r["degree"], r["n_components"], 2 * r["test_error"], n_train=1500, n_test=500) for r in paper]
    assert not [v for v in kpca_usps.verdicts(small, None) if v.claim.startswith(("Table 1", "the lowest"))]


def test_an_unconverged_fit_makes_a_cell_inconclusive():
    records = [_record(3, 32, 0.2), _record(3, 64, 0.2, converged=False)]
    (table,) = [v for v in kpca_usps.verdicts(records, None) if v.claim.startswith("Table 1")]
    assert table.verdict == "not reproduced" and "m = 32" in table.evidence
    records = [_record(3, 64, 0.2, converged=False)]
    (table,) = [v for v in kpca_usps.verdicts(records, None) if v.claim.startswith("Table 1")]
    assert table.verdict == "inconclusive"


def test_quick_run_writes_its_report_from_its_records(data_home, tmp_path, monkeypatch):
    monkeypatch.setenv("DKERNEL_DATA", str(data_home))
    config = PipelineConfig(quick=True, scheduler="threads", out=tmp_path, progress=False)
    result = run_pipeline(kpca_usps, config)
    payload = json.loads((result.outdir / "results.json").read_text())
    assert {"report.md", "table1.png", "sampled_centering.png", "results.csv"} <= {p.name for p in
                                                                                    result.outdir.iterdir()}
    fits = [r for r in payload["records"] if r["kind"] == "classification"]
    # 2 degrees × 2 component counts × (4 settings with exact centering + 1 sampled).
    assert len(fits) == 20 and {r["n_train"] for r in fits} == {1500}
    spectrum = [r for r in payload["records"] if r["kind"] == "spectrum"]
    assert sorted(r["n_sample"] for r in spectrum) == [30, 30, 300, 300]
    report = (result.outdir / "report.md").read_text()
    assert "not judged against Table 1's numbers" in report
    exact = {(r["degree"], r["n_components"]): r for r in fits if r["centering"] == "exact"
             and r["loss"] == "hinge" and r["C"] == _kpca.C}
    assert f"8.1 % / {exact[(3, 32)]['test_error']:.1%}" in report
    assert next(v["claim"] for v in payload["verdicts"]).startswith("§4.1: nonlinear components beat linear PCA")
