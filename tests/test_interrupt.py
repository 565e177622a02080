"""Ctrl-C on `autograder grade`: the command ends within seconds (not at the time-outs of the
checks still running), keeps every report it finished, whole, leaves no half-written file and
no sandbox process, and a rerun resumes from the kept reports."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import EXAMPLES, ROOT, course_with

pytestmark = pytest.mark.slow  # a class graded and interrupted

HOSTILE = Path(__file__).parent / "hostile"
CORRECT = EXAMPLES / "andi" / "attention" / "attention.ipynb"
REQUEST_TIMEOUT = 120  # the looping student holds its worker this long per request
EXIT_WITHIN = 5
UID_FIRST = 61000


def _processes():
    """{pid: (parent pid, uid, start time)} of every live process (zombies have ended)."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            fields = text[text.rindex(")") + 2:].split()
            uid = int(next(line for line in (stat.parent / "status").read_text().splitlines()
                           if line.startswith("Uid:")).split()[1])
        except (OSError, ValueError, IndexError, StopIteration):
            continue
        if fields[0] not in "ZX":
            found[int(stat.parent.name)] = (int(fields[1]), uid, int(fields[19]))
    return found


def _descendants(root, processes):
    """Every process below ``root`` (the zygote, the workers and whatever they started)."""
    below, todo = {}, [root]
    while todo:
        parent = todo.pop()
        for pid, info in processes.items():
            if info[0] == parent and pid not in below:
                below[pid] = info
                todo.append(pid)
    return below


@pytest.fixture
def classroom(tmp_path):
    """A class folder: one student whose code loops forever in every function (graded first),
    four correct ones; and a course whose request time-out is long (Ctrl-C must not wait it)."""
    submitted = tmp_path / "submitted"
    loop = submitted / "aaa-loop" / "attention"
    loop.mkdir(parents=True)
    shutil.copy(HOSTILE / "loop_in_forward.py", loop / "attention.py")
    for name in ("budi", "citra", "dewi", "eka"):
        folder = submitted / name / "attention"
        folder.mkdir(parents=True)
        shutil.copy(CORRECT, folder / "attention.ipynb")
    course_with(tmp_path, request_timeout=REQUEST_TIMEOUT, submission_timeout=600)
    return submitted, tmp_path / "course.toml", tmp_path / "reports"


# A terminal starts its foreground job with Ctrl-C at its default action, but a test run started
# in the background (``pytest &``, a CI runner's job) ignores SIGINT, and its children inherit
# that: Python then never raises KeyboardInterrupt. The grader is started as the terminal would.
AS_A_FOREGROUND_JOB = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                       "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])")


def _grade(submitted, course, out, *more):
    return [sys.executable, "-m", "autograder", "grade", str(submitted), "-a", "attention",
            "-o", str(out), "--course", str(course), *more]


def test_ctrl_c_stops_within_seconds_and_keeps_every_finished_report(classroom):
    submitted, course, out = classroom
    # Its own session, as a shell's job: the terminal's Ctrl-C goes to the process group.
    command = _grade(submitted, course, out, "--jobs", "2")
    grader = subprocess.Popen([sys.executable, "-c", AS_A_FOREGROUND_JOB, *command[1:]], cwd=ROOT,
                              env={**os.environ, "PYTHONUTF8": "1"}, start_new_session=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and grader.poll() is None:
            if list(out.glob("*/record.json")):
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"no report was ever written (exit code {grader.poll()})")
        sandbox = _descendants(grader.pid, _processes())
        assert sandbox, "no zygote or worker below the grader"
        uids = {uid for _, uid, _ in sandbox.values() if uid >= UID_FIRST}
        os.killpg(grader.pid, signal.SIGINT)
        interrupted = time.monotonic()
        try:
            stdout, stderr = grader.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("the grader was still running 60 s after Ctrl-C")
        took = time.monotonic() - interrupted
    finally:
        if grader.poll() is None:
            os.killpg(grader.pid, signal.SIGKILL)
            grader.wait()

    assert took < EXIT_WITHIN, f"Ctrl-C took {took:.1f} s to stop the batch"
    assert grader.returncode == 130, stderr
    assert "autograder: interrupted" in stderr.splitlines()[-1], stderr
    assert "Traceback" not in stderr, stderr

    # Every finished student's report is whole; the looping one was never written.
    finished = sorted(p.parent.name for p in out.glob("*/record.json"))
    assert finished and "aaa-loop" not in finished
    for name in finished:
        folder = out / name
        record = json.loads((folder / "record.json").read_text(encoding="utf-8"))
        assert record["student"] == name
        assert json.loads((folder / "results.json").read_text(encoding="utf-8"))["tests"]
        assert (folder / "feedback.md").read_text(encoding="utf-8").strip()
        assert (folder / "feedback.html").read_text(encoding="utf-8").rstrip().endswith("</html>")
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")], "a half-written file is left"
    assert f"the reports of the {len(finished)} student(s)" in stderr.splitlines()[-1]

    # No zygote, worker or process they started is left (by pid and start time, and by uid).
    deadline = time.monotonic() + 2
    while True:
        now = _processes()
        left = {pid: info for pid, info in sandbox.items() if now.get(pid, (0, 0, -1))[2] == info[2]}
        left.update({pid: info for pid, info in now.items() if info[1] in uids})
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert left == {}, f"sandbox processes outlived the interrupted grader: {left}"

    # A rerun keeps them: nothing of theirs is graded again (unless the kit itself was edited
    # in the meantime, the one reason a developer's rerun may give).
    again = subprocess.run(_grade(submitted, course, out, *(a for n in finished for a in ("--student", n))),
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert (f"{len(finished)} report(s) in {out} are up to date; grading the other 0" in again.stderr
            or "the autograder changed: " in again.stderr), again.stderr
