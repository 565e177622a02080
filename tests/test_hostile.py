"""Hostile submissions, graded in one batch with a correct one: no undeserved points, no
crash, no hang past the limits, nothing written or reached outside the worker."""

import inspect
import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

import solutions.attention
from autograder import config
from autograder.grading import grade
from conftest import course_with
from autograder.loader import Submission
from autograder.sandbox.process import shared_zygote

HOSTILE = sorted((Path(__file__).parent / "hostile").glob("*.py"))
FORGED_NAMES = ("results.json", "gradebook.csv", "summary.json", "FORGED_BY_STUDENT")
LISTENING_PORT = 47321
CHECK_TIMEOUT, SUBMISSION_TIMEOUT = 2, 20


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return course_with(tmp_path_factory.mktemp("course"), check_timeout=CHECK_TIMEOUT,
                       submission_timeout=SUBMISSION_TIMEOUT, startup_timeout=10, max_restarts=2)


def places_a_forger_would_write():
    here = Path.cwd()
    return {here, here.parent, here.parent.parent, Path("/tmp"), Path.home(), Path(__file__).parent,
            Path(__file__).parent / "hostile", Path(config.DEFAULT_PATH).parent}


def sandbox_processes():
    first = shared_zygote().uid_base
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            uid = int(next(l for l in status.read_text().splitlines() if l.startswith("Uid:")).split()[1])
        except (OSError, StopIteration, ValueError):
            continue
        if first <= uid < first + 64:
            found.append(status.parent.name)
    return found


@pytest.fixture(scope="module")
def batch(course, tmp_path_factory):
    """Grade every hostile file, then the reference, in one process (one zygote)."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", LISTENING_PORT))
    listener.listen()
    listener.settimeout(0.2)
    contacts = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                contacts.append(listener.accept())
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    before = {p: set(os.listdir(p)) for p in places_a_forger_would_write() if p.is_dir()}
    results, times = {}, {}
    submissions = [(path.stem, path) for path in HOSTILE]
    correct = tmp_path_factory.mktemp("correct") / "correct.py"
    correct.write_text(Path(inspect.getfile(solutions.attention)).read_text())
    submissions.append(("correct", correct))
    for name, path in submissions:
        started = time.monotonic()
        results[name] = grade(Submission(name, "attention", path), course)
        times[name] = time.monotonic() - started
    stop.set()
    thread.join()
    listener.close()
    after = {p: set(os.listdir(p)) for p in before}
    return {"results": results, "times": times, "contacts": contacts,
            "new_files": {p: after[p] - before[p] for p in before}}


@pytest.mark.parametrize("name", [p.stem for p in HOSTILE])
def test_no_undeserved_points_and_no_hang(batch, name):
    result = batch["results"][name]
    earned = [o.check.id for o in result.outcomes if o.score > 0 and not o.check.id.endswith(".present")]
    assert earned == [], f"{name} earned points on {earned}"
    assert not result.grader_errors, [o.message for o in result.grader_errors]
    assert batch["times"][name] < SUBMISSION_TIMEOUT + 15 + CHECK_TIMEOUT * 3


def test_the_correct_submission_in_the_same_batch_gets_full_marks(batch):
    result = batch["results"]["correct"]
    assert result.score == result.max_score, [(o.check.id, o.message) for o in result.outcomes
                                             if o.status != "passed"]


def test_the_reference_was_never_reached(batch):
    # steal_reference hands in the reference's answers if it can import or find it.
    result = batch["results"]["steal_reference"]
    assert [o.check.id for o in result.outcomes if o.status == "passed"] == ["sdpa.present", "causal.present",
                                                                             "mha.present"]


def test_nothing_was_written_outside_the_sandbox(batch):
    forged = {str(p): sorted(n for n in names if n in FORGED_NAMES)
              for p, names in batch["new_files"].items()}
    assert all(not names for names in forged.values()), forged


def test_no_connection_reached_the_host(batch):
    assert batch["contacts"] == []


def test_no_process_outlives_its_worker(batch):
    deadline = time.monotonic() + 5
    while sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert sandbox_processes() == []


def test_failures_are_explained(batch):
    results = batch["results"]
    loop = {o.check.id: o for o in results["loop_in_forward"].outcomes}
    assert "Time limit" in loop["sdpa.shape"].message["en"]
    crash = {o.check.id: o for o in results["segfault"].outcomes}
    assert "stopped abruptly" in crash["sdpa.shape"].message["en"]
    hang = {o.check.id: o for o in results["loop_at_import"].outcomes}
    assert "Loading your code exceeded the time limit" in hang["sdpa.present"].message["en"]


SPY = '''
import glob, os
import torch
import torch.nn as nn

def _copy_classmate():
    """Find another student's notebook (or a report) and run its code cells."""
    import json
    for pattern in ("../*/*/*.ipynb", "/opt/**/*.ipynb", "/srv/**/*.ipynb", "/mnt/**/*.ipynb"):
        for path in glob.glob(pattern, recursive=True):
            if "spy" in path:
                continue
            namespace = {}
            try:
                for cell in json.load(open(path))["cells"]:
                    if cell["cell_type"] == "code":
                        exec("".join(cell["source"]), namespace)
                return namespace
            except Exception:
                continue
    return None

def scaled_dot_product_attention(q, k, v, mask=None):
    found = _copy_classmate()
    if found:
        return found["scaled_dot_product_attention"](q, k, v, mask)
    return torch.zeros(*q.shape[:-1], v.shape[-1]), torch.zeros(*q.shape[:-1], k.shape[-2])
'''


@pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and a separate uid need root")
def test_other_students_and_the_output_folder_are_invisible(tmp_path):
    """A class folder outside the kit and /tmp: a worker must see neither a classmate's
    notebook nor the reports."""
    import shutil
    import subprocess
    import sys
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="autograder-class-", dir="/opt"))
    try:
        examples = Path(__file__).resolve().parent.parent / "examples" / "submissions"
        shutil.copytree(examples / "andi", root / "submitted" / "andi")
        spy = root / "submitted" / "spy" / "attention"
        spy.mkdir(parents=True)
        (spy / "attention.py").write_text(SPY)
        for path in [root, *root.rglob("*")]:  # a class folder anyone on the machine may read
            path.chmod(0o755 if path.is_dir() else 0o644)
        done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(root / "submitted"),
                               "-a", "attention", "-o", str(root / "reports")],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "Points 43/43 andi" in done.stdout
        report = json.loads((root / "reports" / "spy" / "results.json").read_text())
        earned = [t["extra_data"]["check"] for t in report["tests"] if t["score"] > 0]
        assert earned == ["sdpa.present"], earned
    finally:
        shutil.rmtree(root, ignore_errors=True)
