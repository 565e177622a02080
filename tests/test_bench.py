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
