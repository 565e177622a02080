"""Grade a batch on a Dask cluster (``autograder grade --scheduler ADDRESS|local``).

The division of trust is the one of a local batch. A Dask worker process runs our code: it
starts its own sandbox zygote (``SandboxPlugin``), receives one submission's bytes and the
plan, grades it exactly as ``grading.grade`` does in a local thread (the student's code runs
only in the sandboxed workers it forks) and returns the ``StudentResult`` as JSON. The client
(``batch.run``) keeps the rest: resume fingerprints, the records it writes, every report.

A worker that dies (killed, out of memory, its machine gone) loses no student: the scheduler
gives its tasks to another worker (``distributed.scheduler.allowed-failures`` times), and a
task that still fails becomes that student's grader-error record, reported like any grader
fault (exit status 3). Workers must run the same kit as the client: a worker whose kit
digest differs refuses the task.
"""

import logging
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

from autograder import resume
from autograder.grading import grade, grader_fault
from autograder.loader import Submission
from autograder.records import StudentResult

try:  # optional at import time: only --scheduler needs it
    from distributed import WorkerPlugin
except ImportError:  # pragma: no cover
    WorkerPlugin = object

_spool = None
_slots, _slots_lock = {}, threading.Lock()


class KitMismatch(RuntimeError):
    pass


class SandboxPlugin(WorkerPlugin):
    """Per Dask worker process: a private spool folder for submissions, hidden from the
    sandbox, and the zygote started at once (it imports torch while the worker waits)."""

    name = "autograder-sandbox"

    def setup(self, worker=None):
        _ensure_spool()

    def teardown(self, worker=None):
        global _spool
        if _spool:
            shutil.rmtree(_spool, ignore_errors=True)
            _spool = None


def _ensure_spool():
    global _spool
    with _slots_lock:
        if _spool is None:
            from autograder.sandbox import launch

            _spool = tempfile.mkdtemp(prefix="autograder-spool-")
            os.chmod(_spool, 0o700)
            launch.start_early(hide=[_spool])
        return _spool


def _slot():
    """A sandbox uid slot per thread of this worker process (one per concurrent grade)."""
    me = threading.get_ident()
    with _slots_lock:
        if me not in _slots:
            _slots[me] = len(_slots)
        return _slots[me]


def grade_remote(student, assignment, name, data, problem, plan, kit):
    """Runs in a Dask worker: grade one submission given as bytes; returns (record JSON, isolation)."""
    if resume.kit_digest() != kit:
        raise KitMismatch(f"this worker ({os.uname().nodename}, pid {os.getpid()}) runs another "
                          "version of the kit than the client; install the same kit on every worker")
    folder = None
    try:
        path = None
        if data is not None:
            folder = tempfile.mkdtemp(dir=_ensure_spool())
            path = Path(folder) / name
            path.write_bytes(data)
        submission = Submission(student, assignment, path, problem)
        try:
            result = grade(submission, plan, slot=_slot())
        except Exception:  # as grade_many does locally: a fault of the grader, reported
            import traceback

            print(f"grader error on {student}:\n{traceback.format_exc()}", file=sys.stderr)
            result = grader_fault(submission, plan)
    finally:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
    from autograder.sandbox.process import sandbox_mode

    mode = sandbox_mode()
    isolation = "none (no student code ran)" if mode is None else (
        f"{mode[0]} ({mode[1]})" if mode[1] else mode[0])
    return result.dumps(), isolation


class DaskGrading:
    """A connection to a Dask scheduler ("local": a LocalCluster of ``jobs`` processes)."""

    def __init__(self, scheduler, jobs=None):
        from distributed import Client, LocalCluster

        self.cluster = None
        self.modes = []
        if scheduler == "local":
            self.cluster = LocalCluster(n_workers=max(1, jobs or os.cpu_count() or 1), threads_per_worker=1,
                                        processes=True, dashboard_address=None,
                                        silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
        else:
            try:
                self.client = Client(scheduler, timeout="20s")
            except (OSError, TimeoutError, ValueError) as error:
                raise ConnectionError(f"cannot reach the Dask scheduler {scheduler}: {error}") from None
        self.client.register_plugin(SandboxPlugin(), name=SandboxPlugin.name)

    def grade_many(self, submissions, plan):
        """Yield each submission's record as its task finishes (completion order)."""
        from distributed import as_completed

        kit = resume.kit_digest()
        futures = {}
        for submission in submissions:
            data, problem = None, submission.problem
            if submission.path is not None:
                try:
                    data = Path(submission.path).read_bytes()
                except OSError:  # what loader.load says about it, graded here: no student code runs
                    yield self._local(submission, plan)
                    continue
            future = self.client.submit(
                grade_remote, submission.student, submission.assignment,
                Path(submission.path).name if submission.path else None, data, problem, plan, kit,
                pure=False, retries=1, key=f"grade-{report_key(submission.student)}-{os.urandom(4).hex()}")
            futures[future] = submission
        try:
            for future in as_completed(list(futures)):
                submission = futures[future]
                try:
                    text, isolation = future.result()
                    result = StudentResult.loads(text)
                    self.modes.append(isolation)
                except Exception as error:  # KilledWorker after the retries, KitMismatch, ...
                    print(f"grader error on {submission.student}: its Dask task failed: "
                          f"{type(error).__name__}: {error}", file=sys.stderr)
                    result = grader_fault(submission, plan)
                # The worker graded a copy: the record names the instructor's file.
                yield result.with_changes(source=str(submission.path) if submission.path else None)
        finally:
            for future in futures:
                future.cancel()

    @staticmethod
    def _local(submission, plan):
        return grade(submission, plan)

    def sandbox(self):
        modes = list(dict.fromkeys(self.modes))
        return "; ".join(modes) if modes else "none (no student code ran)"

    def close(self):
        try:
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()


def report_key(student):
    """A Dask key part from a student's name (keys are shown in dashboards and logs)."""
    from autograder.report import student_folder

    return student_folder(student)[:60]
