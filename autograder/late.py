"""Late submissions: one rule, applied the same way by every channel.

``course.toml`` gives each assignment a ``deadline`` (``[assignments.NAME]``) and the course one
policy (``[late]``): a grace period, a penalty per started day late, a cap, and per-student
extensions read from a roster column. ``assess`` turns a submission time into a ``Lateness``
(a frozen record, kept in the student's record); ``Lateness.penalty(raw)`` is the points taken
from the points earned. ``autograder grade`` reads the time from ``timestamp.txt`` beside the
submission (nbgrader's file: ``nbgrader collect`` and the exchange write it); under ``nbgrader
autograde`` the kit's ``CourseLatePenalty`` plugin gives nbgrader's ``AssignLatePenalties`` the
same penalty (autograder/nbgrader/late.py).

The rule: late = submitted - (deadline + extension). Within the grace period a submission is
on time. After it, each started day (counted from the deadline, grace included) costs
``penalty_per_day`` percent of the points earned, up to ``max_penalty`` percent.
"""

import csv
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from autograder.texts import bilingual

TIMESTAMP_FILE = "timestamp.txt"
DAY = 86400.0


class LateError(ValueError):
    """A roster or a timestamp that cannot be read; the message names the file."""


@dataclass(frozen=True)
class Policy:
    grace_minutes: float = 0.0
    penalty_per_day: float = 0.0  # percent of the points earned
    max_penalty: float = 100.0  # percent
    extensions: dict = field(default_factory=dict)  # student -> days
    roster: str = ""  # where the extensions were read from (for the docs and errors)

    def describe(self):
        """What the plan's fingerprint keeps of the policy (extensions are per student)."""
        return [self.grace_minutes, self.penalty_per_day, self.max_penalty]


@dataclass(frozen=True)
class Lateness:
    """How late one submission was, under which rule, and the percent it costs."""
    submitted: str  # ISO 8601, UTC
    deadline: str  # ISO 8601, UTC: the assignment's, before the extension
    extension_days: float
    seconds_late: float  # after the deadline plus the extension (0: on time)
    days: int  # started days late counted for the penalty (0 within the grace period)
    percent: float  # of the points earned

    def penalty(self, raw_score):
        return round(raw_score * self.percent / 100.0, 6)

    @property
    def late(self):
        return self.seconds_late > 0

    def to_json(self):
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data):
        return None if data is None else cls(**data)

    def words(self, raw_score):
        """One line for the student (a Bilingual)."""
        ext_id = f" (perpanjangan {_num(self.extension_days)} hari)" if self.extension_days else ""
        ext_en = f" (extension {_num(self.extension_days)} days)" if self.extension_days else ""
        if not self.late:
            return bilingual(f"Dikumpulkan tepat waktu{ext_id}.", f"Submitted on time{ext_en}.")
        late_id, late_en = _duration(self.seconds_late)
        if not self.days:
            return bilingual(f"Terlambat {late_id}{ext_id}, masih dalam masa tenggang: tanpa penalti.",
                             f"{late_en} late{ext_en}, within the grace period: no penalty.")
        cost = _num(self.penalty(raw_score))
        return bilingual(
            f"Terlambat {late_id}{ext_id}: dihitung {self.days} hari, penalti {_num(self.percent)}% "
            f"dari nilai, −{cost} poin.",
            f"{late_en} late{ext_en}: counted as {self.days} day(s), a penalty of "
            f"{_num(self.percent)}% of the points, −{cost} points.")


def assess(policy, deadline, student, submitted):
    """The Lateness of a submission at ``submitted`` (an aware datetime), or None without a
    deadline or a time."""
    if deadline is None or submitted is None or policy is None:
        return None
    extension = float(policy.extensions.get(student, 0.0))
    seconds = (submitted - deadline).total_seconds() - extension * DAY
    seconds = max(0.0, seconds)
    days = 0 if seconds <= policy.grace_minutes * 60 else math.ceil(seconds / DAY)
    percent = min(policy.max_penalty, days * policy.penalty_per_day)
    return Lateness(_iso(submitted), _iso(deadline), extension, seconds, days, float(percent))


def percent_for(policy, seconds_late):
    """The percent for ``seconds_late`` after the (extended) deadline: nbgrader's view."""
    seconds = max(0.0, float(seconds_late))
    days = 0 if seconds <= policy.grace_minutes * 60 else math.ceil(seconds / DAY)
    return float(min(policy.max_penalty, days * policy.penalty_per_day))


def parse_time(text):
    """A timestamp as nbgrader writes it ("2026-03-02 10:15:00.123456 UTC", naive = UTC) or
    ISO 8601 with an offset, as an aware datetime."""
    text = str(text).strip()
    if text.endswith(" UTC") or text.endswith("Z"):
        text = text.removesuffix(" UTC").removesuffix("Z")
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def submission_time(path):
    """The time in ``timestamp.txt`` beside a submitted file (or in its folder), else None."""
    if path is None:
        return None
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    stamp = folder / TIMESTAMP_FILE
    if not stamp.is_file():
        return None
    try:
        return parse_time(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise LateError(f"{stamp}: not a time ({error})") from None


def read_extensions(path, column, student_column="student"):
    """{student: days} from a roster CSV (an empty cell: none)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.DictReader(handle))
            fields = rows and list(rows[0]) or []
    except OSError as error:
        raise LateError(f"cannot read the roster {path}: {error.strerror}") from None
    if rows and (student_column not in fields or column not in fields):
        raise LateError(f"the roster {path} needs the columns {student_column!r} and {column!r}; "
                        f"it has {', '.join(fields)}")
    extensions = {}
    for number, row in enumerate(rows, start=2):
        value = (row.get(column) or "").strip()
        if not value:
            continue
        try:
            days = float(value)
        except ValueError:
            days = -1
        if not (days >= 0 and math.isfinite(days)):
            raise LateError(f"the roster {path}, line {number}: {column} must be a number of days "
                            f">= 0, not {value!r}")
        extensions[row[student_column].strip()] = days
    return extensions


def _iso(moment):
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")


def _num(value):
    return f"{value:g}"


def _duration(seconds):
    """(Indonesian, English) for a duration: days, hours and minutes."""
    span = timedelta(seconds=round(seconds))
    days, rest = span.days, span.seconds
    hours, minutes = rest // 3600, rest % 3600 // 60
    parts_id, parts_en = [], []
    for value, word_id, word_en in ((days, "hari", "d"), (hours, "jam", "h"), (minutes, "menit", "min")):
        if value:
            parts_id.append(f"{value} {word_id}")
            parts_en.append(f"{value} {word_en}")
    return " ".join(parts_id) or "< 1 menit", " ".join(parts_en) or "< 1 min"
