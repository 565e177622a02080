"""`--jobs N` grades in N processes forked from the grader (autograder.pool): the same records
as grading in the grader itself, and a grading process that dies costs only the submissions it
held (grader errors); the batch still writes every other report and the class files."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
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


TIMES = {"execution_time", "timing", "time"}  # how long it took: the only thing that may differ


def _without_times(data):
    if isinstance(data, dict):
        return {k: None if k in TIMES else _without_times(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_without_times(v) for v in data]
    return data


def _files(out):
    """Every file a batch wrote: relative path -> its content, the times taken out (JSON's
    timing fields; report.html's per-student time column and its timing table)."""
    found = {}
    for path in sorted(p for p in Path(out).rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            text = _without_times(json.loads(text))
        elif path.name == "report.html":
            text = re.sub(r'<td class="num">\d+\.\d\d</td></tr>', "", text)
            text = re.sub(r'(?s)<table id="timing">.*?</table>', "", text)
        found[str(path.relative_to(out))] = text
    return found


def test_grading_processes_give_the_same_records_as_the_grader_itself(tmp_path):
    """Every file, not only the records: with --jobs 2 the grading processes render the
    reports and the grader keeps slim records (reports.kept); with --jobs 1 the grader does
    it all itself. The examples hold a broken notebook and a partial one."""
    runs, outputs = {}, {}
    for jobs in ("1", "2"):
        done = subprocess.run(_grade([EXAMPLES], tmp_path / jobs, "--jobs", jobs, "--junit",
                                     tmp_path / f"junit-{jobs}.xml"), cwd=ROOT,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        runs[jobs] = _verdicts(tmp_path / jobs)
        outputs[jobs] = (_files(tmp_path / jobs), done.stdout.replace(str(tmp_path / jobs), "OUT"))
        # JUnit shows each failed check's whole text, as results.json does: made from the
        # whole records, not from what the batch kept for the class files.
        failures = {(case.get("classname"), case.get("name")): failure.text
                    for case in ET.parse(tmp_path / f"junit-{jobs}.xml").iter("testcase")
                    for failure in case.iter("failure")}
        written = {(f"attention.{path.parent.name}", test["name"]): test["output"]
                   for path in (tmp_path / jobs).glob("*/results.json")
                   for test in json.loads(path.read_text(encoding="utf-8"))["tests"]
                   if test["extra_data"]["outcome"] in ("failed", "timeout")}
        assert written and failures == written
    assert runs["1"] and runs["1"] == runs["2"]
    files, stdout = outputs["2"]
    assert {"summary.json", "report.html", "gradebook.csv", "andi/feedback.html"} <= set(files)
    assert outputs["1"] == outputs["2"]
    summary = json.loads((tmp_path / "2" / "summary.json").read_text(encoding="utf-8"))
    assert summary["timing"]["jobs"] == 2
    assert {s["status"] for s in summary["students"]} >= {"full", "partial", "not_graded"}


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
    # Each submission takes a second to load (still correct): the first a grading process holds
    # cannot be graded between the moment a sandbox worker is seen (its submission is loading)
    # and the kill, however fast grading is. The pause is a default argument, evaluated when
    # the definition loads: the loader drops a bare ``time.sleep(1)`` at the top level (demo
    # code never runs), and then nothing waits.
    notebook = json.loads(CORRECT.read_text(encoding="utf-8"))
    cell = next(c for c in notebook["cells"] if c["metadata"].get("nbgrader", {}).get("solution"))
    cell["source"] = ("import time\n\n\ndef _load_slowly(pause=time.sleep(1)):\n    pass\n\n\n"
                      + "".join(cell["source"]))
    for student in students:
        folder = submitted / student / "attention"
        folder.mkdir(parents=True)
        (folder / "attention.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    out = tmp_path / "out"
    grader = subprocess.Popen(_grade([submitted], out, "--jobs", "2"), cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        own = Path(f"/proc/{grader.pid}/cmdline")
        deadline = time.monotonic() + 120
        grading, workers = [], []
        # The grading processes are forked long before the batch sends them anything: one
        # killed then held nothing (the other grades all six: exit 0). The grader sends each its
        # two submissions at once, before either asks the zygote for a worker, so a worker seen
        # means both hold theirs. But the zygote's own isolation probes are children of it too,
        # one at a time and all before its first worker, and one may live just when the pool has
        # been forked and has not been sent anything yet (CI saw that: exit 0). Two children at
        # once are not both probes: at least one is a worker. Both grading processes' first
        # workers load for a second side by side, so two are seen.
        while time.monotonic() < deadline and grader.poll() is None and not (len(grading) == 2 and len(workers) >= 2):
            command = own.read_bytes()
            children = _children(grader.pid)
            grading = [pid for pid, cmd in children.items() if cmd == command]
            workers = [pid for zygote, cmd in children.items() if b"zygote" in cmd for pid in _children(zygote)]
            time.sleep(0.02)
        assert len(grading) == 2, "no two grading processes were forked"
        assert len(workers) >= 2, "no two sandbox workers were seen at once"
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
    # The pause was loaded and ran: nothing was dropped, and each graded one took the second.
    graded = [s for s in summary["students"] if s["status"] == "full"]
    assert all(not s["problems"] and s["execution_time"] >= 1.0 for s in graded), graded
