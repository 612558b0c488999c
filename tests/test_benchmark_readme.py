"""benchmarks/README.md is generated from the benchmark scripts and their records, and shows all they hold."""

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _generator():
    spec = importlib.util.spec_from_file_location("benchmarks_readme", BENCHMARKS / "_readme.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


readme = _generator()


def _tokens(text):
    return set(text.replace("\\|", "|").split())


def test_benchmark_readme_is_what_the_scripts_and_records_give():
    assert (BENCHMARKS / "README.md").read_text() == readme.render(BENCHMARKS), (
        "benchmarks/README.md is not generated from the current records and scripts: "
        "run `python benchmarks/_readme.py` and commit the result")


def test_every_recorded_figure_appears_in_the_benchmark_readme():
    text = (BENCHMARKS / "README.md").read_text()
    shown = _tokens(text)
    for record in sorted((BENCHMARKS / "results").glob("*.txt")):
        for line in record.read_text().splitlines():
            if line.startswith("# commit "):
                sha = line.split()[2]
                assert sha[:10] in text, f"{record.name}: commit {sha[:10]} is not named"
                continue
            missing = _tokens(line.removeprefix("# ")) - shown
            assert not missing, f"{record.name}: {sorted(missing)} of {line!r} are not in benchmarks/README.md"


def test_check_fails_on_a_stale_readme_and_passes_once_written(tmp_path):
    for script in BENCHMARKS.glob("bench_*.py"):
        shutil.copy(script, tmp_path)
    shutil.copytree(BENCHMARKS / "results", tmp_path / "results")
    (tmp_path / "README.md").write_text("# Benchmarks\n\nan old page\n")
    command = [sys.executable, str(BENCHMARKS / "_readme.py"), "--dir", str(tmp_path)]

    stale = subprocess.run([*command, "--check"], check=False, capture_output=True, text=True, timeout=60)
    assert stale.returncode == 1
    assert "python benchmarks/_readme.py" in stale.stderr
    assert (tmp_path / "README.md").read_text() == "# Benchmarks\n\nan old page\n"   # --check writes nothing

    assert subprocess.run(command, check=False, timeout=60).returncode == 0
    assert subprocess.run([*command, "--check"], check=False, timeout=60).returncode == 0
    (tmp_path / "results" / "bench_svm.txt").write_text("# commit abc  2026-01-01  python benchmarks/bench_svm.py\n")
    assert subprocess.run([*command, "--check"], check=False, capture_output=True, timeout=60).returncode == 1


def test_a_record_without_a_run_header_is_shown_verbatim():
    record = "figures from somewhere\n  n   seconds   ratio\n  500    1.25    0.50\n{\"odd\": [1, 2]}\n"
    shown = readme.render_record("bench_other.txt", record)
    assert "```\n" + record.rstrip("\n") + "\n```" in shown


def test_an_unknown_record_gets_its_own_section_beside_the_scripts(tmp_path):
    shutil.copy(BENCHMARKS / "bench_svm.py", tmp_path)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "notes.txt").write_text("## not a benchmark's output\n|a|b|\n")
    page = readme.render(tmp_path)
    assert "## `notes.txt`" in page and "## not a benchmark's output\n|a|b|" in page
    assert "No recorded run: run `python benchmarks/bench_svm.py`" in page


def test_run_header_gives_command_commit_machine_and_versions():
    record = ("# commit 0123456789abcdef0123456789abcdef01234567  2026-11-26  python benchmarks/bench_x.py --n 5\n"
              "# 2 CPUs, python 3.11.7, load average before: 1.08\n"
              "python 3.11.7, numpy 2.4.6, zarr 3.1.6\n"
              "a result: 1.5 s\n")
    shown = readme.render_record("bench_x.txt", record)
    assert "- command: `python benchmarks/bench_x.py --n 5`" in shown
    assert "- commit: 0123456789, 2026-11-26" in shown
    assert "- machine: 2 CPUs, python 3.11.7, load average before: 1.08" in shown
    assert "- versions: python 3.11.7, numpy 2.4.6, zarr 3.1.6" in shown
    assert "```\na result: 1.5 s\n```" in shown


def test_fixed_width_table_becomes_a_markdown_table_with_the_same_cells():
    lines = [
        "## small problems",
        "problem               estimator      seconds  acc dk same pred  fit ratio",
        "iris (150 x 4)        dkernel.SVC     1.25 s  1.0000    1.0000           ",
        "iris (150 x 4)        sklearn.SVC    15.3 ms  0.9000    1.0000       0.08",
        "usps (7291 x 256)     skipped: usps data not found; set DKERNEL_DATA",
        "digits 3 vs 8         dkernel.SVC     0.20 s  0.9907              ",
        "ratio dkernel / sklearn:  0.08   (target <= 1.0)",
    ]
    header = "| problem | estimator | seconds | acc dk | same pred | fit ratio |\n| --- | --- | ---: | ---: | ---: | ---: |"
    assert readme.render_output(lines).split("\n\n") == [
        "#### small problems",
        header + "\n| iris (150 x 4) | dkernel.SVC | 1.25 s | 1.0000 | 1.0000 |  |"
                 "\n| iris (150 x 4) | sklearn.SVC | 15.3 ms | 0.9000 | 1.0000 | 0.08 |",
        "```\nusps (7291 x 256)     skipped: usps data not found; set DKERNEL_DATA\n```",
        header + "\n| digits 3 vs 8 | dkernel.SVC | 0.20 s | 0.9907 |  |  |",
        "```\nratio dkernel / sklearn:  0.08   (target <= 1.0)\n```",
    ]


def test_aligned_lines_without_a_header_stay_as_recorded():
    lines = ["read every chunk          1.67 s      540.4 M entries/s",
             "exact alignment           2.04 s      441.7 M entries/s   A = 0.137141"]
    assert readme.render_output(lines) == "```\n" + "\n".join(lines) + "\n```"


_FRESH_RECORD = """\
# commit 0123456789abcdef0123456789abcdef01234567  2026-11-26  python benchmarks/bench_matrix.py
# 2 CPUs (AMD EPYC), 24 GiB memory, Linux 6.1, python 3.11.7, load average before: 0.10
python 3.11.7, numpy 2.4.6, dkernel 0.1.0, scikit-learn 1.9.1, scikit-learn-intelex 2026.2.0

## tiny sets, RBF gamma='scale', C=1: fit, one per fresh process (median of 5 rounds, alternating)
problem                                  n     dkernel     sklearn         oneDAL   dk/sk  dk/oneDAL
iris (150 x 4, 3 classes)              105    12.50 ms     2.50 ms  not installed    5.00
wdbc (569 x 30)                        398    20.00 ms    10.00 ms  not installed    2.00

## synthetic, make_classification, RBF gamma='scale', C=1: fit, one per fresh process (median of 3 rounds, alternating)
problem                                  n     dkernel     sklearn         oneDAL   dk/sk  dk/oneDAL
n=12000 apart d=10 dense             12000   200.00 ms   400.00 ms      300.00 ms    0.50       0.67
n=12000 noisy d=64 dense             12000      2.00 s      8.00 s         3.00 s    0.25       0.67
n=40000 noisy d=64 dense             40000     10.00 s   ~200.00 s        20.00 s*  ~0.05       0.50

## targets: how many problems meet each, and the worst
target                                                         problems   met  worst
tiny: a dkernel fit <= 50 ms (seconds)                                2     2  0.02 (wdbc (569 x 30))
"""


def test_summary_shows_each_problem_and_the_synthetic_problems_of_each_size_as_ranges(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "bench_matrix.txt").write_text(_FRESH_RECORD)
    lines = readme.fresh_summary(tmp_path).splitlines()
    assert "| problem | dkernel | sklearn | oneDAL | dkernel / sklearn | dkernel / oneDAL |" in lines
    assert "| iris (150 x 4, 3 classes) | 12.50 ms | 2.50 ms | not installed | 5.00 |  |" in lines
    assert ("| synthetic, n = 12000 (2 problems) | 200.00 ms – 2.00 s | 400.00 ms – 8.00 s | 300.00 ms – 3.00 s | "
            "0.25 – 0.50 | 0.67 |") in lines
    assert "| synthetic, n = 40000 | 10.00 s | ~200.00 s | 20.00 s* | ~0.05 | 0.50 |" in lines
    assert any(line.startswith("\\*: fitted once") for line in lines)
    assert "| tiny: a dkernel fit <= 50 ms (seconds) | 2 | 2 | 0.02 (wdbc (569 x 30)) |" in lines
    assert "0123456789" in lines[0] and "2 CPUs (AMD EPYC)" in lines[0]


def test_summary_says_so_when_no_fresh_process_fit_is_recorded(tmp_path):
    (tmp_path / "results").mkdir()
    assert "No fresh-process fit is recorded" in readme.fresh_summary(tmp_path)
    (tmp_path / "results" / "bench_matrix.txt").write_text(
        "# commit abc  2026-01-01  python benchmarks/bench_matrix.py\n## tiny (in one process)\n"
        "problem   dkernel   sklearn   ratio\niris      4.75 ms   2.56 ms    1.85\n")
    assert "No fresh-process fit is recorded" in readme.fresh_summary(tmp_path)


def test_summary_option_prints_the_summary_of_the_page(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "bench_matrix.txt").write_text(_FRESH_RECORD)
    printed = subprocess.run([sys.executable, str(BENCHMARKS / "_readme.py"), "--dir", str(tmp_path), "--summary"],
                             check=True, capture_output=True, text=True, timeout=60).stdout
    assert printed.strip() == readme.fresh_summary(tmp_path)
    assert printed.strip() in readme.render(tmp_path)
    assert not (tmp_path / "README.md").exists()


def test_summary_of_a_record_of_several_runs_gives_one_table_per_run_under_its_command(tmp_path):
    (tmp_path / "results").mkdir()
    second = _FRESH_RECORD.replace("0123456789", "abcdef0123", 1).replace("load average before: 0.10",
                                                                          "load average before: 2.40")
    (tmp_path / "results" / "bench_matrix.txt").write_text(_FRESH_RECORD + "\n" + second)
    summary = readme.fresh_summary(tmp_path)
    assert "one table per run" in summary.splitlines()[0]
    assert summary.count("| problem | dkernel | sklearn | oneDAL |") == 2
    first_run, second_run = summary.split("`python benchmarks/bench_matrix.py")[1:3]
    assert "0123456789" in first_run and "load average before: 0.10" in first_run
    assert "abcdef0123" in second_run and "load average before: 2.40" in second_run
