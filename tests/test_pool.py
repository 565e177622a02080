"""`--jobs N` grades in N processes forked from the grader (autograder.pool): the same records
as grading in the grader itself, and a grading process that dies costs only the submissions it
held (grader errors); the batch still writes every other report and the class files."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import EXAMPLES, ROOT

pytestmark = pytest.mark.slow  # batches in grading processes

CORRECT = EXAMPLES / "andi" / "attention" / "attention.ipynb"


def _grade(paths, out, *more):
    return [sys.executable, "-m", "autograder", "grade", *map(str, paths), "-a", "attention",
            "-o", str(out), *more]


def _verdicts(out):
    """student -> what record.json says of them, but for how long it took."""
    found = {}
    for path in sorted(Path(out).glob("*/record.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        del record["execution_time"]
        found[record["student"]] = record
    return found


def test_grading_processes_give_the_same_records_as_the_grader_itself(tmp_path):
    runs = {}
    for jobs in ("1", "2"):
        done = subprocess.run(_grade([EXAMPLES], tmp_path / jobs, "--jobs", jobs), cwd=ROOT,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        runs[jobs] = _verdicts(tmp_path / jobs)
    assert runs["1"] and runs["1"] == runs["2"]
    summary = json.loads((tmp_path / "2" / "summary.json").read_text(encoding="utf-8"))
    assert summary["timing"]["jobs"] == 2


def _children(pid):
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            if int(text[text.rindex(")") + 2:].split()[1]) == pid:
                found[int(stat.parent.name)] = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
    return found


def test_a_grading_process_that_dies_costs_only_the_submissions_it_held(tmp_path):
    submitted = tmp_path / "submitted"
    students = [f"s{n}" for n in range(6)]
    # Each submission takes a second to load (still correct): the two a grading process holds
    # cannot both be graded between the moment it is seen and the kill, however fast grading is.
    notebook = json.loads(CORRECT.read_text(encoding="utf-8"))
    cell = next(c for c in notebook["cells"] if c["metadata"].get("nbgrader", {}).get("solution"))
    cell["source"] = "import time\ntime.sleep(1)\n" + "".join(cell["source"])
    for student in students:
        folder = submitted / student / "attention"
        folder.mkdir(parents=True)
        (folder / "attention.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    out = tmp_path / "out"
    grader = subprocess.Popen(_grade([submitted], out, "--jobs", "2"), cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        own = Path(f"/proc/{grader.pid}/cmdline")
        deadline = time.monotonic() + 60
        grading = []
        while time.monotonic() < deadline and grader.poll() is None and len(grading) < 2:
            command = own.read_bytes()
            grading = [pid for pid, cmd in _children(grader.pid).items() if cmd == command]
            time.sleep(0.02)
        assert len(grading) == 2, "no two grading processes were forked"
        assert not list(out.glob("*/record.json"))  # nothing graded yet: each holds two students
        os.kill(grading[0], signal.SIGKILL)
        stdout, stderr = grader.communicate(timeout=600)
    finally:
        if grader.poll() is None:
            grader.kill()
    assert grader.returncode == 3, stderr  # grader errors: exit 3
    assert "the grading process ended unexpectedly" in stderr
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    statuses = {s["student"]: s["status"] for s in summary["students"]}
    assert sorted(statuses) == students
    assert sorted(statuses.values()) == ["full"] * 4 + ["grader_error"] * 2
    assert (out / "gradebook.csv").is_file()
    assert all((out / s / "feedback.md").is_file() for s in students)
