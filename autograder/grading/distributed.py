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

The client never waits forever: a task that has run on a worker for longer than a grade can
take (``task_seconds``: the plan's submission and startup time-outs plus a worker's start), or
tasks that no worker runs at all for ``wait_seconds`` (a scheduler without workers, or none
that can take them), are cancelled and become grader-error records that say so.
"""

import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from autograder.grading import resume
from autograder.grading.grader import grade, grader_fault
from autograder.loading import Submission
from autograder.records import Outcome, StudentResult
from autograder.texts import bilingual

try:  # optional at import time: only --scheduler needs it
    from distributed import WorkerPlugin
except ImportError:  # pragma: no cover
    WorkerPlugin = object

# A Dask worker process starts its own zygote (torch is imported: up to
# process.ZYGOTE_READY_SECONDS) and sends the record back: time a grade itself does not count.
STARTUP_MARGIN_SECONDS = 180
POLL_SECONDS = 0.25  # how often the client looks at its futures (a local check)
LOOK_SECONDS = 2.0  # how often it asks the scheduler which of its tasks are running
# How long the client tries to reach a scheduler (``--scheduler-timeout``): a scheduler that
# is up answers within a second; a wrong address or one that is down is a usage error at once.
CONNECT_SECONDS = 3.0

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
            # A Dask worker process starts its own zygote (torch is imported: up to
# process.ZYGOTE_READY_SECONDS) and sends the record back: time a grade itself does not count.
STARTUP_MARGIN_SECONDS = 180
POLL_SECONDS = 0.25  # how often the client looks at its futures (a local check)
LOOK_SECONDS = 2.0  # how often it asks the scheduler which of its tasks are running

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
    from autograder.sandbox.process import sandbox_description

    return result.dumps(), sandbox_description()


class DaskGrading:
    """A connection to a Dask scheduler ("local": a LocalCluster of ``jobs`` processes)."""

    def __init__(self, scheduler, jobs=None, connect_seconds=None):
        from distributed import Client, LocalCluster

        self.cluster = None
        self.modes = []
        if scheduler == "local":
            self.cluster = LocalCluster(n_workers=max(1, jobs or os.cpu_count() or 1), threads_per_worker=1,
                                        processes=True, dashboard_address=None,
                                        silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
        else:
            seconds = CONNECT_SECONDS if connect_seconds is None else connect_seconds
            try:
                self.client = Client(scheduler, timeout=seconds)
            except (OSError, TimeoutError, ValueError) as error:
                raise ConnectionError(f"cannot reach the Dask scheduler {scheduler} within {seconds:g} s "
                                      f"(--scheduler-timeout): {error}") from None
        self.client.register_plugin(SandboxPlugin(), name=SandboxPlugin.name)

    def grade_many(self, submissions, plan):
        """Yield each submission's record as its task finishes (completion order)."""
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
            for future, reason in self._as_finished(futures, plan):
                submission = futures[future]
                if reason is not None:  # it never ran, or never finished: no record came back
                    message, detail = reason
                    print(f"grader error on {submission.student}: {detail}", file=sys.stderr)
                    result = not_run(submission, plan, message)
                else:
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

    def _as_finished(self, futures, plan):
        """Yield (future, None) as each task finishes, or (future, (message for the record,
        detail for the instructor)) for a task given up on: one that ran on a worker for
        longer than a grade can take (``task_seconds``), or every task still waiting when none
        of the batch's tasks has run anywhere for ``wait_seconds`` (no worker, or none that
        can take them). A given-up task is cancelled: a worker that turns up later does not
        grade it for nobody."""
        running_limit, waiting_limit = task_seconds(plan.limits), wait_seconds(plan.limits)
        pending = set(futures)
        started = {}  # key -> (worker, when it was first seen running there)
        progress = time.monotonic()  # the last time a task of ours finished or was seen running
        looked = 0.0
        while pending:
            finished = [f for f in pending if f.done()]
            now = time.monotonic()
            if finished:
                progress = now
                for future in finished:
                    pending.discard(future)
                    yield future, None
                continue
            if now - looked >= LOOK_SECONDS:  # a question to the scheduler: not every poll
                looked = now
                running = self._running({f.key for f in pending})
                for key, worker in running.items():
                    if started.get(key, (None,))[0] != worker:  # new, or retried elsewhere
                        started[key] = (worker, now)
                for key in set(started) - set(running):
                    del started[key]
                if running:
                    progress = now
                overdue = [f for f in pending if f.key in started and now - started[f.key][1] > running_limit]
                for future in overdue:
                    pending.discard(future)
                    future.cancel()
                    yield future, (bilingual(
                        f"Pengumpulan ini tidak dinilai: penilaiannya di klaster Dask tidak selesai "
                        f"dalam {running_limit:.0f} detik. Beri tahu pengajar.",
                        f"This submission was not graded: grading it on the Dask cluster did not "
                        f"finish within {running_limit:.0f} s. Please tell the instructor."),
                        f"its Dask task ran on {started[future.key][0]} for more than "
                        f"{running_limit:.0f} s; it was cancelled")
                if not running and pending and now - progress > waiting_limit:
                    for future in list(pending):
                        pending.discard(future)
                        future.cancel()
                        yield future, (bilingual(
                            f"Pengumpulan ini tidak dinilai: tidak ada pekerja klaster Dask yang "
                            f"menjalankannya dalam {waiting_limit:.0f} detik. Beri tahu pengajar.",
                            f"This submission was not graded: no Dask worker ran it within "
                            f"{waiting_limit:.0f} s. Please tell the instructor."),
                            f"no Dask worker ran its task within {waiting_limit:.0f} s (does the "
                            "scheduler have workers that can run it?); it was cancelled")
            time.sleep(POLL_SECONDS)

    def _running(self, keys):
        """{key: worker} for those of ``keys`` that a worker is running (or has been given)."""
        try:
            processing = self.client.processing()
        except Exception:  # a scheduler that does not answer runs nothing of ours
            return {}
        return {key: worker for worker, running in processing.items() for key in running if key in keys}

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


def task_seconds(limits):
    """How long one task may run on a worker: a whole grade (``submission_timeout``), its
    worker's start, and the worker process's own first start (its zygote imports torch)."""
    return limits.submission_timeout + limits.startup_timeout + STARTUP_MARGIN_SECONDS


def wait_seconds(limits):
    """How long the batch's tasks may all wait with none of them running on any worker."""
    return limits.startup_timeout + STARTUP_MARGIN_SECONDS


def not_run(submission, plan, message):
    """The record of a submission whose task never ran or never finished: the instructor's
    problem (a grader error, exit status 3), with a message that says so."""
    return StudentResult(submission.student, plan.name,
                         str(submission.path) if submission.path else None,
                         outcomes=tuple(Outcome(c.info, "error", 0.0, message) for c in plan.checks))


def report_key(student):
    """A Dask key part from a student's name (keys are shown in dashboards and logs)."""
    from autograder.reports import student_folder

    return student_folder(student)[:60]
