"""bench/checks_alone.py, the benchmark's lower bound, grades like the kit: the reference's own
notebook gets full marks with the worker in the benchmark's process, and the time is real."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the benchmark's grading, timed

ROOT = Path(__file__).resolve().parent.parent


def test_checks_alone_grades_the_reference_with_full_marks_and_times_it():
    notebook = ROOT / "examples" / "submissions" / "andi" / "attention" / "attention.ipynb"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "checks_alone.py"), "attention",
                           str(notebook), "--repeat", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["cpu_ms"] > 0


def test_checks_alone_refuses_a_notebook_that_is_not_correct(tmp_path):
    notebook = ROOT / "examples" / "submissions" / "andi" / "attention" / "attention.ipynb"
    broken = json.loads(notebook.read_text())
    for cell in broken["cells"]:
        if cell["cell_type"] == "code":
            cell["source"] = "".join(cell["source"]).replace("math.sqrt(d_k)", "1.0")
    path = tmp_path / "budi" / "attention" / "attention.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(broken))
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "checks_alone.py"), "attention",
                           str(path), "--repeat", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "not graded as correct" in done.stderr


def test_the_scale_run_reads_the_slope_and_the_memory_of_each_quarter():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from cold_and_scale import quarters
    finally:
        sys.path.remove(str(ROOT / "bench"))
    # 8 submissions: 2 s of start-up, then 0.5 s each, the last quarter 1 s each; RSS grows once
    progress = [(2.0, 1), (2.5, 2), (3.0, 3), (3.5, 4), (4.0, 5), (4.5, 6), (5.5, 7), (6.5, 8)]
    samples = [(0, 100.0), (2, 120.0), (4, 120.0), (6, 120.0), (8, 180.0)]
    rows = quarters(progress, samples, 8)
    assert [q for q, _, _ in rows] == [1, 2, 3, 4]
    assert [round(s, 3) for _, s, _ in rows] == [1.25, 0.5, 0.5, 1.0]
    assert [r for _, _, r in rows] == [120.0, 120.0, 120.0, 180.0]
