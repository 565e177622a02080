"""Grade a batch on a Dask cluster (``autograder grade --scheduler ADDRESS|local``).

The division of trust is the one of a local batch. A Dask worker process runs our code: it
starts its own sandbox zygote once (``SandboxPlugin``: kept for the process's life, whatever
number of batches and clients come; a LocalCluster's workers, forked from the grader, use the
grader's zygote instead: ``forked_local_cluster``), receives one submission's bytes and the
plan, grades it exactly as ``grading.grade`` does in a local thread (the student's code runs
only in the sandboxed workers it forks), renders its reports as a local grading process does
(``finish``) and returns them. The client (``batch.run``) keeps the rest: resume fingerprints,
writing the files, the class files.

A worker that dies (killed, out of memory, its machine gone) loses no student: the scheduler
gives its tasks to another worker (``distributed.scheduler.allowed-failures`` times), and a
task that still fails becomes that student's grader-error record, reported like any grader
fault (exit status 3). Workers must run the same kit as the client: a worker whose kit
digest differs refuses the task. A worker whose sandbox cannot start takes no task at all
(tasks need the ``RESOURCE`` it then never advertises) and says why once, in its log and to
the client.

The client never waits forever: a task that has run on a worker for longer than a grade can
take (``task_seconds``: the plan's submission and startup time-outs plus a worker's start), or
tasks that no worker runs at all for ``wait_seconds`` (a scheduler without workers, or none
that can take them), are cancelled and become grader-error records that say so.
"""

import atexit
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from autograder.grading import resume
from autograder.grading.finish import Finished
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
# What a worker advertises once its sandbox runs (one unit per thread) and every grading task
# asks for: a worker without a sandbox is given no task. Also the topic of the event a worker
# logs when its sandbox cannot start.
RESOURCE = "autograder-sandbox"

logger = logging.getLogger("distributed.autograder")  # shown with the worker's own log lines
# This worker process's sandbox: its private spool folder, or why it cannot start. Both belong
# to the process, not to a plugin instance, and are made once (``start_sandbox``).
_spool, _unavailable = None, None
_sandbox_lock = threading.Lock()
_slots, _slots_lock = {}, threading.Lock()
# A LocalCluster's worker processes are forks of the grader (``forked_local_cluster``): the
# grader's pid, and {worker name: process.Attachment}, the slot of the grader's zygote each
# worker takes over (``start_sandbox``) instead of starting a zygote of its own.
_forked_from = None
_handed = {}


class KitMismatch(RuntimeError):
    pass


class SandboxUnavailable(RuntimeError):
    pass


class SandboxPlugin(WorkerPlugin):
    """Per Dask worker process: start its sandbox (``start_sandbox``), then advertise
    ``RESOURCE``, which every grading task needs. A worker whose sandbox cannot start says why
    once (its log, and an event the client prints) and never advertises it: it takes no task,
    where it would otherwise turn every student it took into a grader error, fast.

    Every batch registers the plugin again (a new client): ``idempotent`` keeps the scheduler
    from re-registering it on workers that have it, and setup and teardown are safe to repeat
    anyway, since the sandbox belongs to the process (teardown leaves it; the process's exit
    removes the spool, and the zygote dies with its parent)."""

    name = RESOURCE
    idempotent = True

    async def setup(self, worker=None):
        import asyncio

        # The zygote imports torch: seconds, waited for off the worker's event loop.
        reason, first = await asyncio.to_thread(start_sandbox, getattr(worker, "name", None))
        if worker is None:
            return
        if reason is not None:
            if first:
                worker.log_event(RESOURCE, {"worker": worker.address, "host": os.uname().nodename,
                                            "reason": reason})
            return
        await worker.set_resources(**{RESOURCE: worker.state.nthreads})
        from distributed.core import Status

        if worker.status == Status.running:
            # The scheduler looks for a worker for its waiting tasks when a worker joins or
            # starts running, not when one gains a resource: tasks submitted before this
            # worker's sandbox was up would wait for nothing. A pause and resume is a start.
            worker.status = Status.paused
            worker.status = Status.running

    def teardown(self, worker=None):
        """Nothing: the sandbox is the worker process's (see the class)."""


def start_sandbox(name=None):
    """This worker process's sandbox, made once: a private spool folder for the submissions it
    grades (hidden from the sandbox, removed when the process exits) and the zygote, waited
    for until it is ready. A worker forked from the grader (``forked_local_cluster``) that was
    handed a slot of the grader's zygote (by its worker ``name``) uses that one. Returns (why
    it cannot start or None, whether this call found out); the reason is logged once, in the
    worker's log."""
    global _spool, _unavailable
    with _sandbox_lock:
        if _spool is not None or _unavailable is not None:
            return _unavailable, False
        try:
            from autograder.sandbox import launch, process

            forked, handed = _take_handed(name)
            if forked:  # the grader's zygote hides the spool root and removes it at its exit
                spool = tempfile.mkdtemp(dir=launch.spool_root())
                process.adopt(handed)  # None: nothing of the grader's, a zygote of our own
            else:
                spool = tempfile.mkdtemp(prefix="autograder-spool-")
                os.chmod(spool, 0o700)
                atexit.register(shutil.rmtree, spool, True)
            if handed is None:
                launch.start_early(hide=[spool])
            process.shared_zygote()  # ready, or RuntimeError / WorkerFailure saying why not
            _spool = spool
            return None, True
        except Exception as error:
            _unavailable = f"{type(error).__name__}: {error}"
            logger.error("autograder: this worker cannot start the sandbox and grades nothing "
                         "(restart it once this is fixed): %s", _unavailable)
            return _unavailable, True


def _take_handed(name):
    """(whether this process is a fork of the grader, the attachment handed to the worker
    ``name`` or None); the other workers' attachments are closed here (only theirs count)."""
    if _forked_from is None or _forked_from == os.getpid():
        return False, None
    handed = _handed.pop(name, None)
    for other in _handed.values():
        other.control.close()
    _handed.clear()
    return True, handed


def forked_local_cluster(workers, plan=None, **options):
    """A LocalCluster of ``workers`` processes forked from this one, the grader, instead of
    spawned: each starts with torch and the kit already imported (a spawned worker imports
    them again, ~2 s of CPU) and grades with workers of the grader's zygote, on a slot of its
    own (``process.attach``, as a ``pool.GradingPool`` process does), instead of starting a
    zygote that imports torch once more. The sandbox is the same; only who forks it differs.

    The grader's zygote is used only if it hides ``launch.spool_root()`` (where the workers
    copy the submissions); otherwise, or if attaching fails, each worker starts its own. A
    worker that Dask restarts later (its process died) is spawned and starts its own.
    ``plan``: warmed up here first (``grader.warm_up``), once for every worker."""
    global _forked_from
    import dask
    from distributed import LocalCluster
    from autograder.sandbox import launch, process

    root = str(Path(launch.spool_root()).resolve())
    if process.sandbox_mode() is None and launch.peek_early() is None:
        launch.start_early(hide=[root])
    early = launch.peek_early()
    _forked_from = os.getpid()
    if early is not None and root in early.hidden:
        try:
            for name in range(workers):
                _handed[name] = process.attach(name)
        except (OSError, RuntimeError, process.WorkerFailure):
            pass  # a worker without an attachment starts its own zygote
    if plan is not None:
        import torch
        from autograder.grading import grader

        torch.set_num_threads(1)  # no thread pool of torch's is copied into a fork half-made
        grader.warm_up_shared(plan)  # as for a GradingPool: shared with the workers
    try:
        # The workers' statistical profiler samples the grading thread's stack every 10 ms (for
        # the dashboard, which a LocalCluster of ours does not show): ~30 ms of CPU a submission.
        # The other monitors wake every process's event loop for the dashboard and diagnostics
        # too (the loop's own tick every 20 ms, memory every 100 ms, the system every 500 ms),
        # on the cores the grading runs on: ~9 % of the batch's CPU at 40 submissions. (Work
        # stealing stays on: tasks that need a resource are assigned to workers when they are
        # submitted rather than queued on the scheduler, and stealing is what rebalances them
        # if one worker falls behind.)
        with dask.config.set({"distributed.worker.multiprocessing-method": "fork",
                              "distributed.worker.profile.enabled": False,
                              "distributed.admin.tick.interval": "1s",
                              "distributed.worker.memory.monitor-interval": "1s",
                              "distributed.admin.system-monitor.interval": "2s"}):
            return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, **options)
    finally:
        for attachment in _handed.values():  # the grader's copies; each worker holds its own
            attachment.control.close()
        _handed.clear()


def _slot():
    """A sandbox uid slot per thread of this worker process (one per concurrent grade)."""
    me = threading.get_ident()
    with _slots_lock:
        if me not in _slots:
            _slots[me] = len(_slots)
        return _slots[me]


def grade_remote(student, assignment, name, data, problem, plan, kit, changes=None, similar_inputs=None):
    """Runs in a Dask worker: grade one submission given as bytes, then finish its record as a
    grading process of a local batch does (``finish.finish``: its reports rendered, its slim
    record, its similarity code), so that the client only writes files; returns (``Finished``,
    isolation). ``changes``: what the client sets on the record (the instructor's ``source``
    path, the resume fingerprint, the lateness); ``similar_inputs``: as ``finish`` takes them."""
    if resume.kit_digest() != kit:
        raise KitMismatch(f"this worker ({os.uname().nodename}, pid {os.getpid()}) runs another "
                          "version of the kit than the client; install the same kit on every worker")
    reason, _ = start_sandbox()  # started by SandboxPlugin: only a task run without it starts it
    if reason is not None:
        raise SandboxUnavailable(f"this worker ({os.uname().nodename}, pid {os.getpid()}) cannot "
                                 f"start the sandbox: {reason}")
    folder = None
    try:
        path = None
        if data is not None:
            folder = tempfile.mkdtemp(dir=_spool)
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
    from autograder.grading import finish
    from autograder.sandbox.process import sandbox_description

    return finish.finish(result.with_changes(**(changes or {})), plan, similar_inputs), sandbox_description()


def _connect(client_class, scheduler, seconds):
    """A client of ``scheduler``, tried for ``seconds`` by our own clock: Dask's timer may end
    a few milliseconds early, and a scheduler that is still starting deserves the whole wait."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return client_class(scheduler, timeout=max(deadline - time.monotonic(), 0.05))
        except ValueError as error:  # a malformed address: no wait will mend it
            problem = error
            break
        except (OSError, TimeoutError) as error:
            problem = error
            if time.monotonic() >= deadline:
                break
    raise ConnectionError(f"cannot reach the Dask scheduler {scheduler} within {seconds:g} s "
                          f"(--scheduler-timeout): {problem}") from None


class DaskGrading:
    """A connection to a Dask scheduler ("local": a LocalCluster of ``jobs`` processes)."""

    def __init__(self, scheduler, jobs=None, connect_seconds=None, plan=None):
        from distributed import Client

        self.cluster = None
        self.modes = []
        if scheduler == "local":
            self.cluster = forked_local_cluster(max(1, jobs or os.cpu_count() or 1), plan,
                                                dashboard_address=None, silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
        else:
            seconds = CONNECT_SECONDS if connect_seconds is None else connect_seconds
            self.client = _connect(Client, scheduler, seconds)
        self.client.register_plugin(SandboxPlugin(), name=SandboxPlugin.name)
        self._told = set()  # the workers whose broken sandbox this client has reported

    def tell_broken_workers(self, lang):
        """Print, once per worker, why a worker of this cluster cannot start its sandbox (the
        event its ``SandboxPlugin`` logged): such a worker grades nothing."""
        try:
            events = self.client.get_events(RESOURCE)
            present = set(self.client.scheduler_info(n_workers=-1)["workers"])
        except Exception:  # a scheduler that does not answer: the deadlines speak for it
            return
        for _, event in events:
            worker = event.get("worker")
            if worker in self._told or worker not in present:
                continue
            self._told.add(worker)
            print(bilingual(
                f"peringatan: pekerja Dask {worker} ({event.get('host')}) tidak dapat menjalankan "
                f"sandbox dan tidak menilai apa pun: {event.get('reason')}",
                f"warning: Dask worker {worker} ({event.get('host')}) cannot start the sandbox and "
                f"grades nothing: {event.get('reason')}")[lang], file=sys.stderr, flush=True)

    def grade_many(self, tasks, plan, similar_inputs=None):
        """Yield each submission's ``finish.Finished`` as its task finishes (completion order),
        like ``pool.GradingPool.grade_many``: ``tasks`` are (submission, changes to its record:
        fingerprint, late). A submission graded here instead (its file unreadable) or whose task
        failed yields its record (the client finishes it)."""
        kit = resume.kit_digest()
        self.tell_broken_workers(plan.language)
        futures = {}
        for submission, changes in tasks:
            data, problem = None, submission.problem
            if submission.path is not None:
                try:
                    data = Path(submission.path).read_bytes()
                except OSError:  # what loader.load says about it, graded here: no student code runs
                    yield self._local(submission, plan)
                    continue
            # The worker grades a copy: the record names the instructor's file.
            changes = {**changes, "source": str(submission.path) if submission.path else None}
            future = self.client.submit(
                grade_remote, submission.student, submission.assignment,
                Path(submission.path).name if submission.path else None, data, problem, plan, kit,
                changes, similar_inputs, pure=False, retries=1, resources={RESOURCE: 1},
                key=f"grade-{report_key(submission.student)}-{os.urandom(4).hex()}")
            futures[future] = submission
        try:
            for future, reason in self._as_finished(futures, plan):
                submission = futures[future]
                if reason is not None:  # it never ran, or never finished: no record came back
                    message, detail = reason
                    print(f"grader error on {submission.student}: {detail}", file=sys.stderr)
                    yield not_run(submission, plan, message)
                    continue
                try:
                    finished, isolation = future.result()
                    if not isinstance(finished, Finished) or finished.student != submission.student:
                        raise TypeError(f"the task answered {type(finished).__name__} for another student")
                    self.modes.append(isolation)
                except Exception as error:  # KilledWorker after the retries, KitMismatch, ...
                    print(f"grader error on {submission.student}: its Dask task failed: "
                          f"{type(error).__name__}: {error}", file=sys.stderr)
                    yield grader_fault(submission, plan)
                    continue
                yield finished
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
                self.tell_broken_workers(plan.language)
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
                from autograder.sandbox import process

                process.close_shared()  # the zygote its workers used: none outlives the batch


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
