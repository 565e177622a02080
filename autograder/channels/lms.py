"""The semester gradebook: several output folders (one per assignment) merged into one row
per student, as plain CSV or in the layouts Moodle's and Canvas's gradebook imports read.

- ``csv``: ``student``, then per assignment its score and ``<assignment> max``, then the totals
  and ``notes`` (why a cell is blank: "attention: notebook broken: ...").
- ``canvas``: Canvas's gradebook CSV: ``Student, ID, SIS User ID, SIS Login ID, Section``, then
  one column per assignment named ``<assignment>`` or, when its Canvas id is known,
  ``<assignment> (<id>)``, and a second row ``Points Possible``. Canvas matches a row by ``ID``,
  else ``SIS User ID``, else ``SIS Login ID``; without a roster the student's name (nbgrader's
  student id) goes in ``SIS Login ID``. A column without an id makes a new assignment.
- ``moodle``: Moodle's "Import grades: CSV file": an identifier column to map to a user field
  (``Username``, or ``Email address`` / ``ID number`` from the roster), then one column per
  assignment to map to a grade item, followed by ``<assignment> feedback`` (to map to "Feedback
  for" that item) for an assignment where some student has no grade.

A roster (``--roster roster.csv``) maps the kit's student names to the LMS's identities: a
``student`` column and any of ``name, id, sis_user_id, sis_login_id, section, username, email,
idnumber``. Blank cells mean "no grade": both LMSs leave such a grade as it is. A student
with a record but no grade, because nothing could be graded (a broken or missing notebook) or
the grader itself failed, gets a blank cell too, never a 0 that looks like a grade: a TA looks
at it. The reason ("notebook rusak: ...", in the language the batch was graded in) goes where
the format has room for it: Moodle's feedback column and the CSV's notes; Canvas's gradebook
import has no comment column.
"""

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

from autograder import reports
from autograder.records import StudentResult
from autograder.texts import LANGUAGES, clean

FORMATS = ("csv", "moodle", "canvas")
ROSTER_FIELDS = ("name", "id", "sis_user_id", "sis_login_id", "section", "username", "email", "idnumber")


class GradebookError(Exception):
    """An output folder or roster that cannot be merged; the message says which."""


@dataclass
class Column:
    assignment: str
    title: str
    max_score: float
    source: Path


@dataclass
class Gradebook:
    columns: list = field(default_factory=list)  # Column, in the order the folders were given
    scores: dict = field(default_factory=dict)  # student -> {assignment: score, None: no grade}
    notes: dict = field(default_factory=dict)  # student -> {assignment: why there is no grade,
    #                                              or the late penalty taken from it}


def collect(out_dirs):
    """Read every ``OUT/<student>/record.json`` of each folder (one assignment per folder)."""
    book = Gradebook()
    for out in map(Path, out_dirs):
        if not out.is_dir():
            raise GradebookError(f"{out} is not a folder of reports")
        summary = _summary(out)
        lang = summary.get("language") if summary.get("language") in LANGUAGES else "id"
        records = []
        for path in sorted(out.glob("*/record.json")):
            try:
                records.append(StudentResult.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, KeyError, TypeError) as error:
                raise GradebookError(f"{path} is unreadable: {error}") from None
        names = sorted({r.assignment for r in records} or ({summary["assignment"]} if summary else set()))
        if not names:
            raise GradebookError(f"{out} holds no graded records (OUT/<student>/record.json)")
        for name in names:
            if any(c.assignment == name for c in book.columns):
                raise GradebookError(f"assignment {name!r} is in more than one folder "
                                     f"({', '.join(str(c.source) for c in book.columns if c.assignment == name)}, {out})")
            mine = [r for r in records if r.assignment == name]
            from_summary = summary and summary.get("assignment") == name
            book.columns.append(Column(
                name, str(summary.get("title", name)) if from_summary else name,
                float(summary["max_score"]) if from_summary and "max_score" in summary
                else max((r.max_score for r in mine), default=0.0), out))
            for record in mine:
                why = reports.no_grade(record, lang)
                book.scores.setdefault(record.student, {})[name] = None if why else record.score
                if why:
                    book.notes.setdefault(record.student, {})[name] = why
                elif record.late and record.late.days:  # the points are after the penalty: say so
                    book.notes.setdefault(record.student, {})[name] = record.late.words(record.raw_score)[lang]
    return book


def _summary(out):
    try:
        data = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_roster(path):
    """student -> {field: value} from a CSV with a ``student`` column."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as error:
        raise GradebookError(f"cannot read the roster {path}: {error.strerror}") from None
    if not rows or "student" not in rows[0]:
        raise GradebookError(f"the roster {path} needs a 'student' column "
                             f"(and any of {', '.join(ROSTER_FIELDS)})")
    return {row["student"]: {k: (row.get(k) or "").strip() for k in ROSTER_FIELDS} for row in rows}


def render(book, fmt, roster=None, lms_ids=None):
    """The file's text in format ``fmt`` (one of FORMATS)."""
    roster, lms_ids = roster or {}, lms_ids or {}
    students = sorted(set(book.scores) | set(roster))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    if fmt == "csv":
        header = ["student"]
        for c in book.columns:
            header += [c.assignment, f"{c.assignment} max"]
        writer.writerow(header + ["total", "total max", "notes"])
        for student in students:
            row, total = [_safe(student)], 0.0
            for c in book.columns:
                score = book.scores.get(student, {}).get(c.assignment)
                total += score or 0.0
                row += [_points(score), reports.fmt(c.max_score)]
            notes = "; ".join(f"{a}: {why}" for a, why in book.notes.get(student, {}).items())
            writer.writerow(row + [reports.fmt(total), reports.fmt(sum(c.max_score for c in book.columns)),
                                   _safe(notes)])
    elif fmt == "canvas":
        names = [f"{c.assignment} ({lms_ids[c.assignment]})" if c.assignment in lms_ids else c.assignment
                 for c in book.columns]
        writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section"] + names)
        writer.writerow(["Points Possible", "", "", "", ""] + [reports.fmt(c.max_score) for c in book.columns])
        for student in students:
            who = roster.get(student, {})
            writer.writerow([_safe(who.get("name") or student), _safe(who.get("id", "")),
                             _safe(who.get("sis_user_id", "")),
                             _safe(who.get("sis_login_id") or ("" if who else student)),
                             _safe(who.get("section", ""))]
                            + [_points(book.scores.get(student, {}).get(c.assignment)) for c in book.columns])
    elif fmt == "moodle":
        identifiers = [("Username", "username")] + [
            (label, key) for label, key in (("Email address", "email"), ("ID number", "idnumber"))
            if any(roster.get(s, {}).get(key) for s in students)]
        noted = {a for notes in book.notes.values() for a in notes}
        header = [label for label, _ in identifiers]
        for c in book.columns:
            header += [c.assignment] + ([f"{c.assignment} feedback"] if c.assignment in noted else [])
        writer.writerow(header)
        for student in students:
            who = roster.get(student, {})
            row = [_safe(who.get(key) or (student if key == "username" else "")) for _, key in identifiers]
            for c in book.columns:
                row.append(_points(book.scores.get(student, {}).get(c.assignment)))
                if c.assignment in noted:
                    row.append(_safe(book.notes.get(student, {}).get(c.assignment, "")))
            writer.writerow(row)
    else:
        raise GradebookError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    return buffer.getvalue()


def _points(score):
    return "" if score is None else reports.fmt(score)


def _safe(text):
    """A cell a spreadsheet will not run as a formula (=, +, -, @ first) and without control
    characters: student names come from file names."""
    text = clean(str(text))
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
