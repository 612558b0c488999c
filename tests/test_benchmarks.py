"""The benchmark scripts run end to end on tiny problems (their figures come from full runs, not from here)."""

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
    "bench_out_of_core.py": (["--n", "1500", "--d", "4", "--n-test", "100", "--memory-limit", "1GB"],
                             ["same support vectors: True"]),
}


@pytest.mark.parametrize("script", sorted(CASES))
def test_benchmark_runs(script, tmp_path):
    args, expected = CASES[script]
    result = subprocess.run([sys.executable, str(BENCHMARKS / script), *args], capture_output=True, text=True,
                            cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    for text in expected:
        assert text in result.stdout, f"{text!r} missing from the output of {script}:\n{result.stdout[-3000:]}"
