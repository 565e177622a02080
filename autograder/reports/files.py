"""Render the records of ``autograder.records`` as files: per student ``record.json``
(the record itself, read back when a batch resumes), ``results.json`` (Gradescope's
schema) and ``feedback.md``; per batch ``gradebook.csv`` and ``summary.json``.

Only student-facing texts go into a student's files: check titles, the verdict
messages and the hints. Check code, inputs, expected values and the worker's
output never do. Text is cleaned of control characters everywhere, and in Markdown
nothing outside our own code spans can form a link, an image or HTML. Every file
is written atomically (a temporary file in the same folder, then ``os.replace``),
so a reader never sees half a report.
"""

import csv
import io
import json
from pathlib import Path

from autograder.reports.feedback_html import feedback_html
from autograder.reports.markdown import feedback_md
from autograder.reports.words import (NOT_GRADED, WORDS, explained_by, fmt, localization_json, localized_by,
                                      not_graded, other_problems, skipped, student_folder, write_atomic)
from autograder.texts import clean


def results_json(result, lang, title=None):
    """Gradescope's results.json for one student."""
    words = WORDS[lang]
    explained, located = explained_by(result), localized_by(result)
    tests = [{
        "name": clean(f"{o.check.id}: {o.check.title[lang]}"),
        "score": o.score,
        "max_score": o.check.points,
        "status": "passed" if o.passed else "failed",
        "output": clean(_test_output(o, lang, explained.get(o.check.id), located.get(o.check.id))),
        "visibility": "visible",
        "extra_data": {"check": o.check.id, "category": o.check.category, "outcome": o.status,
                       **({"diagnosis": explained[o.check.id].mistake} if o.check.id in explained else {}),
                       **({"localization": localization_json(located[o.check.id], lang)}
                          if o.check.id in located else {})},
    } for o in result.outcomes]
    lines = [words["summary"].format(score=fmt(result.score), max=fmt(result.max_score))]
    if result.late:
        lines.append(result.late.words(result.raw_score)[lang])
    headline = not_graded(result, lang)
    if headline:  # first, before any detail: nothing was graded, and why
        lines += [headline, NOT_GRADED[lang]["none_ran"]]
    lines += [f"- {problem[lang]}" for problem in other_problems(result)]
    for diagnosis in result.diagnoses:
        lines.append(f"{words['diagnosis']} ({diagnosis.target}): {diagnosis.title[lang]}")
    for localization in result.localizations:
        lines.append(f"{words['localization']} ({localization.target}): {localization.text[lang]}")
    data = {
        "score": result.score,
        "max_score": result.max_score,
        "execution_time": result.execution_time,
        "output": clean("\n".join(lines)),
        "visibility": "visible",
        "tests": tests,
    }
    if result.diagnoses:
        data["extra_data"] = {"diagnosis": [{"target": d.target, "mistake": d.mistake,
                                             "explains": list(d.explains)} for d in result.diagnoses]}
    if result.localizations:
        data.setdefault("extra_data", {})["localization"] = [
            {**localization_json(x, lang), "checks": list(x.checks)} for x in result.localizations]
    return data


def _test_output(outcome, lang, diagnosis=None, localization=None):
    words = WORDS[lang]
    message = outcome.message[lang] if outcome.message else ""
    if outcome.passed:
        return ""
    if diagnosis is not None:  # the root cause first, and its hint instead of the check's own
        return (f"{words['diagnosis']}: {diagnosis.title[lang]}\n{message}\n"
                f"{words['look']}: {diagnosis.hint[lang]}").replace("\n\n", "\n").strip()
    if outcome.status in ("failed", "timeout"):
        where = f"\n{words['localization']}: {localization.text[lang]}" if localization is not None else ""
        return f"{message}{where}\n{words['look']}: {outcome.check.hint[lang]}".strip()
    if outcome.status == "skipped":
        return skipped(message, lang)
    return message or words["error"]


def student_files(result, title=None, lang="id"):
    """(file name, text) of each of a student's reports, rendered one at a time in the order
    they are written: results.json, feedback.md, feedback.html (the same with pictures), and
    record.json last."""
    yield "results.json", json.dumps(results_json(result, lang, title), ensure_ascii=False, indent=2) + "\n"
    yield "feedback.md", feedback_md(result, lang, title)
    yield "feedback.html", feedback_html(result, lang, title)
    yield "record.json", result.dumps()


def write_student(out_dir, result, title=None, lang="id"):
    """Write OUT/<student>/record.json, results.json, feedback.md and feedback.html (the same
    with pictures); returns the folder.
    The record goes last: a folder with a record has a complete set of reports."""
    folder = Path(out_dir) / student_folder(result.student)
    for name, text in student_files(result, title, lang):
        write_atomic(folder / name, text)
    return folder


def read_record(out_dir, student):
    """The record in OUT/<student>/record.json (raises OSError or ValueError)."""
    from autograder.records import StudentResult

    path = Path(out_dir) / student_folder(student) / "record.json"
    return StudentResult.loads(path.read_text(encoding="utf-8"))


# -- per batch --------------------------------------------------------------------------------
def write_batch(out_dir, batch):
    """Write OUT/gradebook.csv and OUT/summary.json for one graded batch (a BatchResult)."""
    out_dir = Path(out_dir)
    write_atomic(out_dir / "gradebook.csv", gradebook_csv(batch))
    write_atomic(out_dir / "summary.json",
                 json.dumps(summary(batch), ensure_ascii=False, indent=2) + "\n")


def gradebook_csv(batch):
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    dated = any(r.late for r in batch.results)  # a deadline: when, how late, what it cost
    late_columns = ["submitted", "days_late", "late_penalty"] if dated else []
    writer.writerow(["student", "assignment", "score", "max_score", *late_columns]
                    + [c.id for c in batch.checks])
    for result in batch.results:
        earned = {o.check.id: o.score for o in result.outcomes}
        late = ([result.late.submitted, result.late.days, fmt(result.late_penalty)] if result.late
                else ["", "", ""])[:len(late_columns)]
        writer.writerow([clean(result.student), batch.assignment, fmt(result.score), fmt(result.max_score), *late]
                        + [fmt(earned[c.id]) if c.id in earned else "" for c in batch.checks])
    return buffer.getvalue()


def summary(batch):
    """The instructor's view of a batch (never given to students)."""
    results = batch.results
    statuses = [r.status for r in results]
    return {
        "assignment": batch.assignment,
        "title": batch.title,
        "language": batch.language,
        "course": batch.course,
        "sandbox": batch.sandbox,
        "max_score": batch.max_score,
        "checks": [c.id for c in batch.checks],
        "counts": {"students": len(results),
                   **{s: statuses.count(s) for s in ("full", "partial", "zero", "not_graded", "grader_error")},
                   "with_load_problems": sum(1 for r in results if r.problems)},
        "students": [{
            "student": clean(r.student), "folder": student_folder(r.student), "source": r.source,
            "score": r.score, "max_score": r.max_score, "status": s, "failed": r.failed_ids,
            **({"late": {**r.late.to_json(), "penalty": r.late_penalty}} if r.late else {}),
            "problems": [clean(p["en"]) for p in r.problems], "execution_time": r.execution_time,
            "diagnoses": [{"target": d.target, "mistake": d.mistake} for d in r.diagnoses],
            "localizations": [{k: v for k, v in localization_json(x, "en").items() if k != "text"}
                              for x in r.localizations],
            **({"report_error": clean(r.report_error)} if r.report_error else {}),
        } for r, s in zip(results, statuses)],
        "grader_errors": [{"student": clean(r.student), "check": o.check.id,
                           "message": clean(o.message["en"]) if o.message else ""}
                          for r in results for o in r.grader_errors],
        "timing": batch.timing,
    }
