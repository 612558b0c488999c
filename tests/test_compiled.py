"""The compiled loops: built at install time (no JIT in a user's process), outside the GIL, and equal to NumPy."""

import ast
import importlib.machinery
import subprocess
import sys
import threading
import time
import tomllib
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC as LibSVC

from _dkernel_compiled import alignment, gradient, mirror, on_demand, rbf, select, smo

REPO = Path(__file__).resolve().parents[1]

#: Modules that compile code in the user's process.
JIT_MODULES = ("numba", "llvmlite", "pyximport", "cppimport")
#: Files that compiling code in the user's process writes: C sources, objects, modules, numba's cache.
COMPILED_ARTIFACTS = (".c", ".cpp", ".o", ".so", ".pyd", ".dll", ".dylib", ".nbi", ".nbc")


def test_a_fit_in_a_fresh_process_loads_prebuilt_loops_and_compiles_nothing():
    # The first fit after an install must not wait for a compiler: every compiled loop it runs is an extension
    # module built with the package, no JIT is imported, and no process (a C compiler) is started.
    # Nor is compiled code written (a JIT's cache, a module built on the fly).
    script = (
        "import os, sys\n"
        "spawned, written = [], []\n"
        "def audit(event, args):\n"
        "    if event in ('subprocess.Popen', 'os.posix_spawn', 'os.exec', 'os.system', 'os.spawn'):\n"
        "        spawned.append(event)\n"
        "    elif event == 'open' and isinstance(args[0], (str, bytes, os.PathLike)):\n"
        "        mode, flags = args[1] or '', args[2] or 0\n"
        "        if any(c in mode for c in 'wax+') or flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):\n"
        f"            if os.fsdecode(args[0]).endswith({COMPILED_ARTIFACTS!r}):\n"
        "                written.append(os.fsdecode(args[0]))\n"
        "sys.addaudithook(audit)\n"
        "from sklearn.datasets import load_iris, make_classification\n"
        "from dkernel import SVC\n"
        "X, y = load_iris(return_X_y=True)\n"
        "SVC().fit(X, y)\n"
        "X, y = make_classification(n_samples=2500, random_state=0)  # a banded Gram, the block solver\n"
        "SVC(working_set_size=64).fit(X, y)\n"
        f"jit = sorted(name for name in sys.modules if name.split('.')[0] in {JIT_MODULES!r})\n"
        "loops = {name.split('.')[1]: type(module.__spec__.loader).__name__ for name, module in sys.modules.items()\n"
        "         if name.startswith('_dkernel_compiled.')}\n"
        "print(repr((jit, loops, spawned, written)))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    jit, loops, spawned, written = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    assert jit == [] and spawned == [] and written == []
    assert {"rbf", "mirror", "smo", "gradient", "select"} <= set(loops)
    assert set(loops.values()) == {importlib.machinery.ExtensionFileLoader.__name__}


def test_the_package_needs_no_jit_to_run_and_builds_its_loops_with_cython():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    requirements = " ".join(project["project"]["dependencies"]).lower()
    assert not any(name in requirements for name in JIT_MODULES)
    assert any(requirement.lower().startswith("cython") for requirement in project["build-system"]["requires"])
    for module in (alignment, gradient, mirror, on_demand, rbf, select, smo):
        assert isinstance(module.__spec__.loader, importlib.machinery.ExtensionFileLoader), module.__name__
    assert not (REPO / "_dkernel_compiled").exists()  # a checkout imports the installed loops


# --------------------------------------------------------------------------- #
# Outside the GIL: threads evaluate bands of a Gram and solve one-vs-one problems in parallel.
# --------------------------------------------------------------------------- #


def _python_ran_during(make_call, attempts=3):
    """Whether this thread ran Python code while a call ran in another thread (the call released the GIL).

    With a long switch interval a thread that holds the GIL keeps it until it
    blocks or releases it; this thread gives it up at each tick. So a tick
    between the other thread's two timestamps was taken while the call had
    released the GIL: never with a call that holds it. A loaded machine may
    not run this thread during a short call, hence a few attempts.
    """
    interval = sys.getswitchinterval()
    sys.setswitchinterval(30.0)
    try:
        for _ in range(attempts):
            call, span, ticks = make_call(), [], []

            def run(call=call, span=span):
                start = time.perf_counter()
                call()
                span.extend((start, time.perf_counter()))

            thread = threading.Thread(target=run)
            thread.start()
            while thread.is_alive():
                ticks.append(time.perf_counter())
                time.sleep(0)  # gives the GIL to the other thread, wherever it waits for it
            thread.join()
            if any(span[0] < tick < span[1] for tick in ticks):
                return True
        return False
    finally:
        sys.setswitchinterval(interval)


def _gil_cases():
    """For each compiled loop, a maker of a call that runs it some tens of milliseconds and does nothing else.

    The inputs are made beforehand: NumPy releases the GIL while it fills or
    copies an array, which would hide a loop that holds it.
    """
    rng = np.random.default_rng(0)
    n = 3072
    K, P = rng.random((n, n)), rng.random((1024, 2048))
    t, out = -rng.random(4_000_000), np.empty(4_000_000)
    perm = rng.permutation(n)
    computed, remaining = perm[:1500].copy(), np.sort(perm[1500:])
    q = 1200
    A = rng.normal(size=(q, 5))
    y, C_q = np.where(A[:, 0] + rng.normal(size=q) > 0, 1.0, -1.0), np.ones(q)
    Q = np.outer(y, y) * rbf_kernel(A, gamma=0.5)
    M, rows = rng.normal(size=(100, 20000)), np.tile(np.arange(100), 40)
    weights, step, block = np.ones(rows.size), np.empty(20000), np.empty((rows.size, rows.size))
    m = 1_000_000
    alpha, G, y_m = rng.choice([0.0, 0.5, 1.0], size=m), rng.normal(size=m), np.where(rng.random(m) < 0.5, 1.0, -1.0)
    C_m, every, active, steps = np.ones(m), np.arange(m), np.tile(np.arange(m), 4), np.ones(4 * m)
    ones, upper, square = np.ones(n), K[:2048], K[:1500, :1500]
    Zt, direct_rows = rng.normal(size=(5, 20000)), np.empty((400, 20000), dtype=np.float32)
    calls = {
        "rbf_values_into": partial(rbf.rbf_values_into, upper, ones, ones, -0.1, -1),
        "rbf_tile_into_gram": partial(rbf.rbf_tile_into_gram, P, ones, ones, -0.1, K, 0, 1024),
        "rbf_direct_rows_into": partial(rbf.rbf_direct_rows_into, A[:400], Zt, -0.1, direct_rows),
        "exp_nonpositive_into": partial(rbf.exp_nonpositive_into, t, out),
        "mirror_upper_into_lower": partial(mirror.mirror_upper_into_lower, K),
        "copy_computed_columns": partial(on_demand.copy_computed_columns, K, computed, remaining, 0, 1500),
        "write_remaining_tile": partial(on_demand.write_remaining_tile, K, 1500, remaining, square, 0, 0, True),
        "weighted_rows_step": partial(gradient.weighted_rows_step, M, rows, weights, rows, True, step),
        "gather_block_into": partial(gradient.gather_block_into, M, rows, rows, block),
        "add_gradient_step": partial(gradient.add_gradient_step, G, y_m, active, steps),
        "active_candidates": partial(select.active_candidates, alpha, y_m, C_m, G, every, 1000),
        "target_sums": partial(alignment.target_sums, K, ones, ones),
    }
    makers = {name: (lambda call=call: call) for name, call in calls.items()}
    # SMO solves its problem in place: each call starts again from alpha = 0.
    makers["smo_subproblem"] = lambda: partial(smo.smo_subproblem, Q, y, np.zeros(q), C_q, -np.ones(q), 1e-3, 0.0,
                                               10**7)
    return makers


@pytest.fixture(scope="module")
def gil_cases():
    return _gil_cases()


@pytest.mark.parametrize("name", ["rbf_values_into", "rbf_tile_into_gram", "rbf_direct_rows_into",
                                  "exp_nonpositive_into",
                                  "mirror_upper_into_lower", "copy_computed_columns", "write_remaining_tile",
                                  "smo_subproblem", "weighted_rows_step", "gather_block_into", "add_gradient_step",
                                  "active_candidates", "target_sums"])
def test_each_compiled_loop_runs_outside_the_gil(name, gil_cases):
    assert _python_ran_during(gil_cases[name]), f"{name} held the GIL"


def test_the_gil_check_tells_a_call_that_holds_the_gil():
    assert not _python_ran_during(lambda: partial(sum, range(3_000_000)))  # a loop in C that keeps the GIL


# --------------------------------------------------------------------------- #
# The loops against NumPy
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("order", ["C", "F"])
def test_a_tile_and_its_mirror_are_written_into_a_gram_of_any_layout(dtype, order):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 6))
    x_sq = (X**2).sum(1)
    K = np.full((420, 420), np.nan, dtype=dtype, order=order)[10:410, 10:410]  # a view into a larger Gram
    P = X[:130] @ X[200:400].T
    rbf.rbf_tile_into_gram(P, x_sq[:130], x_sq[200:], -0.3, K, 0, 200)
    expected = rbf_kernel(X[:130], X[200:], gamma=0.3)
    np.testing.assert_allclose(P, expected, rtol=1e-13)  # the products became the values
    np.testing.assert_allclose(K[:130, 200:], expected, rtol=1e-13 if dtype == np.float64 else 1e-7)
    assert np.array_equal(K[200:, :130], K[:130, 200:].T)
    written = np.zeros(K.shape, dtype=bool)
    written[:130, 200:] = written[200:, :130] = True
    assert np.isnan(K[~written]).all()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rows_evaluated_directly_are_the_kernels_into_a_slice_of_columns(dtype):
    """Distances summed feature by feature over columns a:b of Xᵀ, written once into columns a:b of the rows (a
    strided view), nothing else written; brute force in NumPy, values to rounding, a point and itself exactly 1."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(700, 9))
    Xt = np.ascontiguousarray(X.T)
    idx = np.array([3, 650, 300, 301, 5])
    out = np.full((5, 720), np.nan, dtype=dtype)
    rbf.rbf_direct_rows_into(X[idx], Xt[:, 280:680], -0.2, out[:, 20:420])
    expected = np.exp(-0.2 * ((X[idx, None, :] - X[None, 280:680, :]) ** 2).sum(axis=2))
    np.testing.assert_allclose(out[:, 20:420], expected, rtol=1e-14 if dtype == np.float64 else 1e-7)
    assert out[2, 20 + 20] == out[3, 20 + 21] == out[1, 20 + 370] == 1.0
    assert np.isnan(out[:, :20]).all() and np.isnan(out[:, 420:]).all()
    with pytest.raises(ValueError, match="do not match"):
        rbf.rbf_direct_rows_into(X[idx], Xt[:5], -0.2, out[:, :700])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_mirror_of_a_fortran_ordered_matrix(dtype):
    A = np.asfortranarray(np.random.default_rng(2).normal(size=(130, 130)).astype(dtype))
    expected = np.triu(A) + np.triu(A, 1).T
    mirror.mirror_upper_into_lower(A)
    assert np.array_equal(A, expected)


@pytest.mark.parametrize("gram_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("values_dtype", [np.float64, np.float32])
def test_the_rest_of_an_on_demand_gram_is_numpys_fancy_indexing(gram_dtype, values_dtype):
    rng = np.random.default_rng(3)
    n, R = 300, 70
    perm = rng.permutation(n)
    computed, remaining = perm[:R].copy(), np.sort(perm[R:])
    M = rng.normal(size=(n, n)).astype(gram_dtype)
    expected = M.copy()
    on_demand.copy_computed_columns(M, computed, remaining, 20, 150)
    expected[R + np.arange(20, 150)[:, None], computed[None, :]] = expected[:R, remaining[20:150]].T
    P = rng.normal(size=(90, 110)).astype(values_dtype)
    on_demand.write_remaining_tile(M, R, remaining, P, 5, 100, True)
    expected[(R + 5 + np.arange(90))[:, None], remaining[100:210][None, :]] = P
    expected[(R + 100 + np.arange(110))[:, None], remaining[5:95][None, :]] = P.T
    on_demand.write_remaining_tile(M, R, remaining, P[:, :90], 120, 120, False)
    expected[(R + 120 + np.arange(90))[:, None], remaining[120:210][None, :]] = P[:, :90]
    assert np.array_equal(M, expected)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_working_set_block_is_numpys_ix_and_its_finiteness(dtype):
    rng = np.random.default_rng(4)
    K = rng.normal(size=(200, 300)).astype(dtype)
    rows, columns = rng.choice(200, 40, replace=False), rng.choice(300, 40, replace=False)
    out = np.empty((40, 40))
    assert gradient.gather_block_into(K, rows, columns, out)
    assert np.array_equal(out, K[np.ix_(rows, columns)].astype(np.float64))
    K[rows[7], columns[3]] = np.inf
    assert not gradient.gather_block_into(K, rows, columns, out)


def test_the_gradient_update_is_numpys_and_tells_a_non_finite_step():
    rng = np.random.default_rng(5)
    G, y = rng.normal(size=500), np.where(rng.random(500) < 0.5, 1.0, -1.0)
    active, step = np.sort(rng.choice(500, 200, replace=False)), rng.normal(size=200)
    expected = G.copy()
    expected[active] += y[active] * step
    assert gradient.add_gradient_step(G, y, active, step)
    np.testing.assert_array_max_ulp(G, expected, maxulp=4)
    step[9] = np.nan
    assert not gradient.add_gradient_step(G, y, active, step)


def test_smo_on_a_whole_problem_reaches_libsvms_optimum():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(300, 4))
    labels = np.where(X[:, 0] + 0.7 * rng.normal(size=300) > 0, 1, -1)
    K = rbf_kernel(X, gamma=0.4)
    y = labels.astype(np.float64)
    Q, C = np.outer(y, y) * K, np.full(300, 2.0)
    alpha, G = np.zeros(300), -np.ones(300)
    steps, first_gap = smo.smo_subproblem(Q, y, alpha, C, G, 1e-6, 0.0, 10**6)
    assert 0 < steps < 10**6 and first_gap == pytest.approx(2.0)  # at alpha = 0: m - M = 1 + 1
    np.testing.assert_allclose(G, Q @ alpha - 1.0, atol=1e-9)
    assert abs(y @ alpha) < 1e-10 and ((alpha >= 0) & (alpha <= C)).all()
    ref = LibSVC(kernel="precomputed", C=2.0, tol=1e-6).fit(K, labels)
    ref_alpha = np.zeros(300)
    ref_alpha[ref.support_] = np.abs(ref.dual_coef_[0])
    objective = 0.5 * alpha @ Q @ alpha - alpha.sum()
    assert objective == pytest.approx(0.5 * ref_alpha @ Q @ ref_alpha - ref_alpha.sum(), rel=1e-7)
    assert smo.select_pair(Q, y, alpha, C, G)[2] <= 1e-6


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_target_alignment_sums_are_numpys_in_any_layout(dtype):
    rng = np.random.default_rng(7)
    K = rng.random((150, 170)).astype(dtype)
    t_rows, t_cols = rng.normal(size=150), rng.normal(size=170)
    wide = K.astype(np.float64)
    expected = (t_rows @ wide @ t_cols, (wide**2).sum())
    every_other_row = np.zeros((300, 170), dtype=dtype)
    every_other_row[::2] = K
    for block in (K, np.asfortranarray(K), every_other_row[::2]):
        np.testing.assert_allclose(alignment.target_sums(block, t_rows, t_cols), expected, rtol=1e-12)


def test_read_only_inputs_are_read_in_place():
    rng = np.random.default_rng(8)
    K = rbf_kernel(rng.normal(size=(60, 3)))
    K.flags.writeable = False  # a Gram read from a store, or shared by threads
    rows = np.arange(0, 60, 3)
    rows.flags.writeable = False
    out, step = np.empty((20, 20)), np.empty(60)
    assert gradient.gather_block_into(K, rows, rows, out)
    gradient.weighted_rows_step(K, rows, np.ones(20), rows, True, step)
    np.testing.assert_allclose(step, K[rows].sum(0), rtol=1e-12)
    np.testing.assert_allclose(alignment.target_sums(K, np.ones(60), np.ones(60)), (K.sum(), (K**2).sum()))


def test_indices_outside_the_arrays_raise_instead_of_reading_past_them():
    K, out = np.eye(5), np.empty((2, 2))
    with pytest.raises(IndexError):
        gradient.gather_block_into(K, np.array([0, 5]), np.array([0, 1]), out)
    with pytest.raises(IndexError):
        gradient.gather_block_into(K, np.array([0, 1]), np.array([-2, 1]), out)
    with pytest.raises(IndexError):
        gradient.weighted_rows_step(K, np.array([0, 9]), np.ones(2), np.arange(5), True, np.empty(5))
    with pytest.raises(IndexError):
        gradient.weighted_rows_step(K, np.array([0, 1]), np.ones(2), np.array([0, 7]), False, np.empty(2))
    with pytest.raises(IndexError):
        gradient.add_gradient_step(np.zeros(5), np.ones(5), np.array([1, 5]), np.ones(2))
    with pytest.raises(IndexError):
        select.active_candidates(np.zeros(5), np.ones(5), np.ones(5), np.ones(5), np.array([0, 5]), 2)
    with pytest.raises(IndexError):
        on_demand.copy_computed_columns(K, np.array([0, 1]), np.array([2, 3, 8]), 0, 3)
    with pytest.raises(ValueError, match="fit"):
        rbf.rbf_tile_into_gram(np.zeros((2, 3)), np.zeros(2), np.zeros(3), -1.0, K, 0, 3)
