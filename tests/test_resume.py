"""Resuming a batch (autograder/resume.py): which records are kept and why the others are
graded again."""

from dataclasses import replace
from pathlib import Path

from autograder.grading import grader

from autograder import plan as plans, reports
from autograder.grading import resume
from autograder.loading import Submission
from autograder.records import Outcome

ROOT = Path(__file__).resolve().parent.parent


def _graded(tmp_path, grader_error_in=()):
    """andi's record in tmp_path: every check passed except those in ``grader_error_in``."""
    plan = plans.load("attention")
    submission = Submission("andi", "attention",
                            ROOT / "examples" / "submissions" / "andi" / "attention" / "attention.ipynb")
    expected = resume.fingerprint(submission, plan)
    result = grader.grader_fault(submission, plan)  # every check "error": cheap, no grading
    outcomes = tuple(o if o.check.id in grader_error_in else Outcome(o.check, "passed", o.check.points)
                     for o in result.outcomes)
    reports.write_student(tmp_path, replace(result, outcomes=outcomes, fingerprint=expected))
    return submission, expected


def test_an_up_to_date_record_is_kept(tmp_path):
    submission, expected = _graded(tmp_path)
    record, why = resume.previous_result(tmp_path, submission, expected)
    assert why is None and record.score == record.max_score


def test_a_record_with_a_grader_error_is_graded_again(tmp_path):
    """A fault of ours (or of the cluster: a Dask task no worker ran) is not the student's
    verdict: resuming must try again, not keep it until the kit changes."""
    submission, expected = _graded(tmp_path, grader_error_in={"mha.shape"})
    record, why = resume.previous_result(tmp_path, submission, expected)
    assert record is None and why == "the grader failed on it last time"
