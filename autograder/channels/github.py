"""GitHub Actions: workflow commands (annotations) and the job's Markdown step summary.

``::error title=T::M`` per check that did not pass, escaped as GitHub's runner expects
(``toolkit/packages/core/src/command.ts``): in the message ``%``, ``\\r`` and ``\\n``; in a
property also ``:`` and ``,``. Everything shown is the student-facing text of results.json.
"""

import os
from pathlib import Path

from autograder import reports
from autograder.texts import clean, markdown_inline


def escape_data(text):
    return str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text):
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(kind, message, **properties):
    """One workflow command line, e.g. ``command("error", "msg", title="t")``."""
    props = ",".join(f"{key}={escape_property(value)}" for key, value in properties.items())
    return f"::{kind}{' ' + props if props else ''}::{escape_data(message)}"


WORDS = {
    "id": {"skipped": "{student}: {n} pemeriksaan {assignment} dilewati",
           "not_written": "{student}: laporan tidak tertulis",
           "header": "| mahasiswa | nilai | status | pemeriksaan yang belum lulus |"},
    "en": {"skipped": "{student}: {n} check(s) of {assignment} skipped",
           "not_written": "{student}: reports not written",
           "header": "| student | score | status | checks not passed |"},
}


def workflow_commands(batch, lang):
    """The lines to print: per student an ``error`` per failed, timed-out or faulted check, a
    ``warning`` per loading problem and per reason checks were skipped, then a ``notice`` with
    the points. A submission that could not be graded at all (broken or missing) is one
    ``error`` that says why ("notebook broken: ..."), not a warning and a list of skips."""
    words = WORDS[lang]
    lines = []
    for result in batch.results:
        student = clean(result.student)
        data = reports.results_json(result, lang, batch.title)
        headline = reports.not_graded(result, lang)
        reason = next((o.message for o in result.outcomes if o.message), None) if headline else None
        if headline:
            lines.append(command("error", clean(headline), title=f"{student}: {batch.assignment}"))
        for problem in result.problems:
            if problem != reason:  # the headline has said it
                lines.append(command("warning", clean(problem[lang]), title=f"{student}: {batch.assignment}"))
        skipped = {}
        for outcome, test in zip(result.outcomes, data["tests"]):
            if outcome.status in ("failed", "timeout", "error"):
                lines.append(command("error", test["output"] or test["name"],
                                     title=f"{student}: {test['name']}"))
            elif outcome.status == "skipped" and not headline:
                skipped.setdefault(test["output"], []).append(outcome.check.id)
        for reason_text, ids in skipped.items():
            lines.append(command("warning", f"{reason_text} ({', '.join(ids)})", title=words["skipped"].format(
                student=student, n=len(ids), assignment=batch.assignment)))
        if result.report_error:
            lines.append(command("error", clean(result.report_error), title=words["not_written"].format(student=student)))
        lines.append(command("notice", f"Points {reports.fmt(result.score)}/{reports.fmt(result.max_score)} {student}",
                             title=f"{batch.assignment}: {student}"))
    return lines


def step_summary(batch, lang):
    """Markdown for $GITHUB_STEP_SUMMARY: a score table, then each student's feedback.md. A
    submission that could not be graded says why in the table ("notebook broken: ...")."""
    from autograder.reports.class_report import WORDS as STATUS

    out = [f"## {_text(batch.assignment)}: {_text(batch.title)}", "",
           WORDS[lang]["header"], "|---|---|---|---|"]
    for result in batch.results:
        failed = _text(reports.not_graded(result, lang) or "") or (
            ", ".join(f"`{c}`" for c in result.failed_ids) or "—")
        out.append(f"| {_text(result.student)} | {reports.fmt(result.score)}/{reports.fmt(result.max_score)} "
                   f"| {STATUS[lang][result.status].lower()} | {failed} |")
    out.append("")
    for result in batch.results:
        out += [f"<details><summary>{_text(result.student)}: {reports.fmt(result.score)}/"
                f"{reports.fmt(result.max_score)}</summary>", "",
                reports.feedback_md(result, lang, batch.title), "", "</details>", ""]
    return "\n".join(out) + "\n"


def _text(text):
    """A student's name or a title in a table cell: no markup, no HTML, no pipes."""
    return markdown_inline(" ".join(str(text).split())).replace("|", "\\|")


def write_step_summary(batch, lang, environ=os.environ):
    """Append the summary to $GITHUB_STEP_SUMMARY when it is set; returns the path or None."""
    path = environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return None
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(step_summary(batch, lang))
    return Path(path)
