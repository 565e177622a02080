"""Grading on a Dask cluster: the same records as a local batch, and a killed worker loses
no student. Each Dask worker process starts its own sandbox zygote and renders its students'
reports (as a local grading process does); the client writes them and the class files. ``RealCluster`` runs ``dask scheduler`` and ``dask worker`` as separate
processes, as an instructor does."""

import fcntl
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from autograder import loading
from autograder.grading import batch
from autograder import plan as plans
from autograder.sandbox import launch
from conftest import EXAMPLES, ROOT, refused_port, run_autograder

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


def test_the_wait_for_a_scheduler_is_timed_by_the_kit_not_by_dask():
    """Dask's own connect timer may give up a few milliseconds before its timeout (seen: 2.99 s
    of 3 under load): the kit keeps trying until its own clock says the wait is over, and a
    malformed address is refused at once."""
    from autograder.grading.distributed import _connect

    asked = []

    def gives_up_early(address, timeout):
        asked.append(timeout)
        time.sleep(min(timeout, 0.2) * 0.9)
        raise OSError("refused")

    started = time.monotonic()
    with pytest.raises(ConnectionError, match="within 1 s"):
        _connect(gives_up_early, "tcp://127.0.0.1:9", 1)
    assert time.monotonic() - started >= 1
    assert len(asked) > 1 and asked[0] == pytest.approx(1, abs=0.01)

    def malformed(address, timeout):
        asked.append(timeout)
        raise ValueError("not an address")

    asked.clear()
    with pytest.raises(ConnectionError, match="not an address"):
        _connect(malformed, "nowhere", 5)
    assert len(asked) == 1


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


# -- a real cluster: ``dask scheduler`` and ``dask worker`` processes ---------------------------
DASK = Path(sys.executable).with_name("dask")


class RealCluster:
    """``dask scheduler`` on a free port of 127.0.0.1 (it writes its address to a scheduler
    file) and ``dask worker`` processes (each a nanny and its worker process) started as an
    instructor starts them; every process in its own session, killed with it at the end."""

    def __init__(self, folder):
        self.folder = folder
        self.processes, self.logs = [], {}
        file = folder / "scheduler.json"
        self._start("scheduler", [str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0",
                                  "--no-dashboard", "--scheduler-file", str(file)])
        deadline = time.monotonic() + 60
        while not file.is_file() or not file.read_text().strip().endswith("}"):
            assert time.monotonic() < deadline, self.log("scheduler")
            time.sleep(0.1)
        self.address = json.loads(file.read_text())["address"]

    def _start(self, name, command, env=None):
        log = self.folder / f"{name}.log"
        self.logs[name] = log
        with open(log, "w") as handle:
            self.processes.append(subprocess.Popen(
                command, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, **(env or {})}, start_new_session=True, cwd=self.folder))

    def start_worker(self, name, env=None):
        self._start(name, [str(DASK), "worker", self.address, "--nthreads", "1", "--host", "127.0.0.1",
                           "--no-dashboard"], env)

    def log(self, name):
        return self.logs[name].read_text(errors="replace")

    def grade(self, out, *args):
        """``autograder grade`` of the attention examples on this cluster, started (a Popen)."""
        return subprocess.Popen(
            [sys.executable, "-m", "autograder", "grade", str(EXAMPLES), "-a", "attention", "-o", str(out),
             "--scheduler", self.address, *map(str, args)], cwd=ROOT, env={**os.environ, "PYTHONUTF8": "1"},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def close(self):
        for process in reversed(self.processes):
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(process.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    process.wait(timeout=10)
                    break
                except subprocess.TimeoutExpired:
                    continue


@pytest.fixture
def real_cluster(tmp_path):
    cluster = RealCluster(tmp_path)
    try:
        yield cluster
    finally:
        cluster.close()


def _finished(process, timeout=300):
    stdout, stderr = process.communicate(timeout=timeout)
    return process.returncode, stdout, stderr


def _ready_workers(client, count, timeout=120):
    """Wait until ``count`` workers advertise a running sandbox; returns their addresses."""
    from autograder.grading.distributed import RESOURCE

    deadline = time.monotonic() + timeout
    while True:
        workers = client.scheduler_info(n_workers=-1)["workers"]
        ready = [w for w, info in workers.items() if info.get("resources", {}).get(RESOURCE)]
        if len(ready) >= count:
            return ready
        assert time.monotonic() < deadline, f"only {len(ready)} worker(s) ready: {workers}"
        time.sleep(0.2)


@pytest.mark.slow
def test_a_real_cluster_grades_batch_after_batch_like_a_local_run(real_cluster, attention_batch, tmp_path):
    """Three batches in a row on one `dask scheduler` with two `dask worker`s: the first
    submitted before the workers exist, a worker killed in the middle of the second (its
    nanny starts it again), the third on the restarted worker. Each gives the local run's
    records. (Every batch after the first used to give every student a grader error: the
    plugin's re-registration deleted the worker's spool folder.)"""
    _, local = attention_batch
    expected = _without_timing(local)
    first = real_cluster.grade(tmp_path / "out1")
    time.sleep(1)  # the batch waits for workers that start after it
    real_cluster.start_worker("worker-a")
    real_cluster.start_worker("worker-b")
    code, stdout, stderr = _finished(first)
    assert code == 0, stderr
    assert _without_timing(tmp_path / "out1") == expected

    with distributed.Client(real_cluster.address, timeout="20s") as client:
        _ready_workers(client, 2)
        second = real_cluster.grade(tmp_path / "out2")
        killed, deadline = None, time.monotonic() + 240
        while killed is None and second.poll() is None and time.monotonic() < deadline:
            busy = [w for w, keys in client.processing().items() if any(str(k).startswith("grade-") for k in keys)]
            if busy:
                pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
                os.kill(pid, signal.SIGKILL)  # the worker process (its zygote dies with it); not its nanny
                killed = busy[0]
            time.sleep(0.05)
        code, stdout, stderr = _finished(second)
        assert killed, "no worker was ever seen grading"
        assert code == 0, stderr
        assert _without_timing(tmp_path / "out2") == expected

        ready = _ready_workers(client, 2)  # the nanny's new worker process has its sandbox
        assert killed not in ready
    code, stdout, stderr = _finished(real_cluster.grade(tmp_path / "out3"))
    assert code == 0, stderr
    assert _without_timing(tmp_path / "out3") == expected
    summary = json.loads((tmp_path / "out3" / "summary.json").read_text())
    assert summary["sandbox"] == json.loads((local / "summary.json").read_text())["sandbox"]
    for name in ("worker-a", "worker-b"):
        assert "Traceback" not in real_cluster.log(name) and "FileNotFoundError" not in real_cluster.log(name)


@pytest.fixture
def uid_blocks_taken(tmp_path):
    """A TMPDIR in which every sandbox uid block's lock is held (by this test), as on a machine
    where that many other graders run: a process using it cannot start the sandbox."""
    folder = tmp_path / "busy-tmp"
    folder.mkdir()
    held = []
    try:
        for block in range(launch.UID_BLOCKS):
            handle = open(folder / f"autograder-uids-{launch.UID_FIRST + block * launch.UID_BLOCK}.lock", "w")
            held.append(handle)
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield folder
    finally:
        for handle in held:
            handle.close()


@pytest.mark.slow
def test_a_worker_that_cannot_start_the_sandbox_says_why_once_and_grades_nobody(
        real_cluster, attention_batch, uid_blocks_taken, tmp_path):
    _, local = attention_batch
    real_cluster.start_worker("worker-a")
    real_cluster.start_worker("broken", env={"TMPDIR": str(uid_blocks_taken)})
    with distributed.Client(real_cluster.address, timeout="20s") as client:  # both joined
        deadline = time.monotonic() + 120
        while len(client.scheduler_info(n_workers=-1)["workers"]) < 2:
            assert time.monotonic() < deadline, real_cluster.log("broken")
            time.sleep(0.2)
    for out in ("out1", "out2"):  # a second batch: still said once, by the worker and the client
        code, stdout, stderr = _finished(real_cluster.grade(tmp_path / out))
        assert code == 0, stderr
        assert _without_timing(tmp_path / out) == _without_timing(local)  # all graded elsewhere
        said = [line for line in stderr.splitlines() if "tidak dapat menjalankan sandbox" in line]
        assert len(said) == 1, stderr
        assert "sandbox uid blocks are in use" in said[0] and said[0].startswith("peringatan: pekerja Dask tcp://")
    log = real_cluster.log("broken")
    assert log.count("cannot start the sandbox") == 1, log
    assert "RuntimeError: all 32 sandbox uid blocks are in use by other grader runs" in log
    assert "grade-" not in log  # it never ran a grading task
