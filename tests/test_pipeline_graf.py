"""The graf_coil pipeline (Graf & Borer 2001, Fig. 3): protocol, explicit feature-space check, quick run and report.

The quick run (COIL-20, p = 1, 2, 7) runs once for the module on Dask's
threaded scheduler; the tests check its records against libsvm and against
their own per-object errors, that the report's numbers are those of the
records, and, on a few images, that the normalized kernel and the threshold b'
equal an explicit computation in the feature space of ``(1 + x·z)^p``.
"""

import json
import math
import re

import numpy as np
import pytest
from scipy.stats import binomtest
from sklearn.svm import SVC as LibSVC

from pipelines import PIPELINES, _graf, get_pipeline
from pipelines._runner import PipelineConfig, run_pipeline

from _reference import poly_feature_map

NAME = "graf_coil"
RECORD_KEYS = {"dataset", "degree", "variant", "error", "error_variance", "b_relative_change"}


@pytest.fixture(scope="module")
def coil20(data_home):
    from dkernel.datasets import load

    data = load("coil20", data_home=data_home, download=False)
    return data.X, data.y, data.metadata["pose"]


@pytest.fixture(scope="module")
def quick_run(coil20, tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    config = PipelineConfig(quick=True, scheduler="threads", out=out, progress=False)
    return run_pipeline(get_pipeline(NAME), config)


def _json_records(result):
    return json.loads((result.outdir / "results.json").read_text())["records"]


# --------------------------------------------------------------------------- protocol
def test_split_takes_every_30_degrees_from_0_for_training_and_from_15_for_testing():
    pose = np.tile(np.arange(72), 3)  # view index k: the view at 5k degrees
    X = np.arange(pose.size, dtype=float)[:, None]
    y = np.repeat([1, 2, 3], 72)
    X_tr, y_tr, X_te, y_te = _graf.coil_split(X, y, pose)
    assert sorted(set(pose[X_tr[:, 0].astype(int)] * 5)) == list(range(0, 360, 30))
    assert sorted(set(pose[X_te[:, 0].astype(int)] * 5)) == list(range(15, 360, 30))
    assert np.bincount(y_tr).tolist() == [0, 12, 12, 12] and np.bincount(y_te).tolist() == [0, 12, 12, 12]


def test_block_average_is_the_mean_of_square_patches():
    images = np.random.default_rng(0).integers(0, 256, size=(2, 128, 128)).astype(float)
    small = _graf.block_average(images)
    assert small.shape == (2, 32, 32)
    assert small[1, 3, 5] == pytest.approx(images[1, 12:16, 20:24].mean())
    np.testing.assert_array_equal(_graf.block_average(small), small)
    with pytest.raises(ValueError, match="30 × 30"):
        _graf.block_average(np.zeros((1, 30, 30)))


def test_coil100_pngs_are_found_and_read_grey_32x32(tmp_path):
    from PIL import Image

    assert _graf.coil100_folder(tmp_path) is None
    folder = tmp_path / "coil100"
    folder.mkdir()
    rng = np.random.default_rng(1)
    colour = {}
    for obj in (1, 2):
        for angle in (0, 15, 30):
            pixels = rng.integers(0, 256, size=(128, 128, 3), dtype=np.uint8)
            colour[obj, angle] = pixels
            Image.fromarray(pixels).save(folder / f"obj{obj}__{angle}.png")
    assert _graf.coil100_folder(tmp_path) == folder
    X, y, pose = _graf.load_coil100(folder)
    assert X.shape == (6, 1024) and sorted(y.tolist()) == [1, 1, 1, 2, 2, 2]
    assert sorted(pose[y == 1].tolist()) == [0, 3, 6]  # 0°, 15°, 30°
    k = int(np.flatnonzero((y == 2) & (pose == 3))[0])
    grey = np.asarray(Image.fromarray(colour[2, 15]).convert("L"), dtype=float)
    assert X[k, 0] == pytest.approx(grey[:4, :4].mean())


def test_input_normalization_refuses_an_all_zero_image():
    with pytest.raises(ValueError, match=r"all-zero images \[1\]"):
        _graf.input_normalized(np.array([[1.0, 2.0], [0.0, 0.0]]))


# --------------------------------------------------------------------------- the feature space of (1 + x·z)^p
def _few_images(coil20):
    """Three objects at 16 × 16 (2 × 2 averages of the 32 × 32 images, still in [0, 255]): φ stays small."""
    X, y, pose = coil20
    keep = np.isin(y, (1, 6, 13))
    X = _graf.block_average(X[keep].reshape(-1, 32, 32), 16).reshape(keep.sum(), -1)
    return _graf.coil_split(X, y[keep], pose[keep])


@pytest.mark.parametrize("degree", [1, 2])
def test_feature_normalization_and_bprime_equal_the_explicit_feature_map(coil20, degree):
    X_tr, y_tr, X_te, y_te = _few_images(coil20)
    phi = poly_feature_map(X_tr, 1.0, 1.0, degree)
    phi_te = poly_feature_map(X_te, 1.0, 1.0, degree)
    phi /= np.linalg.norm(phi, axis=1, keepdims=True)  # φ(x)/‖φ(x)‖: eq. 2 in the feature space itself
    phi_te /= np.linalg.norm(phi_te, axis=1, keepdims=True)
    K, K_te = _graf.kernel_matrices(X_tr, X_te, "feature-normalized", degree)
    np.testing.assert_allclose(K, phi @ phi.T, rtol=1e-10)
    np.testing.assert_allclose(K_te, phi_te @ phi.T, rtol=1e-10)

    classes = np.unique(y_tr)
    plain, corrected, changes = [], [], []
    for c in classes:
        svm = LibSVC(kernel="linear", C=_graf.C, tol=1e-10).fit(phi, np.where(y_tr == c, 1.0, -1.0))
        w = svm.dual_coef_[0] @ phi[svm.support_]  # the normal vector itself
        w_norm, intercept = np.linalg.norm(w), svm.intercept_[0]
        b = -intercept / w_norm  # the hyperplane at ⟨w/‖w‖, z⟩ = b
        lo, hi = max(b - 1 / w_norm, -1.0), min(b + 1 / w_norm, 1.0)
        b_prime = math.cos((math.acos(lo) + math.acos(hi)) / 2)  # eq. 3
        plain.append(phi_te @ w + intercept)
        corrected.append(phi_te @ w - b_prime * w_norm)
        changes.append(abs(b - b_prime) / abs(b))
    for variant, expected in (("feature-normalized", plain), ("feature-normalized-bprime", corrected)):
        decisions, _ = _graf.dkernel_one_vs_all(X_tr, y_tr, X_te, variant, degree, tol=1e-10)
        np.testing.assert_allclose(decisions, np.column_stack(expected), atol=1e-6)
        records = _graf.measure(X_tr, y_tr, X_te, y_te, variant, degree, tol=1e-10)
        errors = _graf.object_errors(y_te, classes[np.argmax(np.column_stack(expected), axis=1)], classes)
        for rec in records:
            assert rec["error"] == pytest.approx(errors.mean()) and rec["error_variance"] == pytest.approx(errors.var())
    bprime = _graf.measure(X_tr, y_tr, X_te, y_te, "feature-normalized-bprime", degree, tol=1e-10)
    for rec in bprime:
        assert rec["b_relative_change"] == pytest.approx(np.mean(changes), rel=1e-5)
        assert rec["b_relative_change_max"] == pytest.approx(np.max(changes), rel=1e-5)


# --------------------------------------------------------------------------- the quick run
def test_quick_run_writes_its_files_and_records(quick_run):
    assert NAME in PIPELINES
    for filename in ("results.csv", "results.json", "report.md", "fig3_coil20.png"):
        assert (quick_run.outdir / filename).stat().st_size > 0, filename
    assert (quick_run.outdir / "fig3_coil20.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    records = _json_records(quick_run)
    assert all(RECORD_KEYS <= set(rec) for rec in records)
    degrees = get_pipeline(NAME).QUICK_DEGREES
    assert {(r["degree"], r["variant"], r["solver"]) for r in records} == {
        (p, v, s) for p in degrees for v in _graf.VARIANTS for s in ("dkernel", "libsvm")}
    for rec in records:
        assert (rec["n_train"], rec["n_test"], rec["n_objects"], rec["C"]) == (240, 240, 20, 1000.0)
        assert (rec["pixel_max"], rec["pixels_rescaled"]) == (255.0, False)  # raw pixels in [0, 255], as the paper's
        errors = np.array(rec["object_errors"])
        assert rec["error"] == pytest.approx(errors.mean()) and rec["error_variance"] == pytest.approx(errors.var())
        assert (rec["b_relative_change"] is None) == (rec["variant"] != "feature-normalized-bprime")


def test_dkernel_and_libsvm_misclassify_the_same_number_of_images(quick_run):
    records = _json_records(quick_run)
    for rec in (r for r in records if r["solver"] == "dkernel"):
        lib = next(r for r in records if r["solver"] == "libsvm" and r["degree"] == rec["degree"]
                   and r["variant"] == rec["variant"])  # fmt: skip
        assert round(rec["error"] * 240) == round(lib["error"] * 240), rec
        assert rec["decision_gap"] < 0.05
    by_key = {(r["degree"], r["variant"], r["solver"]): r for r in records}
    for p in get_pipeline(NAME).QUICK_DEGREES:
        # b' moves the threshold only: the corrected SVMs have the support vectors of the plain ones.
        corrected, plain = by_key[p, "feature-normalized-bprime", "dkernel"], by_key[p, "feature-normalized", "dkernel"]
        assert corrected["n_sv"] == plain["n_sv"]
        # The images b' turned right and wrong account for the change of error between the two variants.
        assert corrected["bprime_fixed"] - corrected["bprime_broken"] == round(plain["error"] * 240) - round(
            corrected["error"] * 240)
        assert 0 < corrected["bprime_p_value"] <= 1
        assert 0 < by_key[p, "feature-normalized-bprime", "dkernel"]["b_relative_change"] < 0.5


def _row(report, section, first_cell):
    """The cells of the row starting with ``first_cell`` in the first table after the heading ``section``."""
    text = report.split(section, 1)[1]
    for line in text.splitlines():
        if line.startswith(f"| {first_cell} |"):
            return [cell.strip() for cell in line.strip("|").split("|")]
    raise AssertionError(f"no row {first_cell!r} after {section!r}")


def test_report_numbers_are_the_records(quick_run):
    report = (quick_run.outdir / "report.md").read_text()
    records = _json_records(quick_run)
    get = {(r["degree"], r["variant"], r["solver"]): r for r in records}
    for p in get_pipeline(NAME).QUICK_DEGREES:
        cells = _row(report, "### Error per degree", str(p))
        for k, variant in enumerate(_graf.VARIANTS):
            dk, lib = get[p, variant, "dkernel"], get[p, variant, "libsvm"]
            assert cells[1 + 2 * k] == f"{dk['error']:.4f} ({dk['error_variance']:.4f})"
            assert cells[2 + 2 * k] == f"{lib['error']:.4f}"
        cells = _row(report, "### The threshold b'", str(p))
        bp = get[p, "feature-normalized-bprime", "dkernel"]
        assert cells[2:5] == [f"{bp['b_relative_change']:.2%}", f"{bp['b_relative_change_median']:.2%}",
                              f"{bp['b_relative_change_max']:.2%}"]  # fmt: skip
        assert cells[5] == f"{get[p, 'feature-normalized-bprime', 'libsvm']['b_relative_change']:.2%}"
        plain = get[p, "feature-normalized", "dkernel"]
        assert cells[7] == f"{round(plain['error'] * 240)} → {round(bp['error'] * 240)} of 240"
        assert cells[8] == f"{bp['bprime_fixed']} / {bp['bprime_broken']} ({bp['bprime_p_value']:.2g})"
    changes = [get[p, "feature-normalized-bprime", "dkernel"]["b_relative_change"]
               for p in get_pipeline(NAME).QUICK_DEGREES]  # fmt: skip
    assert f"between {min(changes):.1%} and {max(changes):.1%}, and the largest" in report
    maxima = [get[p, "feature-normalized-bprime", "dkernel"]["b_relative_change_max"]
              for p in get_pipeline(NAME).QUICK_DEGREES]  # fmt: skip
    assert f"the largest change of one classifier between {min(maxima):.1%} and {max(maxima):.1%};" in report
    assert f"the same number of test images as dkernel in {len(records) // 2}/{len(records) // 2} " in report
    assert "COIL-100 is not in the data folder" in report
    assert "pixels used raw as read, no rescaling (0 … 255)" in report
    assert f"Run: `dkernel run {NAME} --quick --cluster threads --out " in report


def _rewritten(quick_run, tmp_path, change):
    """report.md and the verdicts written from the quick run's records as modified by ``change(record)``."""
    module = get_pipeline(NAME)
    records = [change(dict(r)) for r in quick_run.records]
    result = type(quick_run)(name=NAME, config=quick_run.config, records=records, summary=[], outdir=tmp_path)
    module.write_report(result, tmp_path)
    verdicts = {v.claim: v for v in module.verdicts(records, quick_run.config)}
    return (tmp_path / "report.md").read_text(), verdicts


def _verdict_row(report, claim):
    return _row(report, "## Verdicts", claim.replace("|", "\\|"))


def test_verdicts_carry_the_images_that_change_and_mcnemars_p(quick_run):
    """Every comparison of two variants rests on the test images: its count and McNemar's p are in the row."""
    report = (quick_run.outdir / "report.md").read_text()
    records = _json_records(quick_run)
    get = {(r["degree"], r["variant"], r["solver"]): r for r in records}
    plain, corrected = get[7, "feature-normalized", "dkernel"], get[7, "feature-normalized-bprime", "dkernel"]
    fixed, broken, p_value = _graf.mcnemar(plain["correct"], corrected["correct"])
    assert (fixed, broken) == (corrected["bprime_fixed"], corrected["bprime_broken"])
    assert p_value == pytest.approx(binomtest(fixed, fixed + broken, 0.5).pvalue if fixed + broken else 1.0)
    row = _verdict_row(report, "b' lowers the error further (not significantly) for the four most sensitive kernels")
    changed = f"{fixed + broken} image" + ("" if fixed + broken == 1 else "s")
    assert (f"p = 7: {round(plain['error'] * 240)} → {round(corrected['error'] * 240)} wrong of 240, "
            f"{changed} change ({fixed} fixed, {broken} broken), McNemar p = {p_value:.2g}") in row[2]
    assert row[1] != "not reproduced" and row[3] == "all"
    assert all(rec["converged"] and rec["fit_status"] == [0] * 20 for rec in records)
    assert "relation to the paper" in report and "| data set | COIL-20 (20 objects × 72 views) | differs" in report


def test_a_verdict_turns_only_on_a_difference_beyond_the_noise(quick_run, tmp_path):
    """b' breaking 30 images at p = 7 is beyond the noise (not reproduced); one image is not (inconclusive); an
    unconverged classifier makes the row inconclusive however many images change."""
    def breaks(count, status=0):
        def change(rec):
            if rec["degree"] == 7 and rec["variant"] == "feature-normalized-bprime":
                right = [k for k, c in enumerate(rec["correct"]) if c][:count]
                rec["correct"] = [0 if k in right else c for k, c in enumerate(rec["correct"])]
                rec["error"] = 1 - sum(rec["correct"]) / len(rec["correct"])
                rec["fit_status"] = [status] + rec["fit_status"][1:]
            return rec
        return change

    claim = "b' lowers the error further (not significantly) for the four most sensitive kernels"
    report, verdicts = _rewritten(quick_run, tmp_path, breaks(30))
    assert verdicts[claim].verdict == "not reproduced" and "McNemar p = " in verdicts[claim].evidence
    assert re.search(r"\| 7 \| .* \| 0\.1[0-9]{3} \(", report)
    assert _verdict_row(report, claim)[1] == "not reproduced"
    _, verdicts = _rewritten(quick_run, tmp_path, breaks(2))
    assert verdicts[claim].verdict == "inconclusive"
    _, verdicts = _rewritten(quick_run, tmp_path, breaks(30, status=1))
    assert verdicts[claim].verdict == "inconclusive" and "1 classifier(s) not converged" in verdicts[claim].evidence


def test_cli_runs_the_quick_pipeline(coil20, tmp_path, capsys):
    from dkernel.cli import main

    code = main(["run", NAME, "--quick", "--cluster", "threads", "--out", str(tmp_path), "--no-progress"])
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / NAME / "fig3_coil20.png").is_file()
    assert f"{NAME}: 18 records" in capsys.readouterr().out
