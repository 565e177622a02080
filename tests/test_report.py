"""Report writing on real grading results (grading runs in-process, the student code in its worker)."""

import csv
import io
import json
import os
import re

import pytest

from autograder.grading import grader

from autograder import loading, plan as plans, reports
from autograder.records import BatchResult, Outcome, StudentResult
from autograder.texts import bilingual
from conftest import EXAMPLES

PLAN = plans.load("attention")
CHECKS = [c.info for c in PLAN.checks]


@pytest.fixture(scope="module")
def budi():
    notebook = EXAMPLES / "budi" / "attention" / "attention.ipynb"
    [submission] = loading.discover([notebook], "attention", "attention.ipynb")
    submission.student = "budi"
    return grader.grade(submission, PLAN)


@pytest.fixture(scope="module")
def missing(tmp_path_factory):
    [submission] = loading.discover([tmp_path_factory.mktemp("none") / "eka"], "attention")
    return grader.grade(submission, PLAN)


def test_student_files_in_both_languages(budi, tmp_path):
    for lang, look in (("id", "Petunjuk"), ("en", "Where to look")):
        folder = reports.write_student(tmp_path / lang, budi, "Attention", lang)
        assert folder == tmp_path / lang / "budi"
        assert sorted(p.name for p in folder.iterdir()) == [
            "feedback.html", "feedback.md", "record.json", "results.json"]  # no temp files
        data = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        assert data["score"] == budi.score and data["max_score"] == budi.max_score
        assert len(data["tests"]) == len(CHECKS)
        md = (folder / "feedback.md").read_text(encoding="utf-8")
        assert md.startswith(f"# {reports.WORDS[lang]['title']}: Attention")
        assert f"{reports.fmt(budi.score)}/{reports.fmt(budi.max_score)}" in md
        assert look in md
        for outcome in budi.outcomes:  # every check appears once in the tables, with its mark
            mark = "✓" if outcome.status == "passed" else "✗"
            assert f"| {mark} | `{outcome.check.id}` {outcome.check.title[lang]}" in md
            explained = next((d for d in budi.diagnoses if outcome.check.id in d.explains), None)
            if outcome.status == "failed" and explained:  # named once, at its root
                assert explained.title[lang] in md and explained.hint[lang] in md
            elif outcome.status == "failed":
                assert outcome.message[lang] in md and outcome.check.hint[lang] in md
        assert (folder / "results.json").stat().st_mode & 0o777 == 0o644


def test_only_feedback_texts_reach_the_student(budi):
    """No check code, reference inputs or tensors: only titles, messages and hints."""
    for lang in ("id", "en"):
        written = json.dumps(reports.results_json(budi, lang), ensure_ascii=False) + reports.feedback_md(budi, lang)
        for leak in ("ctx.", "def ", "tensor(", "Traceback", "solutions"):
            assert leak not in written
        assert not re.search(r"reference\.\w", written)  # code, not a sentence ending "the reference."
        words = reports.WORDS[lang]
        for test, outcome in zip(reports.results_json(budi, lang)["tests"], budi.outcomes):
            explained = next((d for d in budi.diagnoses if outcome.check.id in d.explains), None)
            if outcome.status == "failed" and explained:
                assert test["output"] == (f"{words['diagnosis']}: {explained.title[lang]}\n"
                                          f"{outcome.message[lang]}\n{words['look']}: {explained.hint[lang]}")
            elif outcome.status == "failed":
                assert test["output"] == (f"{outcome.message[lang]}\n{words['look']}: "
                                          f"{outcome.check.hint[lang]}")


def batch_of(*results, timing=None, sandbox="unknown"):
    return BatchResult("attention", PLAN.title, "en", tuple(CHECKS), results, timing or {}, sandbox)


def test_missing_submission_report(missing, tmp_path):
    assert missing.status == "not_graded"
    data = reports.results_json(missing, "en")
    assert data["score"] == 0 and "not found" in data["output"] and "No check could run" in data["output"]
    assert all(t["status"] == "failed" and "not found" in t["output"] for t in data["tests"])
    assert data["output"].splitlines()[1] == "no submission: The submitted file or folder was not found."
    md = reports.feedback_md(missing, "en")
    assert "**No submission:** The submitted file or folder was not found." in md and "**File:** (none)" in md
    assert "## Problems while loading the code" not in md  # its only problem is the headline
    assert md.count("not found") == 1  # said once at the top, not once per check


def test_batch_files(budi, missing, tmp_path):
    timing = {"seconds": 1.0}
    reports.write_batch(tmp_path, batch_of(budi, missing, timing=timing, sandbox="test-box"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gradebook.csv", "summary.json"]
    rows = list(csv.reader(io.StringIO((tmp_path / "gradebook.csv").read_text(encoding="utf-8"))))
    assert rows[0] == ["student", "assignment", "score", "max_score"] + [c.id for c in CHECKS]
    assert rows[1][:4] == ["budi", "attention", reports.fmt(budi.score), reports.fmt(budi.max_score)]
    assert rows[2][:3] == ["eka", "attention", "0"] and set(rows[2][4:]) == {"0"}
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert summary["sandbox"] == "test-box" and summary["timing"] == timing
    assert summary["counts"] == {"students": 2, "full": 0, "partial": 1, "zero": 0, "not_graded": 1,
                                 "grader_error": 0, "with_load_problems": 1}
    assert summary["students"][0]["failed"] == budi.failed_ids
    assert summary["max_score"] == sum(c.points for c in CHECKS)


def test_grader_error_is_its_own_status(budi):
    broken = StudentResult("x", "attention", None, outcomes=(
        Outcome(CHECKS[0], "passed", CHECKS[0].points),
        Outcome(CHECKS[1], "error", 0.0, bilingual("salah", "oops"))))
    assert broken.status == "grader_error"
    summary = reports.summary(batch_of(budi, broken))
    assert summary["grader_errors"] == [{"student": "x", "check": CHECKS[1].id, "message": "oops"}]
    test = reports.results_json(broken, "en")["tests"][1]
    assert test["status"] == "failed" and test["output"] == "oops"


@pytest.mark.parametrize("name, folder", [("andi", "andi"), ("../../etc", "_.._etc"), (".x", "x"),
                                          ("a b/c", "a_b_c"), ("", "_"), ("..", "_")])
def test_student_folder_stays_inside(name, folder):
    assert reports.student_folder(name) == folder


def test_write_atomic_replaces_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / "sub" / "f.txt"
    reports.write_atomic(target, "one")
    reports.write_atomic(target, "two ✓")
    assert target.read_text(encoding="utf-8") == "two ✓"
    assert os.listdir(target.parent) == ["f.txt"]
    with pytest.raises(TypeError):
        reports.write_atomic(target, None)  # a failed write keeps the old file and no temp file
    assert target.read_text(encoding="utf-8") == "two ✓" and os.listdir(target.parent) == ["f.txt"]


# -- records --------------------------------------------------------------------------------------
def test_every_status_survives_the_round_trip(budi, missing):
    statuses = (("passed", CHECKS[0].points, None), ("failed", 0.0, bilingual("salah", "wrong")),
                ("skipped", 0.0, bilingual("Dilewati karena x.", "Skipped because x.")),
                ("error", 0.0, bilingual("galat", "fault")), ("timeout", 0.0, bilingual("waktu", "time")))
    mixed = StudentResult("mix", "attention", "/x/mix.ipynb", outcomes=tuple(
        Outcome(CHECKS[i], status, score, message) for i, (status, score, message) in enumerate(statuses)),
        problems=(bilingual("masalah", "problem"),), execution_time=1.5, fingerprint="f",
        report_error="OSError: disk full")
    for record in (budi, missing, mixed):
        again = StudentResult.loads(record.dumps())
        assert again == record and again.dumps() == record.dumps()
        assert again.status == record.status
    assert missing.status == "not_graded" and mixed.status == "grader_error"
    assert [o.status for o in StudentResult.loads(mixed.dumps()).outcomes] == [s for s, _, _ in statuses]


def test_untrusted_text_cannot_become_markup_or_control_characters(tmp_path):
    from markdown_it import MarkdownIt

    hostile = ("\x1b[2J\x1b[31mred\x07 \ud800 ![img](http://evil.example/x.png) [link](http://e.x) "
               "<img src=x onerror=alert(1)> <a href='x'>a</a> www.evil.example evil@mail.example "
               "`a` ``b`` **bold** ~~gone~~ &lt;")
    result = StudentResult(hostile, "attention", f"/s/{hostile}.ipynb", outcomes=(
        Outcome(CHECKS[0], "failed", 0.0, bilingual(hostile, hostile)),),
        problems=(bilingual(hostile, hostile),))
    folder = reports.write_student(tmp_path, result, hostile, "en")  # the surrogate does not crash it
    for name in ("feedback.md", "results.json", "record.json"):
        written = (folder / name).read_text(encoding="utf-8")
        assert "\x1b" not in written and "\x07" not in written and "\ud800" not in written
    html = MarkdownIt("gfm-like").render((folder / "feedback.md").read_text(encoding="utf-8"))
    for element in ("<img", "<a ", "<strong>bold", "<del", "<s>"):
        assert element not in html, element
    assert "&lt;img src=x" in html  # shown as text, not dropped


def test_a_diagnosis_leads_its_target_and_replaces_the_generic_hints_it_explains(budi):
    from autograder.records import Diagnosis

    sdpa_numeric = next(o for o in budi.outcomes if o.check.id == "sdpa.numeric")
    assert sdpa_numeric.status == "failed"
    diagnosis = Diagnosis("scaled_dot_product_attention", "sdpa.missing_scale",
                          bilingual("skala hilang", "the scale is missing"),
                          bilingual("bagi dengan akar d_k", "divide by the square root of d_k"),
                          ("sdpa.numeric",))
    diagnosed = budi.with_changes(diagnoses=(diagnosis,))
    assert StudentResult.loads(diagnosed.dumps()) == diagnosed
    md = reports.feedback_md(diagnosed, "en")
    section = md[md.index("## `scaled_dot_product_attention`"):md.index("## `causal_mask`")]
    assert section.index("Recognised mistake") < section.index("| | Check |")  # it leads
    assert "Failed because of this mistake: `sdpa.numeric`" in section
    assert sdpa_numeric.check.hint["en"] not in section  # no generic hint for what it explains
    data = reports.results_json(diagnosed, "en")
    test = next(t for t in data["tests"] if t["extra_data"]["check"] == "sdpa.numeric")
    assert test["extra_data"]["diagnosis"] == "sdpa.missing_scale"
    assert "divide by the square root of d_k" in test["output"]
    assert data["extra_data"]["diagnosis"][0]["mistake"] == "sdpa.missing_scale"
    summary = reports.summary(batch_of(diagnosed))
    assert summary["students"][0]["diagnoses"] == [{"target": "scaled_dot_product_attention",
                                                     "mistake": "sdpa.missing_scale"}]


def test_a_parts_mistake_is_named_in_the_target_built_on_it(budi):
    """A diagnosis of one target that explains failed checks of another (a sub-layer's bug
    seen through the module built on it) is named in that target's section too, and those
    checks are not listed again with their generic hints (feedback.md and feedback.html)."""
    from autograder.reports import feedback_html
    from autograder.records import Diagnosis

    failed = {o.check.id: o for o in budi.outcomes if not o.passed}
    assert "mha.integration" in failed
    diagnosis = Diagnosis("scaled_dot_product_attention", "sdpa.missing_scale",
                          bilingual("skala hilang", "the scale is missing"),
                          bilingual("bagi dengan akar d_k", "divide by the square root of d_k"),
                          ("sdpa.numeric", "mha.integration"))
    diagnosed = budi.with_changes(diagnoses=(diagnosis,))
    assert diagnosed.explained_elsewhere("MultiHeadAttention") == [(diagnosis, ["mha.integration"])]
    assert diagnosed.explained_elsewhere("scaled_dot_product_attention") == []
    hint = failed["mha.integration"].check.hint["en"]
    md = reports.feedback_md(diagnosed, "en")
    section = md[md.index("## `MultiHeadAttention`"):]
    assert section.index("Caused by the mistake recognised in `scaled_dot_product_attention`:** "
                         "the scale is missing") < section.index("| | Check |")
    assert "Failed because of this mistake: `mha.integration`" in section
    assert hint not in section
    md_id = reports.feedback_md(diagnosed, "id")
    assert "Akibat kesalahan yang dikenali di `scaled_dot_product_attention`:** skala hilang" in md_id
    html = "\n".join(feedback_html.target_html(diagnosed, "MultiHeadAttention", [
        o for o in diagnosed.outcomes if o.check.target == "MultiHeadAttention"], "en"))
    assert "Caused by the mistake recognised in <code>scaled_dot_product_attention</code>" in html
    words = hint.split("`")[0][:40]  # the hint's first words, before any markup
    assert "<code>mha.integration</code>" in html and words and words not in html
