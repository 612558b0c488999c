"""The benchmark scripts run end to end on tiny problems (their figures come from full runs, not from here)."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

CASES = {
    "bench_gram.py": (["--n", "600", "--d", "8", "--chunk", "256", "--repeat", "2", "--rows", "50"],
                      ["ratio memory / sklearn", "ratio zarr(none) / memory", "ratio zarr(lz4) / memory",
                       "write the same bytes", "rows(50 random indices)"]),
    "bench_svm.py": (["--n", "400", "--d", "8"], ["obj dk"]),
    "bench_centering.py": (["--n", "3000", "--d", "8", "--n-sample", "100", "--subset", "500",
                            "--samples", "50", "100", "--chunk", "1000"], ["rel. error"]),
    "bench_alignment.py": (["--n", "1200", "--d", "8", "--chunk", "400", "--n-sample", "200", "--repeats", "2"],
                           ["alignment / read time ratio"]),
    "bench_matrix.py": (["--only", "tiny", "fresh", "--repeats", "1", "--min-seconds", "0", "--fresh-runs", "1"],
                        ["ratio", "first fit", "digits 3 vs 8"]),
    "bench_out_of_core.py": (["--n", "1500", "--d", "4", "--n-test", "100", "--memory-limit", "1GB"],
                             ["same support vectors: True"]),
    "bench_adaptation.py": (["--n", "3000", "--rank", "20", "--exact-n", "300", "600", "--chunk", "1000"],
                            ["faster than the extrapolated exact method"]),
}


@pytest.mark.parametrize("script", sorted(CASES))
def test_benchmark_runs(script, tmp_path):
    args, expected = CASES[script]
    result = subprocess.run([sys.executable, str(BENCHMARKS / script), *args], capture_output=True, text=True,
                            cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    for text in expected:
        assert text in result.stdout, f"{text!r} missing from the output of {script}:\n{result.stdout[-3000:]}"


#: Clock reads that belong in ``benchmarks/_timing.py`` only.
_CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "time", "process_time"}


@pytest.mark.parametrize("script", sorted(CASES))
def test_benchmark_times_with_benchmarks_timing(script):
    tree = ast.parse((BENCHMARKS / script).read_text())
    imports = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "_timing" in imports, f"{script} does not time with benchmarks/_timing.py"
    clocks = [f"line {node.lineno}" for node in ast.walk(tree) if isinstance(node, ast.Call)
              and isinstance(node.func, ast.Attribute) and node.func.attr in _CLOCKS
              and isinstance(node.func.value, ast.Name) and node.func.value.id == "time"]  # fmt: skip
    assert not clocks, f"{script} reads the clock itself ({', '.join(clocks)}); use _timing.timed"
    own = [node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and "timed" in node.name]
    assert not own, f"{script} defines its own timing function {own}; use _timing.timed"
