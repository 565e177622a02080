"""Grade one submission: load its code, run every check of the plan against a sandboxed
worker, and record the outcomes. Pass/fail is decided here, in the trusted process."""

import contextlib
import dataclasses
import gc
import sys
import time
import traceback
from pathlib import Path

import torch

import solutions
from autograder import loading
from autograder.checks import consequences, diagnosis, localization, pictures, targets, verification
from autograder.checks.context import Context
from autograder.checks.registry import CheckFailed
from autograder.grading.messages import (AT_HIDDEN_SIZES, load_problem, scrub_message, student_error,
                                        worker_failure)
from autograder.records import Outcome, StudentResult
from autograder.sandbox.process import Limits, StudentError, WorkerFailure
from autograder.sandbox.session import Session
from autograder.texts import bilingual

GRADER_FAULT = bilingual("Kesalahan internal autograder; beri tahu pengajar.",
                         "Internal autograder error; please tell the instructor.")


def grade(submission, plan, slot=0):
    """Grade one discovered submission; ``slot`` picks the sandbox uid (one per concurrent worker)."""
    started = time.monotonic()
    if submission.path is None:  # nothing to read: every check is skipped with the reason
        loaded = loading.LoadedCode(fatal=True, problems=[
            {"code": submission.problem or "no_notebook", "detail": ""}])
    else:
        loaded = loading.load(submission.path, plan.source_notebook)
    return grade_loaded(loaded, submission.student, plan,
                        source=str(submission.path) if submission.path else None,
                        started=started, slot=slot)


def grade_loaded(loaded, student, plan, source=None, started=None, slot=0):
    """Grade code that the loader already extracted (from a file or a kernel's history)."""
    started = started or time.monotonic()
    problems = [load_problem(p) for p in loaded.problems]
    if loaded.fatal:
        reason = problems[-1]
        outcomes = [Outcome(c.info, "skipped", 0.0, reason) for c in plan.checks]
        return _finish(student, plan, source, outcomes, problems, started)
    with one_thread():
        return _grade_in_sandbox(loaded, student, plan, source, started, problems, slot)


@contextlib.contextmanager
def one_thread():
    """torch's intra-op threads off while grading, as they were afterwards (a student's kernel
    keeps its own). The checks' tensors are small, but a training check's reference steps are
    not: with two threads on a loaded machine their spinning costs several times the work."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _grade_in_sandbox(loaded, student, plan, source, started, problems, slot):
    limits = plan.limits
    session = Session(
        loaded.chunks, targets.names(), solutions,
        limits=Limits(memory_bytes=limits.memory_mb * 1024 * 1024),
        startup_timeout=limits.startup_timeout, request_timeout=limits.request_timeout,
        max_restarts=limits.max_restarts, slot=slot)
    try:
        outcomes, recorded, drawn, soft = _run_checks(session, plan, started, loaded)
        if session.load_info:
            problems.extend(student_error(e, e["origin"], loaded=loaded)
                            for e in session.load_info["errors"])
        diagnoses = _advisory(diagnosis.diagnose, session, plan, outcomes, started)
        located = _advisory(localization.localize, session, plan, outcomes, started, diagnoses)
        outcomes = _verified(session, plan, outcomes, recorded, soft)
        diagnoses = diagnoses + tuple(consequences.derive(outcomes, diagnoses))
    finally:
        session.close()
    return _finish(student, plan, source, outcomes, problems, started, diagnoses, drawn, located)


def grader_fault(submission, plan):
    """The record of a submission the grader itself failed on (the batch goes on)."""
    return StudentResult(submission.student, plan.name,
                         str(submission.path) if submission.path else None,
                         outcomes=tuple(Outcome(c.info, "error", 0.0, GRADER_FAULT) for c in plan.checks))


def _run_checks(session, plan, started, loaded):
    """(outcomes in the plan's order, what their recordings claim, pictures). The checks that
    send the hidden sizes to the worker (and those that need them) run last: until then the
    worker has never seen them, and the pictures (the student's own numbers) are drawn then."""
    try:
        session.load()
    except WorkerFailure as failure:
        reason = worker_failure(failure)
        return [Outcome(c.info, "skipped", 0.0, reason) for c in plan.checks], {}, (), set()
    late, soft = set(), set()  # soft: failed, but the checks that need them still run (only_here)
    for check in plan.checks:
        if check.reads_hidden or any(need in late for need in check.needs):
            late.add(check.id)
    outcomes, recorded = {}, {}
    for phase in ("public", "hidden"):
        if phase == "hidden":
            drawn = _advisory(pictures.collect, session, plan, list(outcomes.values()), started)
        for check in plan.checks:
            if (check.id in late) != (phase == "hidden"):
                continue
            blocked = [n for n in check.needs if not outcomes[n].passed and n not in soft]
            if blocked:
                outcomes[check.id] = _skipped_for(check, blocked)
            elif time.monotonic() - started > plan.limits.submission_timeout:
                outcomes[check.id] = Outcome(check.info, "skipped", 0.0, bilingual(
                    "Dilewati: batas waktu total untuk satu pengumpulan sudah habis.",
                    "Skipped: the time limit for the whole submission ran out."))
            else:
                outcomes[check.id] = _run_one(session, check, plan, loaded, recorded,
                                              fresh_after_hidden=phase == "public", soft=soft)
    return [outcomes[c.id] for c in plan.checks], recorded, drawn, soft


def _skipped_for(check, blocked):
    return Outcome(check.info, "skipped", 0.0, bilingual(
        f"Dilewati karena pemeriksaan {', '.join(blocked)} belum lulus.",
        f"Skipped because {', '.join(blocked)} did not pass."))


def _verified(session, plan, outcomes, recorded, soft=frozenset()):
    """The outcomes once the recorded sub-layer calls of the checks that passed are verified
    (``checks.verification``): a check whose recordings a fresh worker does not reproduce
    fails, and the checks that needed it are skipped."""
    outcomes = {o.check.id: o for o in outcomes}
    passed = {check_id: claims for check_id, claims in recorded.items() if outcomes[check_id].passed}
    try:
        failed = verification.unverified(session, passed) if passed else {}
    except (StudentError, WorkerFailure) as error:  # the fresh worker itself failed: nothing verified
        failed = {check_id: worker_failure(error) if isinstance(error, WorkerFailure) else
                  student_error({"type": error.type, "message": error.message, "where": error.where})
                  for check_id in passed}
    for check in plan.checks:
        if check.id in failed:
            outcomes[check.id] = Outcome(check.info, "failed", 0.0, failed[check.id])
        elif outcomes[check.id].passed:
            blocked = [n for n in check.needs if not outcomes[n].passed and n not in soft]
            if blocked:
                outcomes[check.id] = _skipped_for(check, blocked)
    return list(outcomes.values())


def _run_one(session, check, plan, loaded, recorded=None, fresh_after_hidden=True, soft=None):
    """One check's outcome; what its recordings claim goes into ``recorded`` (check id ->
    [verification.Recorded]) to be verified before it counts. A check that turns out to send
    the hidden sizes although it does not say so (``reads_hidden``) leaves the worker for a fresh
    one (``fresh_after_hidden``), so that the checks after it run where they never were."""
    watched = _WatchedPlan(plan)
    try:
        ctx = Context(session, watched, check, loaded.stubs, defer_building=True)
        check.run(ctx)
        session.flush()  # what it built and did not use yet: that too is this check's
        if recorded is not None and ctx.recorded:
            recorded[check.id] = ctx.recorded
    except (CheckFailed, StudentError) as failure:  # only_here: the checks needing it still run
        if soft is not None and not getattr(failure, "blocks", True):
            soft.add(check.id)
        return _failed(check, failure, watched, loaded)
    except WorkerFailure as failure:
        status = "timeout" if failure.kind == "timeout" else "failed"
        return Outcome(check.info, status, 0.0, worker_failure(failure, hidden=watched.used_hidden))
    except Exception:  # a fault of the grader itself: report it, keep grading
        print(f"grader error in check {check.id}:\n{traceback.format_exc()}", file=sys.stderr)
        return Outcome(check.info, "error", 0.0, bilingual(
            "Kesalahan internal autograder pada pemeriksaan ini; beri tahu pengajar.",
            "Internal autograder error in this check; please tell the instructor."))
    finally:
        session.discard_deferred()
        if watched.used_hidden and fresh_after_hidden:
            session.fresh_worker()
    return Outcome(check.info, "passed", check.points)


def _failed(check, failure, watched, loaded):
    """The outcome of a check that failed (CheckFailed) or that the student's code failed."""
    if isinstance(failure, CheckFailed):  # on hidden sizes, nothing the student's code could shape
        return Outcome(check.info, "failed", 0.0, AT_HIDDEN_SIZES if watched.used_hidden else failure.message)
    return Outcome(check.info, "failed", 0.0, student_error(  # on hidden sizes: where only
        {"type": failure.type, "message": failure.message, "where": failure.where},
        hidden=watched.used_hidden, loaded=loaded))


def warm_up(plan, until=None):
    """Run every check of ``plan`` here up to its first request to a worker, which none gets:
    what a check prepares before it asks anything is made once, in this process, and a fork of
    it inherits it (``pool.GradingPool``), as do its other threads. That is Hypothesis (its
    import and the sizes it generates for each sizes check: ~0.3 s) and the reference modules
    shared by every submission; each grading process paid for them again on its first
    submission. ``until``: asked before each check; the warm-up stops once it returns True."""
    for check in plan.checks:
        if until is not None and until():
            return
        try:
            check.run(Context(_NoWorker(), _WatchedPlan(plan), check, frozenset(), defer_building=True))
        except (_FirstRequest, Exception):  # its stop, or a check that cannot run without answers
            pass


def warm_up_shared(plan, until=None):
    """``warm_up`` in a process that then grades with what it made, in its threads or in forks
    of it (``batch.run``, ``pool.GradingPool``, a forked Dask cluster): what exists before and
    after is frozen (``gc.freeze``). It lives as long as the process, and no collection walks it
    again: Hypothesis runs a full one the first time each thread uses it (it checks that its own
    random generator is referenced), ~0.1 s over torch's objects, ~1 ms once they are frozen;
    and a fork's collections never touch, and so copy, the pages it shares."""
    gc.freeze()
    warm_up(plan, until)
    gc.freeze()


class _FirstRequest(BaseException):
    """Where a warm-up run stops (not an Exception: no check catches it for the student's)."""


class _NoWorker:
    """A session whose every operation ends the warm-up run that calls it."""

    def __getattr__(self, name):
        def stop(*args, **kwargs):
            raise _FirstRequest(name)
        return stop


class _WatchedPlan:
    """The plan as one check sees it; notes whether the check read the hidden sizes."""

    def __init__(self, plan):
        self._plan, self.used_hidden = plan, False

    def __getattr__(self, name):
        return getattr(self._plan, name)

    @property
    def hidden(self):
        return _WatchedSizes(self._plan.hidden, self)

    @property
    def sizes_to_avoid(self):
        """The hidden sizes, to keep inputs away from them (not sent to the worker)."""
        return self._plan.hidden


class _WatchedSizes:
    def __init__(self, sizes, watcher):
        self._sizes, self._watcher = sizes, watcher

    def __getattr__(self, name):
        self._watcher.used_hidden = True
        return getattr(self._sizes, name)


def _advisory(step, session, plan, outcomes, started, *extra):
    """Diagnoses, localizations and pictures explain verdicts; they never change one. A
    student's code that fails or hangs there, or no time left, just means none; a fault of ours
    is logged."""
    if time.monotonic() - started > plan.limits.submission_timeout:
        return ()
    try:
        return tuple(step(session, plan, tuple(outcomes), *extra))
    except (StudentError, WorkerFailure, CheckFailed):
        return ()
    except Exception:
        print(f"grader error in {step.__module__}.{step.__name__}:\n{traceback.format_exc()}",
              file=sys.stderr)
        return ()


def _finish(student, plan, source, outcomes, problems, started, diagnoses=(), drawn=(), located=()):
    # Student-produced text (its errors, what it printed) never carries a host path into a
    # report: the kit's, the Python installation's, the class's (its own folder too).
    folders = [Path(source).parent] if source else []
    outcomes = [dataclasses.replace(o, message=scrub_message(o.message, folders)) if o.message else o
                for o in outcomes]
    problems = [scrub_message(p, folders) for p in problems]
    return StudentResult(student, plan.name, source, outcomes=tuple(outcomes),
                         problems=tuple(problems),
                         execution_time=round(time.monotonic() - started, 3),
                         diagnoses=tuple(diagnoses), pictures=tuple(drawn),
                         localizations=tuple(located))
