"""The benchmark scripts and their fresh-process runner (their figures come from full runs, not from here)."""

import ast
import functools
import importlib
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris, make_classification
from sklearn.svm import SVC as LibSVC

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

CASES = {
    "bench_gram.py": (["--n", "600", "--d", "8", "--chunk", "256", "--repeat", "2", "--rows", "50"],
                      ["ratio memory / sklearn", "ratio zarr(none) / memory", "ratio zarr(lz4) / memory",
                       "write the same bytes", "rows(50 random indices)"]),
    "bench_svm.py": (["--n", "400", "--d", "8", "--rounds", "1"],
                     ["fit, one per fresh process", "dk/sk", "dk/oneDAL", "objective dk", "import of the SVC class"]),
    "bench_centered_fit.py": (["--n", "300", "--d", "8", "--rounds", "1"],
                              ["fit, one per fresh process", "dk/sk", "same pred dk", "peak GB dk"]),
    "bench_scale.py": (["--n", "2500", "--d", "8", "--centered-n", "300", "--peers-max", "0"],
                       ["uncentered RBF SVM", "centered RBF SVM", "sklearn not run: n > --peers-max 0", "peak GB dk"]),
    "bench_centering.py": (["--n", "3000", "--d", "8", "--n-sample", "100", "--subset", "500",
                            "--samples", "50", "100", "--chunk", "1000"], ["rel. error"]),
    "bench_alignment.py": (["--n", "1200", "--d", "8", "--chunk", "400", "--n-sample", "200", "--repeats", "2"],
                           ["alignment / read time ratio"]),
    "bench_matrix.py": (["--only", "tiny", "--match", "iris", "--tiny-rounds", "1", "--libraries", "dkernel",
                         "sklearn"], ["tiny sets", "fit, one per fresh process", "dk/sk", "iris", "## targets"]),
    "bench_out_of_core.py": (["--n", "1500", "--d", "4", "--n-test", "100", "--memory-limit", "1GB"],
                             ["same support vectors: True", "one-class SVM (nu=0.1) on the cluster from the store",
                              "agreement of inlier/outlier on the test points: 1.0000"]),
    "bench_object_store.py": (["--n", "600", "--d", "4", "--chunk", "256", "--rounds", "1"],
                              ["S3 bucket (moto, s3fs)", "bucket / local: write", "max |K(bucket) - K(local)|: 0.0e+00"]),
    "bench_svm_family.py": (["--n", "300", "--rounds", "1"],
                            ["SVR, Friedman #1", "NuSVR, Friedman #1", "NuSVC, two classes",
                             "OneClassSVM, three Gaussian clusters", "dk/sklearn", "max|pred-sk|/std dkernel",
                             "same as sk dkernel"]),
    "bench_kernel_pca.py": (["--n", "3000", "--d", "6", "--check-n", "600", "--n-test", "200", "--n-sample", "300",
                             "--memory-limit", "1GB"], ["check at n=600", "peak worker memory", "eigenvalues: "]),
    "bench_adaptation.py": (["--n", "3000", "--rank", "20", "--exact-n", "300", "600", "--chunk", "1000"],
                            ["faster than the extrapolated exact method"]),
}


@pytest.fixture(scope="module")
def bench(request):
    """``bench("_fresh")``: a module of benchmarks/ (they import each other as top-level modules)."""
    sys.path.insert(0, str(BENCHMARKS))
    request.addfinalizer(lambda: sys.path.remove(str(BENCHMARKS)))
    return importlib.import_module


def test_every_benchmark_script_runs_in_these_tests():
    assert sorted(CASES) == sorted(p.name for p in BENCHMARKS.glob("bench_*.py"))


@pytest.mark.parametrize("script", sorted(CASES))
def test_benchmark_runs(script, tmp_path):
    args, expected = CASES[script]
    result = subprocess.run([sys.executable, str(BENCHMARKS / script), *args], capture_output=True, text=True,
                            cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("# commit "), result.stdout[:200]
    assert "numpy " in result.stdout and "dkernel " in result.stdout, "the versions line is missing"
    for text in expected:
        assert text in result.stdout, f"{text!r} missing from the output of {script}:\n{result.stdout[-3000:]}"


#: Clock reads that belong in ``benchmarks/_timing.py`` only.
_CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "time", "process_time"}


def _imports(path):
    tree = ast.parse(path.read_text())
    return tree, {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}


@pytest.mark.parametrize("script", [*sorted(CASES), "_fresh.py", "_fresh_fit.py"])
def test_benchmark_times_with_benchmarks_timing(script):
    tree, imports = _imports(BENCHMARKS / script)
    assert imports & {"_timing", "_fresh", "_fresh_fit"}, (
        f"{script} does not time with benchmarks/_timing.py (directly or through the fresh-process runner _fresh.py)")
    clocks = [f"line {node.lineno}" for node in ast.walk(tree) if isinstance(node, ast.Call)
              and isinstance(node.func, ast.Attribute) and node.func.attr in _CLOCKS
              and isinstance(node.func.value, ast.Name) and node.func.value.id == "time"]  # fmt: skip
    assert not clocks, f"{script} reads the clock itself ({', '.join(clocks)}); use _timing.timed"
    own = [node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and "timed" in node.name]
    assert not own, f"{script} defines its own timing function {own}; use _timing.timed"


@pytest.mark.parametrize("script", ["bench_matrix.py", "bench_svm.py", "bench_centered_fit.py", "bench_scale.py"])
def test_peer_comparisons_fit_through_the_fresh_process_runner(script):
    tree, imports = _imports(BENCHMARKS / script)
    assert "_fresh" in imports, f"{script} compares with a peer but does not fit through benchmarks/_fresh.py"
    fits = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == "fit"]
    assert not fits, f"{script} fits in its own process (lines {fits}); fit through _fresh.compare"


@pytest.mark.parametrize("module", ["_fresh_fit.py", "_timing.py"])
def test_a_fresh_process_imports_only_the_standard_library_before_the_timed_import(module):
    # numpy or scikit-learn imported first would shorten the import time reported for the library measured
    tree = ast.parse((BENCHMARKS / module).read_text())
    top = [alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names]
    top += [node.module for node in tree.body if isinstance(node, ast.ImportFrom)]
    outside = [name for name in top if name.split(".")[0] not in sys.stdlib_module_names and name != "_timing"]
    assert not outside, f"{module} imports {outside} at module level"


# --------------------------------------------------------------------------- the runner
def test_schedule_lets_each_library_go_first_in_turn(bench):
    rounds = bench("_fresh").schedule(["dkernel", "sklearn", "oneDAL"], 4)
    assert rounds == [["dkernel", "sklearn", "oneDAL"], ["sklearn", "oneDAL", "dkernel"],
                      ["oneDAL", "dkernel", "sklearn"], ["dkernel", "sklearn", "oneDAL"]]


def test_a_process_after_a_large_one_starts_when_the_memory_freed_has_settled(bench):
    timing = bench("_timing")
    slept = []
    settle = functools.partial(timing.settle_memory, sleep=slept.append, clock=lambda: 100.0)
    large, small, rest = timing.SETTLE_MIN_BYTES, timing.SETTLE_MIN_BYTES - 1, timing.SETTLE_SECONDS
    assert settle(timing.LastProcess(ended=99.0, peak_bytes=large)) == rest - 1.0
    assert settle(timing.LastProcess(ended=99.0, peak_bytes=None)) == rest - 1.0  # failed: its peak unknown
    assert settle(timing.LastProcess(ended=99.0, peak_bytes=small)) == 0.0
    assert settle(timing.LastProcess(ended=100.0 - rest, peak_bytes=large)) == 0.0
    assert settle(timing.LastProcess()) == 0.0  # the first process
    assert slept == [rest - 1.0] * 2


def test_run_fit_keeps_when_its_process_ended_and_its_peak(bench):
    fresh, timing = bench("_fresh"), bench("_timing")
    X, y = make_classification(n_samples=60, n_features=4, random_state=3)
    with fresh.problem_file(X[:40], y[:40], X[40:], y[40:]) as path:
        run = fresh.run_fit(fresh.SKLEARN, path, {"C": 1.0})
    assert timing.LAST_PROCESS.peak_bytes == run["fit_peak_bytes"] > 0
    assert 0 <= time.monotonic() - timing.LAST_PROCESS.ended < 60


@pytest.mark.parametrize("sparse", [False, True])
def test_problem_file_gives_back_the_arrays_written(bench, tmp_path, sparse):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 5)) * (rng.random((30, 5)) < 0.4)
    X = sp.csr_matrix(X) if sparse else X
    y = rng.integers(0, 3, 30)
    parts = (X[:20], y[:20], X[20:], y[20:])
    path = bench("_fresh_fit").save_problem(tmp_path / "p.npz", *parts)
    for got, want in zip(bench("_fresh_fit").load_problem(path), parts):
        assert sp.issparse(got) == sp.issparse(want)
        np.testing.assert_array_equal(got.toarray() if sp.issparse(got) else got,
                                      want.toarray() if sp.issparse(want) else want)


def test_resolve_gamma_is_scikit_learns_scale_for_dense_and_sparse(bench):
    X, y = make_classification(n_samples=80, n_features=6, random_state=0)
    X[X < 0] = 0.0
    for data in (X, sp.csr_matrix(X)):
        expected = LibSVC(gamma="scale").fit(data, y)._gamma
        assert bench("_fresh").resolve_gamma(data) == pytest.approx(expected, rel=1e-12)


def _libsvm_binary_objective(X, y, **params):
    """½ cᵀKc − Σ|c| of a binary scikit-learn fit, K over its support vectors by brute force."""
    clf = LibSVC(kernel="rbf", **params).fit(X, y)
    sv = X[clf.support_]
    K = np.exp(-params["gamma"] * ((sv[:, None, :] - sv[None, :, :]) ** 2).sum(-1))
    c = clf.dual_coef_[0]
    return 0.5 * c @ K @ c - np.abs(c).sum()


def test_dual_objective_sums_the_one_vs_one_problems(bench):
    X, y = load_iris(return_X_y=True)
    params = {"gamma": 0.5, "C": 1.0, "tol": 1e-6}
    model = LibSVC(kernel="rbf", **params).fit(X, y)
    pairs = [(a, b) for a in range(3) for b in range(a + 1, 3)]
    expected = sum(_libsvm_binary_objective(X[np.isin(y, pair)], y[np.isin(y, pair)], **params) for pair in pairs)
    objective = bench("_fresh_fit").dual_objective
    assert objective(model, X, "rbf", gamma=0.5, block_bytes=8 * 40 * 100) == pytest.approx(expected, rel=1e-6)
    wide = np.hstack([X, np.zeros((X.shape[0], 1100))])  # sparse support vectors kept sparse past 1024 features
    for data in (sp.csr_matrix(X), sp.csr_matrix(wide)):
        assert objective(model, data, "rbf", gamma=0.5) == pytest.approx(expected, rel=1e-6)


def test_a_fresh_process_reports_the_fit_a_fit_here_gives(bench, tmp_path):
    fresh = bench("_fresh")
    X, y = make_classification(n_samples=300, n_features=5, random_state=1)
    params = {"kernel": "rbf", "gamma": 0.2, "C": 1.0, "tol": 1e-3}
    with fresh.problem_file(X[:200], y[:200], X[200:], y[200:]) as path:
        run = fresh.run_fit(fresh.SKLEARN, path, params, objective=True, predictions=str(tmp_path / "p.npy"))
    here = LibSVC(**params, cache_size=2000).fit(X[:200], y[:200])
    assert run["estimator"] == "sklearn.svm.SVC"
    assert run["n_support"] == here.support_.size
    assert run["accuracy"] == pytest.approx(here.score(X[200:], y[200:]))
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy"), here.predict(X[200:]))
    assert run["objective"] == pytest.approx(_libsvm_binary_objective(X[:200], y[:200], **{
        k: params[k] for k in ("gamma", "C", "tol")}), rel=1e-9)
    for key in ("import_s", "fit_s", "predict_s", "decision_s", "fit_peak_bytes"):
        assert run[key] > 0, key
    assert run["module_file"].endswith(("svm/__init__.py", "svm\\__init__.py"))


def test_compare_names_a_library_not_installed_and_runs_nothing_for_it(bench):
    fresh = bench("_fresh")
    ghost = fresh.Library("ghost", "no_such_package_for_dkernel.SVC", "no-such-package")
    outcomes = fresh.compare("unused.npz", {}, libraries=(ghost,), rounds=3)
    assert outcomes["ghost"].status == "not installed" and not outcomes["ghost"].runs
    assert fresh.time_cell(outcomes["ghost"]) == "not installed"


def test_compare_reports_a_failed_fit_with_its_reason_and_fits_a_slow_one_once(bench):
    fresh = bench("_fresh")
    X, y = make_classification(n_samples=60, n_features=4, random_state=2)
    with fresh.problem_file(X[:40], y[:40], X[40:], y[40:]) as path:
        broken = fresh.compare(path, {"C": -1.0}, libraries=(fresh.SKLEARN,), rounds=2)["sklearn"]
        slow = fresh.compare(path, {"C": 1.0}, libraries=(fresh.SKLEARN,), rounds=3, once_above=0.0,
                             objective=False)["sklearn"]
    assert broken.status == "failed" and "C" in broken.note and not broken.runs
    assert len(slow.runs) == 1 and slow.measured_once and fresh.time_cell(slow).endswith("*")


def test_time_and_ratio_cells_mark_extrapolated_and_stopped_fits(bench):
    fresh = bench("_fresh")
    ours = fresh.Outcome(fresh.DKERNEL, runs=[{"fit_s": 2.0}, {"fit_s": 4.0}, {"fit_s": 3.0}], rounds=3)
    extrapolated = fresh.Outcome(fresh.SKLEARN, status="not run", extrapolated=30.0, rounds=3)
    stopped = fresh.Outcome(fresh.ONEDAL, status="timed out", note="over 600 s", rounds=3)
    assert fresh.time_cell(ours) == "3.00 s"
    assert fresh.time_cell(extrapolated) == "~30.00 s" and fresh.ratio_text(ours, extrapolated) == "~0.10"
    assert fresh.time_cell(stopped) == ">600 s" and fresh.ratio_text(ours, stopped) == ""


def test_extrapolate_follows_the_slope_of_the_two_largest_sizes(bench):
    seconds, slope = bench("_fresh").extrapolate({500: 9.0, 1000: 1.0, 2000: 4.0}, 4000)
    assert slope == pytest.approx(2.0) and seconds == pytest.approx(16.0)


def test_peer_times_leave_out_a_peer_extrapolated_past_the_limit_or_the_size_limit(bench):
    fresh = bench("_fresh")

    def ran(seconds):
        return {"dkernel": fresh.Outcome(fresh.DKERNEL, runs=[{"fit_s": 1.0}]),
                "sklearn": fresh.Outcome(fresh.SKLEARN, runs=[{"fit_s": seconds}]),
                "oneDAL": fresh.Outcome(fresh.ONEDAL, status="timed out", note="over 9 s")}

    by_time = fresh.PeerTimes(max_seconds=100.0)
    assert by_time.skip(1000) == {}
    by_time.record(1000, ran(1.0))
    by_time.record(2000, ran(4.0))
    assert "sklearn" not in by_time.skip(8000)  # 64 s extrapolated: under the limit, run
    assert by_time.skip(8000)["oneDAL"] == ("stopped at a smaller n", None)
    assert by_time.skip(32000)["sklearn"] == ("extrapolated (t ∝ n^2.00)", pytest.approx(1024.0))
    by_size = fresh.PeerTimes(max_n=1500, max_n_option="--peer-max")
    assert set(by_size.skip(2000)) == {"sklearn", "oneDAL"} and by_size.skip(2000)["sklearn"][1] is None
    by_size.record(1000, ran(1.0))
    by_size.record(1500, ran(2.25))
    reason, seconds = by_size.skip(3000)["sklearn"]
    assert reason.startswith("n > --peer-max 1500, extrapolated") and seconds == pytest.approx(9.0)


def test_format_table_keeps_every_cell_under_its_label(bench):
    lines = bench("_fresh").format_table([("problem", 4, "<"), ("dkernel", 6, ">")],
                                         [["a long problem name", "not installed"], ["b", "1.00 s"]])
    assert lines[0].index("dkernel") + len("dkernel") == lines[1].index("not installed") + len("not installed")
    assert lines[2].endswith("1.00 s") and len(lines[2]) == len(lines[1])


# --------------------------------------------------------------------------- the matrix's problems
@pytest.mark.parametrize("variant", [("apart", 10, "dense"), ("noisy", 256, "sparse")])
def test_synthetic_problems_mix_the_classes_in_training_and_test_sets(bench, variant):
    X_tr, X_te, y_tr, y_te = bench("bench_matrix").synthetic_problem(600, *variant, n_test=400)
    assert X_tr.shape == (600, variant[1]) and X_te.shape == (400, variant[1])
    for labels in (y_tr, y_te):
        assert 0.35 < np.mean(labels == labels.max()) < 0.65
    if variant[2] == "sparse":
        assert sp.issparse(X_tr) and 0.05 < X_tr.nnz / np.prod(X_tr.shape) < 0.2
