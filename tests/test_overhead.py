"""What a small fit does not do: import the cluster and store libraries, build a task graph, run the outer loop."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris, make_blobs, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC as LibSVC

import dkernel
from dkernel import SVC
from dkernel._runtime.threads import MAPPED_PATH, blas_controller, single_blas_thread
from dkernel.gram._in_memory import dense_symmetric_gram
from _dkernel_compiled.mirror import mirror_upper_into_lower
from dkernel.kernels import PolynomialKernel, RBFKernel
from dkernel.svm import _multiclass, _training


def _modules_after(code):
    """The top-level modules a new interpreter holds after running ``code``."""
    script = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    return set(out.stdout.split())


HEAVY = {"distributed", "dask.distributed", "zarr", "matplotlib"}


def test_import_dkernel_imports_no_cluster_store_or_plotting_library():
    loaded = _modules_after("import dkernel")
    assert not loaded & (HEAVY | {"numba", "dask.array", "sklearn"})


def test_a_fit_imports_neither_dask_nor_the_cluster_nor_the_store_library():
    loaded = _modules_after(
        "from sklearn.datasets import load_iris, make_classification\n"
        "from dkernel import SVC\n"
        "X, y = load_iris(return_X_y=True)\n"
        "SVC().fit(X, y).predict(X)\n"
        "X, y = make_classification(n_samples=2500, random_state=0)  # a banded Gram, the block solver\n"
        "SVC(working_set_size=64).fit(X, y).predict(X)"
    )
    assert not loaded & (HEAVY | {"dask"})


def test_the_estimator_brings_the_fit_context_scikit_learn_imports_in_each_fit():
    # scikit-learn's fit context imports its callback support on the call (about 0.1 s the first time);
    # sklearn.svm has it imported with the estimator, and so has dkernel.SVC.
    pytest.importorskip("sklearn.callback._callback_support")
    loaded = _modules_after("from dkernel import SVC")
    assert "sklearn.callback._callback_support" in loaded
    assert not loaded & (HEAVY | {"dask", "numba"})


def test_public_names_and_subpackages_resolve_on_first_use():
    for name in dkernel.__all__:
        assert getattr(dkernel, name) is not None
    assert set(dkernel.__all__) <= set(dir(dkernel))
    assert dkernel.gram.GramMatrix is dkernel.GramMatrix
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        dkernel.not_a_name


def test_a_small_gram_builds_no_task_graph(monkeypatch):
    import dask

    def no_graph(*args, **kwargs):
        raise AssertionError("a task graph was computed")

    monkeypatch.setattr(dask, "compute", no_graph)
    X, y = load_iris(return_X_y=True)
    clf = SVC(kernel="rbf", gamma=0.5).fit(X, y)
    assert clf.gram_dtype_ == "float64" and clf.score(X, y) > 0.95
    K = dense_symmetric_gram(X, RBFKernel(gamma=0.5))
    assert K.shape == (150, 150)


@pytest.mark.parametrize("kernel", [RBFKernel(gamma=0.3), PolynomialKernel(gamma=0.1, coef0=1.0, degree=3)])
def test_the_direct_gram_equals_the_banded_one_and_is_exactly_symmetric(kernel):
    X = np.random.default_rng(0).normal(size=(300, 7))
    direct = dense_symmetric_gram(X, kernel)
    banded = dense_symmetric_gram(X, kernel, band_rows=64)
    assert np.array_equal(direct, direct.T) and np.array_equal(banded, banded.T)
    np.testing.assert_allclose(direct, banded, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(direct, kernel.block(X, X), rtol=1e-12, atol=1e-12)


def test_a_sparse_small_gram_equals_the_dense_one():
    import scipy.sparse as sp

    X = np.random.default_rng(1).normal(size=(80, 5))
    X[X < 0.5] = 0.0
    kernel = RBFKernel(gamma=0.2)
    np.testing.assert_allclose(dense_symmetric_gram(sp.csr_matrix(X), kernel), dense_symmetric_gram(X, kernel),
                               atol=1e-12)


@pytest.mark.parametrize("n", [1, 7, 64, 65, 200])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mirror_copies_the_upper_triangle_onto_the_lower(n, dtype):
    A = np.random.default_rng(n).normal(size=(n, n)).astype(dtype)  # tiles of 64: one, a partial one, several
    M = A.copy()
    mirror_upper_into_lower(M)
    np.testing.assert_array_equal(np.triu(M), np.triu(A))
    np.testing.assert_array_equal(M, M.T)
    B = np.zeros((n + 9, n + 9), dtype=dtype)
    B[4 : 4 + n, 4 : 4 + n] = A
    mirror_upper_into_lower(B[4 : 4 + n, 4 : 4 + n])  # a band's diagonal block: a view
    np.testing.assert_array_equal(B[4 : 4 + n, 4 : 4 + n], M)
    assert not B[:4].any() and not B[:, :4].any() and not B[4 + n :].any()


def test_single_blas_thread_limits_blas_and_restores_it():
    from threadpoolctl import threadpool_info

    def blas_threads():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas_threads()
    with single_blas_thread():
        assert set(blas_threads()) <= {1}
    assert blas_threads() == before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the libraries mapped are listed by Linux")
def test_the_blas_libraries_are_found_without_resolving_every_library_loaded(monkeypatch):
    """threadpoolctl's own search resolves the path of each library loaded (over 200 in a fit's process): the
    controller is handed only the BLAS ones, and finds the libraries of threadpoolctl's whole search."""
    import threadpoolctl
    import scipy.linalg  # noqa: F401  (a second BLAS library)

    whole = threadpoolctl.ThreadpoolController().select(user_api="blas")
    resolved = []
    monkeypatch.setattr(threadpoolctl, "_realpath", lambda path: resolved.append(path) or os.path.realpath(path))
    found = blas_controller()
    assert sorted(lib.filepath for lib in found.lib_controllers) == sorted(
        lib.filepath for lib in whole.lib_controllers)
    assert len(found.lib_controllers) >= 1 and len(resolved) <= len(found.lib_controllers)
    with open("/proc/self/maps", "rb") as f:
        assert len(set(MAPPED_PATH.findall(f.read()))) > 10 * max(1, len(resolved))
    assert all(i["user_api"] == "blas" for i in found.info())
    before = [i["num_threads"] for i in found.info()]
    with found.limit(limits=1, user_api="blas"):
        assert {i["num_threads"] for i in found.info()} == {1}
    assert [i["num_threads"] for i in found.info()] == before


def test_a_small_fit_looks_for_no_blas_library(monkeypatch):
    # Finding the BLAS libraries to limit their threads cost 16 ms of a 50 ms first fit on iris (threadpoolctl's
    # own search): a Gram of one product leaves BLAS's threads as they are.
    from dkernel._runtime import threads

    def found(*args, **kwargs):
        raise AssertionError("the BLAS libraries were looked for")

    monkeypatch.setattr(threads, "blas_controller", found)
    X, y = load_iris(return_X_y=True)
    ours = SVC(kernel="rbf", gamma=0.5, C=1.0, client=False).fit(X, y)
    ref = LibSVC(kernel="rbf", gamma=0.5, C=1.0).fit(X, y)
    np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X), atol=1e-3)
    with pytest.raises(AssertionError, match="looked for"):  # a banded Gram limits them: the check can fail
        dense_symmetric_gram(np.zeros((1100, 2)), RBFKernel(gamma=1.0))


def test_problems_of_one_working_set_are_solved_by_one_smo_run(monkeypatch):
    import dkernel.svm._training as training

    def block_solver(*args, **kwargs):
        raise AssertionError("the block solver ran")

    monkeypatch.setattr("dkernel.solver.solve_qp", block_solver)
    X, y = load_iris(return_X_y=True)
    clf = SVC(kernel="rbf", gamma=0.5, C=2.0, tol=1e-8).fit(X, y)
    ref = LibSVC(kernel="rbf", gamma=0.5, C=2.0, tol=1e-8).fit(X, y)  # the same optimum, to the tolerance
    np.testing.assert_array_equal(clf.support_, ref.support_)
    np.testing.assert_allclose(clf.dual_coef_, ref.dual_coef_, atol=1e-5)
    np.testing.assert_allclose(clf.intercept_, ref.intercept_, atol=1e-5)
    assert clf.fit_status_ == 0 and set(clf.n_iter_.tolist()) <= {0, 1}
    assert training.SMALL_GRAM_BYTES >= 150 * 150 * 8


@pytest.mark.parametrize("options", [dict(max_iter=5), dict(working_set_size=20), dict(verbose=True)])
def test_the_block_solver_runs_where_the_user_asks_for_its_own_settings(options, monkeypatch, capsys):
    called = []
    import dkernel.solver

    real = dkernel.solver.solve_qp

    def recording(*args, **kwargs):
        called.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr("dkernel.solver.solve_qp", recording)
    X, y = make_classification(n_samples=120, n_features=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        SVC(kernel="rbf", gamma=0.2, **options).fit(X, y)
    assert called


def test_solve_small_warns_at_libsvms_step_cap(monkeypatch):
    from dkernel import DenseGram

    monkeypatch.setattr(_training, "libsvm_pair_cap", lambda n: 1)
    X, y = make_classification(n_samples=60, n_features=4, flip_y=0.3, random_state=1)
    K = RBFKernel(gamma=0.5).block(X, X)
    with pytest.warns(ConvergenceWarning, match="limit of 1 pair steps"):
        result = _training.solve_small(DenseGram(K), np.where(y == 1, 1.0, -1.0), np.ones(60), tol=1e-3)
    assert not result.converged and result.stop_reason == "max_iter"


def test_a_non_finite_gram_is_left_to_the_block_solver_error():
    from dkernel import DenseGram

    K = np.eye(4)
    K[1, 2] = K[2, 1] = np.nan
    assert _training.solve_small(DenseGram(K), np.array([1.0, -1, 1, -1]), np.ones(4), tol=1e-3) is None
    with pytest.raises(ValueError, match="precomputed Gram matrix|NaN"):
        SVC(kernel="precomputed").fit(K, [0, 1, 0, 1])


def test_large_one_vs_one_problems_run_in_threads_with_the_result_of_a_sequential_run(monkeypatch):
    X, y = make_blobs(n_samples=3300, centers=3, n_features=4, cluster_std=3.0, random_state=0)
    threads = []
    real = _multiclass.solve_problems

    def recording(solve, problems, parallel, blas=None):
        threads.append(parallel)
        return real(solve, problems, parallel, blas)

    monkeypatch.setattr(_multiclass, "solve_problems", recording)
    parallel = SVC(kernel="rbf", gamma=0.1).fit(X, y)
    monkeypatch.setattr(_multiclass, "usable_cores", lambda: 1)
    sequential = SVC(kernel="rbf", gamma=0.1).fit(X, y)
    assert threads == [True, True]
    assert all(index.shape[0] >= _multiclass.PARALLEL_PROBLEM_SIZE for index, _ in _multiclass.binary_problems(
        np.unique(y, return_inverse=True)[1], 3, np.arange(3300), "ovo"))
    np.testing.assert_array_equal(parallel.support_, sequential.support_)
    np.testing.assert_array_max_ulp(parallel.dual_coef_, sequential.dual_coef_, maxulp=4)
    np.testing.assert_array_max_ulp(parallel.intercept_, sequential.intercept_, maxulp=4)


def test_solve_problems_keeps_the_order_and_raises_the_first_error():
    problems = [(np.arange(size), None) for size in (1500, 10, 2000, 1200)]
    assert _multiclass.solve_problems(lambda k: k * k, problems, parallel=True) == [0, 1, 4, 9]

    def failing(k):
        if k == 2:
            raise KeyboardInterrupt
        return k

    with pytest.raises(KeyboardInterrupt):
        _multiclass.solve_problems(failing, problems, parallel=True)


def test_centered_multiclass_fits_draw_their_origins_in_the_problems_order():
    X, y = make_blobs(n_samples=90, centers=3, n_features=3, random_state=2)
    fits = [SVC(kernel="rbf", gamma=0.3, centering="class-balanced", centering_sample=10, random_state=7).fit(X, y)
            for _ in range(2)]
    np.testing.assert_array_max_ulp(fits[0].delta_b_, fits[1].delta_b_, maxulp=4)
    assert np.any(fits[0].delta_b_ != 0)
