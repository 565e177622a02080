"""Report writing on real grading results (grading runs in-process, the student code in its worker)."""

import csv
import io
import json
import os

import pytest

from autograder import config, grading, loader, report
from autograder.checks.registry import checks_for, text
from conftest import EXAMPLES

COURSE = config.load()
CHECKS = checks_for("attention", COURSE)


@pytest.fixture(scope="module")
def budi():
    notebook = EXAMPLES / "budi" / "attention" / "attention.ipynb"
    [submission] = loader.discover([notebook], "attention", "attention.ipynb")
    submission.student = "budi"
    return grading.grade(submission, COURSE)


@pytest.fixture(scope="module")
def missing(tmp_path_factory):
    [submission] = loader.discover([tmp_path_factory.mktemp("none") / "eka"], "attention")
    return grading.grade(submission, COURSE)


def test_student_files_in_both_languages(budi, tmp_path):
    for lang, look in (("id", "Di mana mencari"), ("en", "Where to look")):
        folder = report.write_student(tmp_path / lang, budi, lang, "Attention")
        assert folder == tmp_path / lang / "budi"
        assert sorted(p.name for p in folder.iterdir()) == ["feedback.md", "results.json"]  # no temp files
        data = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        assert data["score"] == budi.score and data["max_score"] == budi.max_score
        assert len(data["tests"]) == len(CHECKS)
        md = (folder / "feedback.md").read_text(encoding="utf-8")
        assert md.startswith(f"# {report.WORDS[lang]['title']}: Attention")
        assert f"{report.fmt(budi.score)}/{report.fmt(budi.max_score)}" in md
        assert look in md
        for outcome in budi.outcomes:  # every check appears once in the tables, with its mark
            mark = "✓" if outcome.status == "passed" else "✗"
            assert f"| {mark} | `{outcome.check.id}` {outcome.check.title[lang]}" in md
            if outcome.status == "failed":
                assert outcome.message[lang] in md and outcome.check.hint[lang] in md
        assert (folder / "results.json").stat().st_mode & 0o777 == 0o644


def test_only_feedback_texts_reach_the_student(budi):
    """No check code, reference inputs or tensors: only titles, messages and hints."""
    for lang in ("id", "en"):
        written = json.dumps(report.results_json(budi, lang), ensure_ascii=False) + report.feedback_md(budi, lang)
        for leak in ("ctx.", "def ", "tensor(", "Traceback", "reference.", "solutions"):
            assert leak not in written
        for test, outcome in zip(report.results_json(budi, lang)["tests"], budi.outcomes):
            if outcome.status == "failed":
                assert test["output"] == (f"{outcome.message[lang]}\n{report.WORDS[lang]['look']}: "
                                          f"{outcome.check.hint[lang]}")


def test_missing_submission_report(missing, tmp_path):
    assert report.status(missing) == "not_graded"
    data = report.results_json(missing, "en")
    assert data["score"] == 0 and "not found" in data["output"] and "No check could run" in data["output"]
    assert all(t["status"] == "failed" and "not found" in t["output"] for t in data["tests"])
    md = report.feedback_md(missing, "en")
    assert "## Problems while loading the code" in md and "**File:** (none)" in md
    assert md.count("not found") == 1  # said once at the top, not once per check


def test_batch_files(budi, missing, tmp_path):
    timing = {"seconds": 1.0}
    report.write_batch(tmp_path, [budi, missing], CHECKS, "attention", "en", timing, sandbox="test-box")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gradebook.csv", "summary.json"]
    rows = list(csv.reader(io.StringIO((tmp_path / "gradebook.csv").read_text(encoding="utf-8"))))
    assert rows[0] == ["student", "assignment", "score", "max_score"] + [c.id for c in CHECKS]
    assert rows[1][:4] == ["budi", "attention", report.fmt(budi.score), report.fmt(budi.max_score)]
    assert rows[2][:3] == ["eka", "attention", "0"] and set(rows[2][4:]) == {"0"}
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert summary["sandbox"] == "test-box" and summary["timing"] == timing
    assert summary["counts"] == {"students": 2, "full": 0, "partial": 1, "zero": 0, "not_graded": 1,
                                 "grader_error": 0, "with_load_problems": 1}
    assert summary["students"][0]["failed"] == report.failed_ids(budi)
    assert summary["max_score"] == sum(c.points for c in CHECKS)


def test_grader_error_is_its_own_status(budi):
    broken = grading.SubmissionResult("x", "attention", None, outcomes=[
        grading.Outcome(CHECKS[0], "passed", CHECKS[0].points),
        grading.Outcome(CHECKS[1], "error", 0.0, text("salah", "oops"))])
    assert report.status(broken) == "grader_error"
    summary = report.summary([budi, broken], CHECKS, "attention", "en", {})
    assert summary["grader_errors"] == [{"student": "x", "check": CHECKS[1].id, "message": "oops"}]
    test = report.results_json(broken, "en")["tests"][1]
    assert test["status"] == "failed" and test["output"] == "oops"


@pytest.mark.parametrize("name, folder", [("andi", "andi"), ("../../etc", "_.._etc"), (".x", "x"),
                                          ("a b/c", "a_b_c"), ("", "_"), ("..", "_")])
def test_student_folder_stays_inside(name, folder):
    assert report.student_folder(name) == folder


def test_write_atomic_replaces_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / "sub" / "f.txt"
    report.write_atomic(target, "one")
    report.write_atomic(target, "two ✓")
    assert target.read_text(encoding="utf-8") == "two ✓"
    assert os.listdir(target.parent) == ["f.txt"]
    with pytest.raises(TypeError):
        report.write_atomic(target, None)  # a failed write keeps the old file and no temp file
    assert target.read_text(encoding="utf-8") == "two ✓" and os.listdir(target.parent) == ["f.txt"]
