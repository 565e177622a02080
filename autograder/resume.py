"""Resuming an interrupted batch: a student whose report is already in the output folder,
made from the same submission with the same checks, is not graded again."""

import hashlib
import json
from pathlib import Path

from autograder.grading import Outcome, SubmissionResult
from autograder.report import student_folder


def fingerprint(submission, checks, lang):
    """What a report depends on: the submission's bytes, the checks and their points, the language."""
    digest = hashlib.sha256()
    try:
        digest.update(Path(submission.path).read_bytes() if submission.path else b"<missing>")
    except OSError:
        digest.update(b"<unreadable>")
    digest.update(json.dumps([submission.assignment, lang, [(c.id, c.points) for c in checks]]).encode())
    return digest.hexdigest()


def previous_result(out_dir, submission, checks, expected):
    """The result recorded in OUT/<student>/results.json, if it was made from the same inputs."""
    path = Path(out_dir) / student_folder(submission.student) / "results.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        extra = data.get("extra_data") or {}
        if extra.get("fingerprint") != expected:
            return None
        by_id = {c.id: c for c in checks}
        outcomes = []
        for test in data["tests"]:
            check = by_id[test["extra_data"]["check"]]
            status = test["status"] if test["score"] or test["status"] != "passed" else "passed"
            outcomes.append(Outcome(check, status, float(test["score"]), None))
        if [o.check.id for o in outcomes] != list(by_id):
            return None
        result = SubmissionResult(submission.student, submission.assignment, extra.get("source"))
        result.outcomes = outcomes
        result.problems = list(extra.get("problems", []))
        result.execution_time = float(data.get("execution_time", 0.0))
        result.fingerprint = expected
        return result
    except (OSError, ValueError, KeyError, TypeError):
        return None
