"""Grade one submission: load its code, run every check against a sandboxed worker,
and turn the outcomes into scores. Pass/fail is decided here, in the trusted process."""

import functools
import sys
import time
import traceback
from dataclasses import dataclass, field

import nbformat

import solutions
from autograder import loader
from autograder.checks.context import Context
from autograder.checks.registry import CheckFailed, checks_for, text
from autograder.messages import load_problem, student_error, worker_failure
from autograder.sandbox.process import Limits, StudentError, WorkerFailure
from autograder.sandbox.session import Session

# Names of the contract, per assignment: what the worker is asked to describe.
CONTRACT_NAMES = ["scaled_dot_product_attention", "causal_mask", "MultiHeadAttention",
                  "positional_encoding", "FeedForward", "EncoderBlock", "DecoderBlock"]


@dataclass
class Outcome:
    check: object
    status: str  # "passed", "failed", "skipped", "error"
    score: float
    message: dict | None = None  # why it did not pass, in both languages


@dataclass
class SubmissionResult:
    student: str
    assignment: str
    source: str | None
    outcomes: list = field(default_factory=list)
    problems: list = field(default_factory=list)  # messages about loading, in both languages
    execution_time: float = 0.0
    output_tail: str = ""

    @property
    def score(self):
        return sum(o.score for o in self.outcomes)

    @property
    def max_score(self):
        return sum(o.check.points for o in self.outcomes)

    @property
    def grader_errors(self):
        return [o for o in self.outcomes if o.status == "error"]


def grade(submission, course, slot=0):
    """Grade one submission; ``slot`` picks the sandbox uid (one per concurrent worker)."""
    started = time.monotonic()
    if submission.path is None:  # nothing to read: every check is skipped with the reason
        loaded = loader.LoadedCode(fatal=True, problems=[
            {"code": submission.problem or "no_notebook", "detail": ""}])
    else:
        loaded = loader.load(submission.path, expected_grade_ids(course, submission.assignment))
    return grade_loaded(loaded, submission.student, submission.assignment, course,
                        source=str(submission.path) if submission.path else None,
                        started=started, slot=slot)


@functools.lru_cache(maxsize=32)
def _grade_ids(path):
    notebook = nbformat.read(path, as_version=4)
    return tuple(cell.metadata.nbgrader["grade_id"] for cell in notebook.cells
                 if cell.metadata.get("nbgrader", {}).get("grade_id"))


def expected_grade_ids(course, assignment):
    """The nbgrader cell ids of the assignment's source notebook (empty if there is none)."""
    settings = course.assignments.get(assignment)
    if settings is None or settings.source_notebook is None:
        return ()
    return _grade_ids(settings.source_notebook)


def grade_loaded(loaded, student, assignment, course, source=None, started=None, slot=0):
    """Grade code that the loader already extracted (from a file or a kernel's history)."""
    started = started or time.monotonic()
    checks = checks_for(assignment, course)
    result = SubmissionResult(student, assignment, source)
    result.problems.extend(load_problem(p) for p in loaded.problems)
    if loaded.fatal:
        reason = result.problems[-1]
        result.outcomes = [Outcome(c, "skipped", 0.0, reason) for c in checks]
        return _finish(result, started)
    session = Session(
        loaded.chunks, CONTRACT_NAMES, solutions,
        limits=Limits(memory_bytes=course.memory_mb * 1024 * 1024),
        startup_timeout=course.startup_timeout, request_timeout=course.check_timeout,
        max_restarts=course.max_restarts, slot=slot)
    try:
        result.outcomes = _run_checks(session, checks, course, started, loaded.stubs)
        if session.load_info:
            result.problems.extend(student_error(e, e["origin"]) for e in session.load_info["errors"])
    finally:
        session.close()
        result.output_tail = session.output_tail
    return _finish(result, started)


def _run_checks(session, checks, course, started, stubs=frozenset()):
    try:
        session.load()
    except WorkerFailure as failure:
        reason = worker_failure(failure)
        return [Outcome(c, "skipped", 0.0, reason) for c in checks]
    outcomes = {}
    for check in checks:
        blocked = [n for n in check.needs if outcomes[n].status != "passed"]
        if blocked:
            outcomes[check.id] = Outcome(check, "skipped", 0.0, text(
                f"Dilewati karena pemeriksaan {', '.join(blocked)} belum lulus.",
                f"Skipped because {', '.join(blocked)} did not pass."))
        elif time.monotonic() - started > course.submission_timeout:
            outcomes[check.id] = Outcome(check, "skipped", 0.0, text(
                "Dilewati: batas waktu total untuk satu pengumpulan sudah habis.",
                "Skipped: the time limit for the whole submission ran out."))
        else:
            outcomes[check.id] = _run_one(session, check, course, stubs)
    return list(outcomes.values())


def _run_one(session, check, course, stubs):
    try:
        check.run(Context(session, course, check, stubs))
    except CheckFailed as failed:
        return Outcome(check, "failed", 0.0, failed.message)
    except StudentError as error:
        return Outcome(check, "failed", 0.0, student_error(
            {"type": error.type, "message": error.message, "where": error.where}))
    except WorkerFailure as failure:
        return Outcome(check, "failed", 0.0, worker_failure(failure))
    except Exception:  # a fault of the grader itself: report it, keep grading
        print(f"grader error in check {check.id}:\n{traceback.format_exc()}", file=sys.stderr)
        return Outcome(check, "error", 0.0, text(
            "Kesalahan internal autograder pada pemeriksaan ini; beri tahu pengajar.",
            "Internal autograder error in this check; please tell the instructor."))
    return Outcome(check, "passed", check.points)


def _finish(result, started):
    result.execution_time = round(time.monotonic() - started, 3)
    return result
