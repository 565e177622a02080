"""bench/checks_alone.py, the benchmark's lower bound, grades like the kit: the reference's own
notebook gets full marks with the worker in the benchmark's process, and the time is real; and
the other helpers of the benchmark (the floor, the scale run, the bytecode, the baseline)."""

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


def test_the_floor_grades_with_grading_processes_and_refuses_a_submission_short_of_full_marks(tmp_path):
    """bench/floor.py times an already started grader's grading processes; a notebook that does
    not get full marks (here, the scaling left out) makes it exit with that student's score."""
    notebook = ROOT / "examples" / "submissions" / "andi" / "attention" / "attention.ipynb"
    for student in ("s1", "s2"):
        (tmp_path / student / "attention").mkdir(parents=True)
        (tmp_path / student / "attention" / "attention.ipynb").write_text(notebook.read_text())
    command = [sys.executable, str(ROOT / "bench" / "floor.py"), "attention", str(tmp_path), "--jobs", "2"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["graded"] == 2 and found["seconds"] > 0
    broken = tmp_path / "s2" / "attention" / "attention.ipynb"
    broken.write_text(broken.read_text().replace("math.sqrt(d_k)", "1.0"))
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "s2 " in done.stderr and "s1 " not in done.stderr


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


def test_the_bench_compiles_the_bytecode_of_the_kit_that_the_timed_commands_import(tmp_path):
    """As scripts/setup.sh does after installing: the kit found on PYTHONPATH (as the timed
    commands find it), not a copy in the working directory, even under PYTHONDONTWRITEBYTECODE."""
    import importlib.util
    import os

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from cold_and_scale import compile_kit
    finally:
        sys.path.remove(str(ROOT / "bench"))
    kit, elsewhere = tmp_path / "kit", tmp_path / "cwd"
    for folder in (kit, elsewhere):
        for package in ("autograder", "solutions"):
            (folder / package).mkdir(parents=True)
            (folder / package / "__init__.py").write_text("")
            (folder / package / "module.py").write_text("VALUE = 1\n")
    env = {**os.environ, "PYTHONPATH": str(kit), "PYTHONDONTWRITEBYTECODE": "1"}
    assert compile_kit(env, elsewhere) == [str(kit / "autograder"), str(kit / "solutions")]
    for folder, compiled in ((kit, True), (elsewhere, False)):
        for package in ("autograder", "solutions"):
            for name in ("__init__.py", "module.py"):
                cached = Path(importlib.util.cache_from_source(str(folder / package / name)))
                assert cached.is_file() == compiled, cached


def test_the_plain_baseline_passes_the_reference_and_each_bug_is_in_its_notebook():
    """The baseline's hidden cells (plain asserts) pass on the reference solution, and every bug
    of --mix replaces text that the assignment's solution cells hold: otherwise the bench would
    stop midway (an insane baseline) after minutes of nbgrader."""
    import json
    import math

    import torch
    import torch.nn.functional as F

    import solutions
    import solutions.transformer
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from batch_vs_nbgrader import ASSIGNMENTS, BUGS, LOOP_AT, TRAINING_CELLS
        from plain_asserts import PLAIN_TESTS
    finally:
        sys.path.remove(str(ROOT / "bench"))

    names = {**vars(solutions), **vars(solutions.transformer), "math": math, "torch": torch, "F": F,
             "LENGTH": 8}
    assert set(PLAIN_TESTS) == set(ASSIGNMENTS) == set(BUGS) == set(LOOP_AT)
    for assignment in ASSIGNMENTS:
        notebook = json.loads((ROOT / "assignments" / "source" / assignment / f"{assignment}.ipynb").read_text())
        cells = {cell["metadata"].get("nbgrader", {}).get("grade_id"): "".join(cell["source"])
                 for cell in notebook["cells"]}
        solved = "".join(code for grade_id, code in cells.items() if grade_id and grade_id.startswith("solution"))
        for grade_id, source in PLAIN_TESTS[assignment].items():
            assert grade_id in cells, (assignment, grade_id)
            exec(source, dict(names))
        for name, old, _ in BUGS[assignment]:
            assert old in solved, (assignment, name)
        assert LOOP_AT[assignment] in solved, assignment
        assert set(TRAINING_CELLS.get(assignment, ())) <= set(cells), assignment


def test_the_transformer_without_training_starts_its_zygote_before_importing_torch(tmp_path):
    """``bench/without_training.py`` is the CLI with ``train.outcome`` left out: its cold run
    must start like the autograder script's, the sandbox's zygote first (before, the wrapper
    imported the plan, and torch with it, before the command could start the zygote)."""
    notebook = ROOT / "examples" / "submissions" / "andi" / "transformer" / "transformer.ipynb"
    probe = f"""
import json, sys
sys.path.insert(0, {str(ROOT / "bench")!r})
import without_training
from autograder import cli
from autograder.sandbox import launch
torch_already = []
start_early = launch.start_early
def start_recording(*args, **kwargs):
    torch_already.append("torch" in sys.modules)
    return start_early(*args, **kwargs)
launch.start_early = start_recording
cli.grade_command = without_training._grade_without_training(cli.grade_command)
status = cli.main(["grade", {str(notebook)!r}, "--assignment", "transformer", "--out", {str(tmp_path)!r},
                   "--jobs", "1"])
print(json.dumps({{"status": status, "torch_already": torch_already}}))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"status": 0, "torch_already": [False]}
    results = json.loads(next(tmp_path.glob("*/results.json")).read_text())
    checks = {test["extra_data"]["check"] for test in results["tests"]}
    assert "train.outcome" not in checks and "shift.present" in checks
    assert results["score"] == results["max_score"] > 0
