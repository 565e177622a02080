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

from autograder import batch, loader
from autograder import plan as plans
from conftest import EXAMPLES, run_autograder

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
        submissions = loader.discover([EXAMPLES], "attention", plan.notebook)
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


def test_an_unreachable_scheduler_is_a_usage_error(tmp_path):
    done = run_autograder("grade", EXAMPLES / "andi", "-a", "attention", "-o", tmp_path / "out",
                          "--scheduler", "tcp://127.0.0.1:9")  # the discard port: nobody listens
    assert done.returncode == 2
    assert "cannot reach the Dask scheduler tcp://127.0.0.1:9" in done.stderr
    assert not list((tmp_path / "out").glob("*/record.json"))
