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


def workflow_commands(batch, lang):
    """The lines to print: per student an ``error`` per failed, timed-out or faulted check, a
    ``warning`` per loading problem and per reason checks were skipped, then a ``notice`` with
    the points."""
    lines = []
    for result in batch.results:
        student = clean(result.student)
        data = reports.results_json(result, lang, batch.title)
        for problem in result.problems:
            lines.append(command("warning", clean(problem[lang]), title=f"{student}: {batch.assignment}"))
        skipped = {}
        for outcome, test in zip(result.outcomes, data["tests"]):
            if outcome.status in ("failed", "timeout", "error"):
                lines.append(command("error", test["output"] or test["name"],
                                     title=f"{student}: {test['name']}"))
            elif outcome.status == "skipped":
                skipped.setdefault(test["output"], []).append(outcome.check.id)
        for reason, ids in skipped.items():
            lines.append(command("warning", f"{reason} ({', '.join(ids)})",
                                 title=f"{student}: {len(ids)} check(s) of {batch.assignment} skipped"))
        if result.report_error:
            lines.append(command("error", clean(result.report_error), title=f"{student}: reports not written"))
        lines.append(command("notice", f"Points {reports.fmt(result.score)}/{reports.fmt(result.max_score)} {student}",
                             title=f"{batch.assignment}: {student}"))
    return lines


def step_summary(batch, lang):
    """Markdown for $GITHUB_STEP_SUMMARY: a score table, then each student's feedback.md."""
    out = [f"## {_text(batch.assignment)}: {_text(batch.title)}", "",
           "| student | score | status | checks not passed |", "|---|---|---|---|"]
    for result in batch.results:
        failed = ", ".join(f"`{c}`" for c in result.failed_ids) or "—"
        out.append(f"| {_text(result.student)} | {reports.fmt(result.score)}/{reports.fmt(result.max_score)} "
                   f"| {result.status} | {failed} |")
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
