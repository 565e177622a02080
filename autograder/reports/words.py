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
