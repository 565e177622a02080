"""Grade many submissions at once: one thread per job, each driving its own sandboxed
worker (forked from the shared zygote) under its own sandbox uid."""

import os
import queue
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed

from autograder.checks.registry import checks_for, text
from autograder.grading import Outcome, SubmissionResult, grade


def default_jobs():
    return max(1, len(os.sched_getaffinity(0)))


def grade_many(submissions, course, jobs=None):
    """Yield each submission's result as soon as it is graded (in completion order).
    A fault while grading one submission becomes that submission's error report."""
    jobs = max(1, jobs or default_jobs())
    slots = queue.SimpleQueue()
    for slot in range(jobs):
        slots.put(slot)

    def run(submission):
        slot = slots.get()
        try:
            return grade(submission, course, slot=slot)
        except Exception:  # a fault of the grader: keep the batch going, report it loudly
            print(f"grader error on {submission.student}:\n{traceback.format_exc()}", file=sys.stderr)
            return _grader_error(submission, course)
        finally:
            slots.put(slot)

    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="grade") as pool:
        futures = [pool.submit(run, submission) for submission in submissions]
        for future in as_completed(futures):
            yield future.result()


def _grader_error(submission, course):
    message = text("Kesalahan internal autograder; beri tahu pengajar.",
                   "Internal autograder error; please tell the instructor.")
    result = SubmissionResult(submission.student, submission.assignment,
                              str(submission.path) if submission.path else None)
    result.outcomes = [Outcome(c, "error", 0.0, message)
                       for c in checks_for(submission.assignment, course)]
    return result
