"""Write what grading found: per student ``results.json`` (Gradescope's schema) and
``feedback.md``; per batch ``gradebook.csv`` and ``summary.json``.

Only student-facing texts go into a student's files: check titles, the verdict
messages and the hints. Check code, inputs, expected values and the worker's
output never do. Every file is written atomically (a temporary file in the same
folder, then ``os.replace``), so a reader never sees half a report.
"""

import csv
import io
import json
import os
import re
import tempfile
from pathlib import Path

# summary.json's "sandbox" when the caller does not say how student code was isolated.
SANDBOX = "unknown"

WORDS = {
    "id": {
        "title": "Umpan balik", "student": "Mahasiswa", "score": "Nilai", "source": "Berkas",
        "problems": "Masalah saat memuat kode", "check": "Pemeriksaan", "points": "Poin",
        "fix": "Yang perlu diperbaiki", "look": "Di mana mencari", "skipped": "Dilewati",
        "all_passed": "Semua pemeriksaan lulus.", "no_file": "(tidak ada)",
        "error": "Kesalahan internal autograder", "summary": "Nilai {score}/{max}.",
        "none_loaded": "Tidak ada pemeriksaan yang dapat dijalankan.",
    },
    "en": {
        "title": "Feedback", "student": "Student", "score": "Score", "source": "File",
        "problems": "Problems while loading the code", "check": "Check", "points": "Points",
        "fix": "What to fix", "look": "Where to look", "skipped": "Skipped",
        "all_passed": "All checks passed.", "no_file": "(none)",
        "error": "Internal autograder error", "summary": "Score {score}/{max}.",
        "none_loaded": "No check could run.",
    },
}


def fmt(number):
    """Points as a person writes them: 3, 2.5."""
    return f"{number:g}"


def student_folder(student):
    """A folder name for a student that stays inside the output folder."""
    name = re.sub(r"[^\w.@+-]", "_", student).lstrip(".")
    return name or "_"


def status(result):
    """One word for the gradebook: full, partial, zero, not_graded or grader_error."""
    if result.grader_errors:
        return "grader_error"
    if result.outcomes and all(o.status == "skipped" for o in result.outcomes):
        return "not_graded"
    if result.max_score and result.score >= result.max_score:
        return "full"
    return "partial" if result.score > 0 else "zero"


def failed_ids(result):
    return [o.check.id for o in result.outcomes if o.status != "passed"]


# -- per student ------------------------------------------------------------------------------
def results_json(result, lang):
    words = WORDS[lang]
    tests = []
    for outcome in result.outcomes:
        check = outcome.check
        tests.append({
            "name": f"{check.id}: {check.title[lang]}",
            "score": outcome.score,
            "max_score": check.points,
            "status": "passed" if outcome.status == "passed" else "failed",
            "output": _test_output(outcome, lang),
            "visibility": "visible",
            "extra_data": {"check": check.id, "category": check.category},
        })
    lines = [words["summary"].format(score=fmt(result.score), max=fmt(result.max_score))]
    lines += [f"- {problem[lang]}" for problem in result.problems]
    if status(result) == "not_graded":
        lines.append(words["none_loaded"])
        reasons = {o.message[lang] for o in result.outcomes if o.message and o.message not in result.problems}
        lines += [f"- {reason}" for reason in sorted(reasons)]
    report = {
        "score": result.score,
        "max_score": result.max_score,
        "execution_time": result.execution_time,
        "output": "\n".join(lines),
        "visibility": "visible",
        "tests": tests,
    }
    if getattr(result, "fingerprint", None):  # lets an interrupted batch resume (autograder.resume)
        report["extra_data"] = {"fingerprint": result.fingerprint, "source": result.source,
                                "problems": result.problems}
    return report


def _test_output(outcome, lang):
    words = WORDS[lang]
    message = outcome.message[lang] if outcome.message else ""
    if outcome.status == "passed":
        return ""
    if outcome.status == "failed":
        return f"{message}\n{words['look']}: {outcome.check.hint[lang]}".strip()
    if outcome.status == "skipped":
        return _skipped(message, lang)
    return message or words["error"]


def _skipped(reason, lang):
    """'Skipped: <reason>', unless the reason already says so."""
    skipped = WORDS[lang]["skipped"]
    return reason if reason.startswith(skipped) else f"{skipped}: {reason}"


def feedback_md(result, lang, title=None):
    words = WORDS[lang]
    out = [f"# {words['title']}: {title or result.assignment}", "",
           f"- **{words['student']}:** {_inline(result.student)}",
           f"- **{words['source']}:** {_inline(Path(result.source).name) if result.source else words['no_file']}",
           f"- **{words['score']}: {fmt(result.score)}/{fmt(result.max_score)}**", ""]
    if result.problems:
        out += [f"## {words['problems']}", ""]
        out += [f"- {_inline(problem[lang])}" for problem in result.problems] + [""]
    for target, outcomes in _by_target(result.outcomes).items():
        earned, possible = sum(o.score for o in outcomes), sum(o.check.points for o in outcomes)
        out += [f"## `{target}`: {fmt(earned)}/{fmt(possible)}", "",
                f"| | {words['check']} | {words['points']} |", "|---|---|---|"]
        for o in outcomes:
            mark = "✓" if o.status == "passed" else "✗"
            name = f"`{o.check.id}` {_cell(o.check.title[lang])}"
            if o.status == "skipped":
                name += f" ({words['skipped'].lower()})"
            out.append(f"| {mark} | {name} | {fmt(o.score)}/{fmt(o.check.points)} |")
        out.append("")
        out += _failures(outcomes, result.problems, lang)
    if result.outcomes and all(o.status == "passed" for o in result.outcomes):
        out += [words["all_passed"], ""]
    return "\n".join(out)


def _failures(outcomes, problems, lang):
    """Failed checks with message and hint; skipped ones grouped by their reason."""
    words = WORDS[lang]
    out = []
    failed = [o for o in outcomes if o.status in ("failed", "error")]
    if failed:
        out += [f"**{words['fix']}:**", ""]
        for o in failed:
            message = o.message[lang] if o.message else words["error"]
            out.append(f"- ✗ `{o.check.id}` {_inline(o.check.title[lang])}: {_inline(message)}")
            if o.status == "failed":
                out.append(f"  - *{words['look']}:* {_inline(o.check.hint[lang])}")
        out.append("")
    reasons = {}
    for o in outcomes:
        if o.status == "skipped" and o.message and o.message not in problems:
            reasons.setdefault(o.message[lang], []).append(f"`{o.check.id}`")
    for reason, ids in reasons.items():
        out.append(f"- {', '.join(ids)}: {_inline(_skipped(reason, lang))}")
    return out + ([""] if reasons else [])


def _by_target(outcomes):
    groups = {}
    for outcome in outcomes:
        groups.setdefault(outcome.check.target, []).append(outcome)
    return groups


def _inline(text):
    """One line of Markdown: no raw newlines or HTML from messages."""
    return " ".join(str(text).split()).replace("<", "&lt;").replace(">", "&gt;")


def _cell(text):
    return _inline(text).replace("|", "\\|")


def write_student(out_dir, result, lang, title=None):
    """Write OUT/<student>/results.json and feedback.md; returns the folder."""
    folder = Path(out_dir) / student_folder(result.student)
    write_atomic(folder / "results.json", json.dumps(results_json(result, lang), ensure_ascii=False, indent=2) + "\n")
    write_atomic(folder / "feedback.md", feedback_md(result, lang, title))
    return folder


# -- per batch --------------------------------------------------------------------------------
def write_batch(out_dir, results, checks, assignment, lang, timing, title=None, sandbox=SANDBOX):
    """Write OUT/gradebook.csv and OUT/summary.json for one graded batch."""
    out_dir = Path(out_dir)
    write_atomic(out_dir / "gradebook.csv", gradebook_csv(results, checks, assignment))
    write_atomic(out_dir / "summary.json", json.dumps(
        summary(results, checks, assignment, lang, timing, title, sandbox), ensure_ascii=False, indent=2) + "\n")


def gradebook_csv(results, checks, assignment):
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["student", "assignment", "score", "max_score"] + [c.id for c in checks])
    for result in results:
        earned = {o.check.id: o.score for o in result.outcomes}
        writer.writerow([result.student, assignment, fmt(result.score), fmt(result.max_score)]
                        + [fmt(earned[c.id]) if c.id in earned else "" for c in checks])
    return buffer.getvalue()


def summary(results, checks, assignment, lang, timing, title=None, sandbox=SANDBOX):
    """The instructor's view of a batch (never given to students)."""
    statuses = [status(r) for r in results]
    return {
        "assignment": assignment,
        "title": title or assignment,
        "language": lang,
        "sandbox": sandbox,
        "max_score": sum(c.points for c in checks),
        "checks": [c.id for c in checks],
        "counts": {"students": len(results),
                   **{s: statuses.count(s) for s in ("full", "partial", "zero", "not_graded", "grader_error")},
                   "with_load_problems": sum(1 for r in results if r.problems)},
        "students": [{
            "student": r.student, "folder": student_folder(r.student), "source": r.source,
            "score": r.score, "max_score": r.max_score, "status": s, "failed": failed_ids(r),
            "problems": [p["en"] for p in r.problems], "execution_time": r.execution_time,
        } for r, s in zip(results, statuses)],
        "grader_errors": [{"student": r.student, "check": o.check.id, "message": o.message["en"] if o.message else ""}
                          for r in results for o in r.grader_errors],
        "timing": timing,
    }


def write_atomic(path, text):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
        os.chmod(temporary, 0o644)  # mkstemp makes it 0600; reports are meant to be read
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
