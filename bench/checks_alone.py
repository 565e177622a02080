"""The checks' own cost: submissions graded with the worker in this process, no sandbox.

    .venv/bin/python bench/checks_alone.py ASSIGNMENT NOTEBOOK... [--repeat K]

prints ``{"cpu_ms": ...}``, this process's CPU milliseconds per submission (the notebooks must
be correct ones: each must get full marks, or it exits with the scores).

``batch_vs_nbgrader.py`` uses it to print the lower bound that no work on the sandbox, the wire
or the batch can go below: every check of the plan runs as in ``autograder grade``, the
worker's own code (``autograder/sandbox/worker.py``) builds the student's modules and runs them,
and the grader compares with the reference, but nothing is forked, framed, piped, isolated or
limited. What is left is the checks' computation: the student's constructors and forwards,
the recording of their sub-layers, the reference's computations, the comparisons, the check
logic, the diagnoses and pictures. Only trusted code is graded this way (the reference's own
notebooks), and only here: the kit never runs a student's code outside its sandbox. The
in-process worker is ``autograder/sandbox/inprocess.py``, the one tests/test_mistakes.py uses.
"""

import argparse
import json
import sys
import time
from pathlib import Path

from autograder.sandbox.inprocess import without_sandbox  # trusted code only: the reference's notebooks


def cpu_ms_per_submission(submissions, plan, repeat=3):
    """Milliseconds of this process's CPU per submission, graded one after another here: the
    least of ``repeat`` rounds over all ``submissions`` (a lower bound; on a shared machine
    single rounds move by half)."""
    from autograder.grading import grader
    grader.grade(submissions[0], plan)  # first-use caches (shared references, Hypothesis)
    rounds = []
    for _ in range(repeat):
        started = time.process_time()
        for submission in submissions:
            grader.grade(submission, plan)
        rounds.append((time.process_time() - started) * 1000 / len(submissions))
    return min(rounds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignment")
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from autograder.grading import grader
    from autograder import plan as plans
    from autograder.loading import Submission

    from without_training import patch

    without_sandbox()
    patch()  # the transformer's checks without its training outcome, as batch_vs_nbgrader.py
    plan = plans.load(args.assignment)
    submissions = [Submission(path.parent.parent.name, args.assignment, path) for path in args.notebooks]
    scores = [grader.grade(submission, plan) for submission in submissions]
    wrong = [f"{r.student} {r.score:g}/{r.max_score:g}" for r in scores if r.score != r.max_score]
    if wrong:
        sys.exit(f"not graded as correct without the sandbox: {', '.join(wrong)}")
    print(json.dumps({"cpu_ms": cpu_ms_per_submission(submissions, plan, args.repeat)}))


if __name__ == "__main__":
    main()
