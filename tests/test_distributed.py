"""Grading on a Dask cluster: the same records as a local batch, and a killed worker loses
no student. Each Dask worker process starts its own sandbox zygote; the records and reports
are made by the client."""

import json
import logging
import os
import signal
import threading
import time

import pytest

from autograder import loading
from autograder.grading import batch
from autograder import plan as plans
from conftest import EXAMPLES, refused_port, run_autograder

pytestmark = pytest.mark.slow  # Dask clusters started and killed, deadlines waited out

distributed = pytest.importorskip("distributed")


def _without_timing(out):
    """Every student's record, results.json and feedback.md, less the time it took."""
    found = {}
    for folder in sorted(p for p in out.iterdir() if (p / "record.json").is_file()):
        record = json.loads((folder / "record.json").read_text())
        results = json.loads((folder / "results.json").read_text())
        record.pop("execution_time"), results.pop("execution_time")
        found[folder.name] = record, results, (folder / "feedback.md").read_text()
    return found


def test_a_local_cluster_of_two_processes_grades_like_the_local_batch(attention_batch, tmp_path):
    _, local = attention_batch
    out = tmp_path / "out"
    done = run_autograder("grade", EXAMPLES, "-a", "attention", "-o", out, "--scheduler", "local", "--jobs", "2",
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert _without_timing(out) == _without_timing(local)  # fingerprints and sources included
    assert (out / "gradebook.csv").read_text() == (local / "gradebook.csv").read_text()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sandbox"] == json.loads((local / "summary.json").read_text())["sandbox"]
    assert summary["timing"]["graded"] == 4
    again = run_autograder("grade", EXAMPLES, "-a", "attention", "-o", out, "--scheduler", "local")
    assert "4 report(s) in" in again.stderr  # resume works the same: nothing to send to a cluster


def test_a_killed_worker_loses_no_student(tmp_path):
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=logging.CRITICAL)
    try:
        plan = plans.load("attention")
        submissions = loading.discover([EXAMPLES], "attention", plan.notebook)
        finished = {}
        runner = threading.Thread(target=lambda: finished.update(batch=batch.run(
            plan, submissions, tmp_path / "out", scheduler=cluster.scheduler_address)))
        runner.start()
        killed = None
        with distributed.Client(cluster.scheduler_address) as client:
            deadline = time.monotonic() + 300
            while killed is None and runner.is_alive() and time.monotonic() < deadline:
                busy = [w for w, keys in client.processing().items() if any(str(k).startswith("grade-") for k in keys)]
                if busy:
                    pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
                    os.kill(pid, signal.SIGKILL)  # mid-grade: the worker process and its zygote go
                    killed = busy[0]
                time.sleep(0.1)
        runner.join(600)
        assert killed, "no worker was ever seen grading"
        graded = finished["batch"]
        scores = {r.student: (r.status, r.score) for r in graded.results}
        assert set(scores) == {"andi", "budi", "citra", "dewi"}  # nobody lost
        # Retried on another worker, every student has the verdicts a local run gives.
        assert scores["andi"] == ("full", plan.max_score) and scores["citra"][0] == "not_graded"
        assert scores["budi"][0] == scores["dewi"][0] == "partial"
        assert all((tmp_path / "out" / s / "record.json").is_file() for s in scores)
    finally:
        cluster.close()


def test_an_unreachable_scheduler_is_a_usage_error_within_seconds(tmp_path):
    with refused_port() as port:
        started = time.monotonic()
        done = run_autograder("grade", EXAMPLES / "andi", "-a", "attention", "-o", tmp_path / "out",
                              "--scheduler", f"tcp://127.0.0.1:{port}", "--scheduler-timeout", "1.5")
        took = time.monotonic() - started
    assert done.returncode == 2
    assert f"cannot reach the Dask scheduler tcp://127.0.0.1:{port} within 1.5 s" in done.stderr
    assert not list((tmp_path / "out").glob("*/record.json"))
    assert took < 1.5 + 15, took  # the whole command, torch's import included


@pytest.mark.parametrize("seconds", [None, 0.5], ids=["default", "asked-for"])
def test_the_client_gives_up_on_a_scheduler_after_its_timeout(seconds):
    """An address that refuses: given up after ``--scheduler-timeout`` seconds (by default a
    few: it used to be 20), not at the first refusal (a scheduler may be starting)."""
    from autograder.grading.distributed import CONNECT_SECONDS, DaskGrading

    wanted = CONNECT_SECONDS if seconds is None else seconds
    assert CONNECT_SECONDS <= 5
    with refused_port() as port:
        started = time.monotonic()
        with pytest.raises(ConnectionError, match=f"tcp://127.0.0.1:{port} within {wanted:g} s"):
            DaskGrading(f"tcp://127.0.0.1:{port}", connect_seconds=seconds)
        took = time.monotonic() - started
    assert wanted <= took < wanted + 3, took


@pytest.fixture
def short_deadlines(monkeypatch, tmp_path):
    """A plan whose Dask deadlines are seconds: startup 1 s, a grade 2 s, a worker's start 1 s."""
    from autograder.grading import distributed as dask_grading
    from conftest import course_with

    monkeypatch.setattr(dask_grading, "STARTUP_MARGIN_SECONDS", 1)
    monkeypatch.setattr(dask_grading, "LOOK_SECONDS", 0.5)
    plan = plans.resolve(course_with(tmp_path, startup_timeout=1, submission_timeout=2), "attention")
    return plan, dask_grading.task_seconds(plan.limits), dask_grading.wait_seconds(plan.limits)


def _not_run(graded, students, message):
    scores = {r.student: r for r in graded.results}
    assert set(scores) == set(students)
    for result in scores.values():
        assert result.status == "grader_error" and result.score == 0
        assert {o.message["en"] for o in result.outcomes} == {message}, result.outcomes[0].message


def test_a_scheduler_without_workers_ends_the_batch_with_a_record_per_student(short_deadlines, tmp_path):
    """No worker ever takes the tasks: after wait_seconds every student gets a grader-error
    record that says so, and the batch finishes (it used to wait forever)."""
    plan, _, waiting = short_deadlines
    cluster = distributed.LocalCluster(n_workers=0, processes=True, dashboard_address=None,
                                       silence_logs=logging.CRITICAL)
    try:
        submissions = loading.discover([EXAMPLES], "attention", plan.notebook)[:2]
        started = time.monotonic()
        graded = batch.run(plan, submissions, tmp_path / "out", scheduler=cluster.scheduler_address)
        assert time.monotonic() - started < waiting + 60
        with distributed.Client(cluster.scheduler_address) as client:  # given up: cancelled too
            assert not any(str(k).startswith("grade-") for k in client.who_has())
    finally:
        cluster.close()
    _not_run(graded, [s.student for s in submissions],
             f"This submission was not graded: no Dask worker ran it within {waiting:.0f} s. "
             "Please tell the instructor.")
    for submission in submissions:
        assert (tmp_path / "out" / submission.student / "feedback.md").is_file()
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert {e["student"] for e in summary["grader_errors"]} == {s.student for s in submissions}


def test_a_task_stuck_on_a_worker_is_given_up_after_its_deadline(short_deadlines, tmp_path):
    """A worker that stops answering (SIGSTOP: not dead, so the scheduler keeps it) mid-grade:
    after task_seconds the task is cancelled and the student's record says so."""
    plan, running, _ = short_deadlines
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=logging.CRITICAL)
    pid = None
    try:
        submissions = loading.discover([EXAMPLES / "andi"], "attention", plan.notebook)
        finished = {}
        runner = threading.Thread(target=lambda: finished.update(batch=batch.run(
            plan, submissions, tmp_path / "out", scheduler=cluster.scheduler_address)))
        with distributed.Client(cluster.scheduler_address) as client:
            (pid,) = client.run(os.getpid).values()
            runner.start()
            deadline = time.monotonic() + 120
            while runner.is_alive() and time.monotonic() < deadline:
                if any(str(k).startswith("grade-") for keys in client.processing().values() for k in keys):
                    os.kill(pid, signal.SIGSTOP)
                    break
                time.sleep(0.05)
            else:
                pytest.fail("the task was never seen running")
        runner.join(running + 60)
        assert not runner.is_alive(), "the batch still waits for the stopped worker"
    finally:
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
        cluster.close()
    _not_run(finished["batch"], ["andi"],
             f"This submission was not graded: grading it on the Dask cluster did not finish "
             f"within {running:.0f} s. Please tell the instructor.")
