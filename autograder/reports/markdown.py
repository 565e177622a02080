"""``feedback.md``: one student's report as Markdown (rendered from the record). Only
student-facing texts go in: check titles, verdict messages, hints and diagnoses; in Markdown
nothing outside our own code spans can form a link, an image or HTML."""

from pathlib import Path

from autograder.records import to_fix
from autograder.reports.words import (NOT_GRADED, WORDS, by_target, fmt, inline, not_graded, other_problems,
                                      skipped, table_cell)
from autograder.texts import code_span


def feedback_md(result, lang, title=None):
    words = WORDS[lang]
    source = code_span(Path(result.source).name) if result.source else words["no_file"]
    out = [f"# {words['title']}: {inline(title or result.assignment)}", "",
           f"- **{words['student']}:** {inline(result.student)}",
           f"- **{words['source']}:** {source}",
           f"- **{words['score']}: {fmt(result.score)}/{fmt(result.max_score)}**"]
    if result.late:
        out.append(f"- {inline(result.late.words(result.raw_score)[lang])}")
    out.append("")
    headline = not_graded(result, lang)
    if headline:  # nothing was graded: say so first, and why
        what, _, why = headline.partition(": ")
        out += [f"**{inline(what[:1].upper() + what[1:])}:** {inline(why)}", "",
                NOT_GRADED[lang]["none_ran"], ""]
    problems = other_problems(result)
    if problems:
        out += [f"## {words['problems']}", ""]
        out += [f"- {inline(problem[lang])}" for problem in problems] + [""]
    for target, outcomes in by_target(result.outcomes).items():
        earned, possible = sum(o.score for o in outcomes), sum(o.check.points for o in outcomes)
        diagnosis, elsewhere = result.diagnosis_for(target), result.explained_elsewhere(target)
        out += [f"## `{target}`: {fmt(earned)}/{fmt(possible)}", ""]
        findings = result.findings_for(target)
        out += _diagnosis(diagnosis, outcomes, lang)
        for finding in findings:
            out += _diagnosis(finding, outcomes, lang, "finding", "because_finding")
        out += _localization(result.localization_for(target), diagnosis, lang)
        for other, checks in elsewhere:
            out += [f"**{words['elsewhere'].format(part=code_span(other.target))}:** "
                    f"{inline(other.title[lang])}", "",
                    f"- {words['because']}: " + ", ".join(f"`{c}`" for c in checks), ""]
        out += [f"| | {words['check']} | {words['points']} |", "|---|---|---|"]
        for o in outcomes:
            mark = "✓" if o.passed else "✗"
            name = f"`{o.check.id}` {table_cell(o.check.title[lang])}"
            if o.status == "skipped":
                name += f" ({words['skipped'].lower()})"
            out.append(f"| {mark} | {name} | {fmt(o.score)}/{fmt(o.check.points)} |")
        out.append("")
        out += _failures(outcomes, result.problems, lang, diagnosis, *findings, *(d for d, _ in elsewhere))
    if result.outcomes and all(o.passed for o in result.outcomes):
        out += [words["all_passed"], ""]
    return "\n".join(out)


def _diagnosis(diagnosis, outcomes, lang, label="diagnosis", because="because"):
    """A target's section leads with its diagnosed mistake (then its findings: one error, failures
    that follow) and the checks it explains."""
    if diagnosis is None:
        return []
    words = WORDS[lang]
    out = [f"**{words[label]}:** {inline(diagnosis.title[lang])}", "",
           f"- *{words['look']}:* {inline(diagnosis.hint[lang])}"]
    explained = [o.check.id for o in outcomes if not o.passed and o.check.id in diagnosis.explains]
    if explained:
        out.append(f"- {words[because]}: " + ", ".join(f"`{c}`" for c in explained))
    return out + [""]


def _localization(localization, diagnosis, lang):
    """Where the target's computation first differs from the reference's, when no catalogued
    mistake is named (that leads)."""
    if localization is None or diagnosis is not None:
        return []
    return [f"**{WORDS[lang]['localization']}:** {inline(localization.text[lang])}", ""]


def _failures(outcomes, problems, lang, *diagnoses):
    """Failed checks not explained by the diagnoses, with message and hint; skipped ones
    grouped by their reason."""
    words = WORDS[lang]
    out = []
    failed = to_fix(outcomes, *diagnoses)
    if failed:
        out += [f"**{words['fix']}:**", ""]
        for o in failed:
            message = o.message[lang] if o.message else words["error"]
            out.append(f"- ✗ `{o.check.id}` {inline(o.check.title[lang])}: {inline(message)}")
            if o.status != "error":
                out.append(f"  - *{words['look']}:* {inline(o.check.hint[lang])}")
        out.append("")
    reasons = {}
    for o in outcomes:
        if o.status == "skipped" and o.message and o.message not in problems:
            reasons.setdefault(o.message[lang], []).append(f"`{o.check.id}`")
    for reason, ids in reasons.items():
        out.append(f"- {', '.join(ids)}: {inline(skipped(reason, lang))}")
    return out + ([""] if reasons else [])
