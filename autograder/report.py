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
import os
import re
import tempfile
from pathlib import Path

from autograder.records import to_fix
from autograder.texts import clean, code_span, markdown_inline

WORDS = {
    "id": {
        "title": "Umpan balik", "student": "Mahasiswa", "score": "Nilai", "source": "Berkas",
        "problems": "Masalah saat memuat kode", "check": "Pemeriksaan", "points": "Poin",
        "fix": "Yang perlu diperbaiki", "look": "Petunjuk", "skipped": "Dilewati",
        "all_passed": "Semua pemeriksaan lulus.", "no_file": "(tidak ada)",
        "error": "Kesalahan internal autograder", "summary": "Nilai {score}/{max}.",
        "none_loaded": "Tidak ada pemeriksaan yang dapat dijalankan.",
        "diagnosis": "Kesalahan yang dikenali", "because": "Gagal karena kesalahan ini",
        "elsewhere": "Akibat kesalahan yang dikenali di {part}",
    },
    "en": {
        "title": "Feedback", "student": "Student", "score": "Score", "source": "File",
        "problems": "Problems while loading the code", "check": "Check", "points": "Points",
        "fix": "What to fix", "look": "Where to look", "skipped": "Skipped",
        "all_passed": "All checks passed.", "no_file": "(none)",
        "error": "Internal autograder error", "summary": "Score {score}/{max}.",
        "none_loaded": "No check could run.",
        "diagnosis": "Recognised mistake", "because": "Failed because of this mistake",
        "elsewhere": "Caused by the mistake recognised in {part}",
    },
}


def fmt(number):
    """Points as a person writes them: 3, 2.5."""
    return f"{number:g}"


def student_folder(student):
    """A folder name for a student that stays inside the output folder."""
    name = re.sub(r"[^\w.@+-]", "_", student).lstrip(".")
    return name or "_"


# -- per student ------------------------------------------------------------------------------
def results_json(result, lang, title=None):
    """Gradescope's results.json for one student."""
    words = WORDS[lang]
    explained = _explained(result)
    tests = [{
        "name": clean(f"{o.check.id}: {o.check.title[lang]}"),
        "score": o.score,
        "max_score": o.check.points,
        "status": "passed" if o.passed else "failed",
        "output": clean(_test_output(o, lang, explained.get(o.check.id))),
        "visibility": "visible",
        "extra_data": {"check": o.check.id, "category": o.check.category, "outcome": o.status,
                       **({"diagnosis": explained[o.check.id].mistake} if o.check.id in explained else {})},
    } for o in result.outcomes]
    lines = [words["summary"].format(score=fmt(result.score), max=fmt(result.max_score))]
    lines += [f"- {problem[lang]}" for problem in result.problems]
    if result.status == "not_graded":
        lines.append(words["none_loaded"])
        reasons = {o.message[lang] for o in result.outcomes if o.message and o.message not in result.problems}
        lines += [f"- {reason}" for reason in sorted(reasons)]
    for diagnosis in result.diagnoses:
        lines.append(f"{words['diagnosis']} ({diagnosis.target}): {diagnosis.title[lang]}")
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
    return data


def _explained(result):
    """check id -> the Diagnosis that explains its failure."""
    return {check: d for d in result.diagnoses for check in d.explains}


def _test_output(outcome, lang, diagnosis=None):
    words = WORDS[lang]
    message = outcome.message[lang] if outcome.message else ""
    if outcome.passed:
        return ""
    if diagnosis is not None:  # the root cause first, and its hint instead of the check's own
        return (f"{words['diagnosis']}: {diagnosis.title[lang]}\n{message}\n"
                f"{words['look']}: {diagnosis.hint[lang]}").replace("\n\n", "\n").strip()
    if outcome.status in ("failed", "timeout"):
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
    source = code_span(Path(result.source).name) if result.source else words["no_file"]
    out = [f"# {words['title']}: {_inline(title or result.assignment)}", "",
           f"- **{words['student']}:** {_inline(result.student)}",
           f"- **{words['source']}:** {source}",
           f"- **{words['score']}: {fmt(result.score)}/{fmt(result.max_score)}**", ""]
    if result.problems:
        out += [f"## {words['problems']}", ""]
        out += [f"- {_inline(problem[lang])}" for problem in result.problems] + [""]
    for target, outcomes in _by_target(result.outcomes).items():
        earned, possible = sum(o.score for o in outcomes), sum(o.check.points for o in outcomes)
        diagnosis, elsewhere = result.diagnosis_for(target), result.explained_elsewhere(target)
        out += [f"## `{target}`: {fmt(earned)}/{fmt(possible)}", ""]
        out += _diagnosis(diagnosis, outcomes, lang)
        for other, checks in elsewhere:
            out += [f"**{words['elsewhere'].format(part=code_span(other.target))}:** "
                    f"{_inline(other.title[lang])}", "",
                    f"- {words['because']}: " + ", ".join(f"`{c}`" for c in checks), ""]
        out += [f"| | {words['check']} | {words['points']} |", "|---|---|---|"]
        for o in outcomes:
            mark = "✓" if o.passed else "✗"
            name = f"`{o.check.id}` {_cell(o.check.title[lang])}"
            if o.status == "skipped":
                name += f" ({words['skipped'].lower()})"
            out.append(f"| {mark} | {name} | {fmt(o.score)}/{fmt(o.check.points)} |")
        out.append("")
        out += _failures(outcomes, result.problems, lang, diagnosis, *(d for d, _ in elsewhere))
    if result.outcomes and all(o.passed for o in result.outcomes):
        out += [words["all_passed"], ""]
    return "\n".join(out)


def _diagnosis(diagnosis, outcomes, lang):
    """A target's section leads with its diagnosed mistake and the checks it explains."""
    if diagnosis is None:
        return []
    words = WORDS[lang]
    out = [f"**{words['diagnosis']}:** {_inline(diagnosis.title[lang])}", "",
           f"- *{words['look']}:* {_inline(diagnosis.hint[lang])}"]
    explained = [o.check.id for o in outcomes if not o.passed and o.check.id in diagnosis.explains]
    if explained:
        out.append(f"- {words['because']}: " + ", ".join(f"`{c}`" for c in explained))
    return out + [""]


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
            out.append(f"- ✗ `{o.check.id}` {_inline(o.check.title[lang])}: {_inline(message)}")
            if o.status != "error":
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
    """One line of Markdown in which only our own code spans are markup."""
    return markdown_inline(" ".join(str(text).split()))


def _cell(text):
    return _inline(text).replace("|", "\\|")


def write_student(out_dir, result, title=None, lang="id"):
    """Write OUT/<student>/record.json, results.json, feedback.md and feedback.html (the same
    with pictures); returns the folder.
    The record goes last: a folder with a record has a complete set of reports."""
    from autograder.feedback_html import feedback_html  # late: feedback_html imports report

    folder = Path(out_dir) / student_folder(result.student)
    write_atomic(folder / "results.json",
                 json.dumps(results_json(result, lang, title), ensure_ascii=False, indent=2) + "\n")
    write_atomic(folder / "feedback.md", feedback_md(result, lang, title))
    write_atomic(folder / "feedback.html", feedback_html(result, lang, title))
    write_atomic(folder / "record.json", result.dumps())
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
    writer.writerow(["student", "assignment", "score", "max_score"] + [c.id for c in batch.checks])
    for result in batch.results:
        earned = {o.check.id: o.score for o in result.outcomes}
        writer.writerow([clean(result.student), batch.assignment, fmt(result.score), fmt(result.max_score)]
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
            "problems": [clean(p["en"]) for p in r.problems], "execution_time": r.execution_time,
            "diagnoses": [{"target": d.target, "mistake": d.mistake} for d in r.diagnoses],
            **({"report_error": clean(r.report_error)} if r.report_error else {}),
        } for r, s in zip(results, statuses)],
        "grader_errors": [{"student": clean(r.student), "check": o.check.id,
                           "message": clean(o.message["en"]) if o.message else ""}
                          for r in results for o in r.grader_errors],
        "timing": batch.timing,
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
