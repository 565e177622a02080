"""What every report shares: the words of the report files in each language, points as a
person writes them, a student's folder name, grouping and explaining outcomes, and the atomic
write every report file goes through."""

import os
import re
import tempfile
from pathlib import Path

from autograder.texts import markdown_inline

WORDS = {
    "id": {
        "title": "Umpan balik", "student": "Mahasiswa", "score": "Nilai", "source": "Berkas",
        "problems": "Masalah saat memuat kode", "check": "Pemeriksaan", "points": "Poin",
        "fix": "Yang perlu diperbaiki", "look": "Petunjuk", "skipped": "Dilewati",
        "all_passed": "Semua pemeriksaan lulus.", "no_file": "(tidak ada)",
        "error": "Kesalahan internal autograder", "summary": "Nilai {score}/{max}.",
        "diagnosis": "Kesalahan yang dikenali", "because": "Gagal karena kesalahan ini",
        "finding": "Satu temuan", "because_finding": "Gagal karena hal ini saja",
        "elsewhere": "Akibat kesalahan yang dikenali di {part}",
        "localization": "Langkah pertama yang berbeda",
    },
    "en": {
        "title": "Feedback", "student": "Student", "score": "Score", "source": "File",
        "problems": "Problems while loading the code", "check": "Check", "points": "Points",
        "fix": "What to fix", "look": "Where to look", "skipped": "Skipped",
        "all_passed": "All checks passed.", "no_file": "(none)",
        "error": "Internal autograder error", "summary": "Score {score}/{max}.",
        "diagnosis": "Recognised mistake", "because": "Failed because of this mistake",
        "finding": "One finding", "because_finding": "Failed because of this alone",
        "elsewhere": "Caused by the mistake recognised in {part}",
        "localization": "First step that differs",
    },
}


# What happened to a submission no check could run on, first in the line that says why.
NOT_GRADED = {
    "id": {"broken": "notebook rusak", "file": "berkas tidak terbaca", "missing": "tidak ada pengumpulan",
           "other": "tidak dinilai", "grader_error": "kesalahan autograder",
           "none_ran": "Tidak ada pemeriksaan yang dapat dijalankan: perbaiki dan kumpulkan lagi."},
    "en": {"broken": "notebook broken", "file": "file unreadable", "missing": "no submission",
           "other": "not graded", "grader_error": "autograder error",
           "none_ran": "No check could run: fix it and submit again."},
}
# A loading problem that already says "notebook broken" (messages.LOAD_PROBLEMS["bad_notebook"])
# is not said twice: "notebook broken: not valid JSON ..." rather than "notebook broken: The
# notebook is broken (not valid JSON ...)".
_SAYS_BROKEN = {"id": re.compile(r"(?i)^notebook rusak\s*"), "en": re.compile(r"(?i)^(the )?notebook (is )?broken\s*")}


def not_graded(result, lang):
    """Why no check of ``result`` could run, as one line that starts with what happened:
    "notebook broken: <reason>", "no submission: <reason>", "file unreadable: <reason>" or "not
    graded: <reason>" (the code loaded but no worker could run it). None for a record whose
    checks ran (its status is not ``not_graded``)."""
    if result.status != "not_graded":
        return None
    words = NOT_GRADED[lang]
    reason = next((o.message for o in result.outcomes if o.message), None)
    if reason is None:
        return words["other"]
    if reason not in result.problems:  # the loader read it; the sandbox could not run it
        kind = "other"
    elif result.source is None:
        kind = "missing"
    else:
        kind = "broken" if str(result.source).lower().endswith(".ipynb") else "file"
    text = " ".join(reason[lang].split())
    if kind == "broken":
        text = _SAYS_BROKEN[lang].sub("", text, count=1)
        if text.startswith("(") and ")" in text:  # "(not valid JSON ...); open it ..."
            inside, after = text[1:].split(")", 1)
            text = inside + after
    return f"{words[kind]}: {text}"


def other_problems(result):
    """The loading problems of ``result`` that ``not_graded``'s line does not already say."""
    if result.status != "not_graded":
        return list(result.problems)
    reason = next((o.message for o in result.outcomes if o.message), None)
    return [p for p in result.problems if p != reason]


def no_grade(result, lang):
    """Why ``result`` has no grade to put in a gradebook, or None when it has one: nothing
    could be graded (``not_graded``), or the grader itself failed on it (``grader_error``)."""
    if result.status == "grader_error" and not result.report_error:
        messages = dict.fromkeys(" ".join(o.message[lang].split()) for o in result.grader_errors if o.message)
        return f"{NOT_GRADED[lang]['grader_error']}: {'; '.join(messages) or WORDS[lang]['error']}"
    return not_graded(result, lang)


def fmt(number):
    """Points as a person writes them: 3, 2.5."""
    return f"{number:g}"


def student_folder(student):
    """A folder name for a student that stays inside the output folder."""
    name = re.sub(r"[^\w.@+-]", "_", student).lstrip(".")
    return name or "_"


def localized_by(result):
    """{check id: the Localization of its target} for the failed checks a localization is about
    and no diagnosis explains (a catalogued mistake leads)."""
    explained = explained_by(result)
    return {check: x for x in result.localizations for check in x.checks if check not in explained}


def localization_json(localization, lang):
    """A Localization as results.json and summary.json show it."""
    return {"target": localization.target, "step": localization.step,
            "after": list(localization.after), "origin": localization.origin,
            "line": localization.line, "text": localization.text[lang]}


def explained_by(result):
    """check id -> the Diagnosis that explains its failure."""
    return {check: d for d in result.diagnoses for check in d.explains}


def skipped(reason, lang):
    """'Skipped: <reason>', unless the reason already says so."""
    skipped = WORDS[lang]["skipped"]
    return reason if reason.startswith(skipped) else f"{skipped}: {reason}"


def by_target(outcomes):
    groups = {}
    for outcome in outcomes:
        groups.setdefault(outcome.check.target, []).append(outcome)
    return groups


def inline(text):
    """One line of Markdown in which only our own code spans are markup."""
    return markdown_inline(" ".join(str(text).split()))


def table_cell(text):
    return inline(text).replace("|", "\\|")


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
