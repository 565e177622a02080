"""What grading found, as frozen records that survive a round trip through JSON.

Every report (Gradescope ``results.json``, ``feedback.md``, ``gradebook.csv``,
``summary.json``) is rendered from these records, and resuming a batch reads them
back from ``OUT/<student>/record.json``: nothing is re-parsed from a rendered report.
"""

import json
from dataclasses import dataclass, field, replace

from autograder.checks.registry import CheckInfo
from autograder.late import Lateness
from autograder.texts import Bilingual

# One check's verdict. "skipped" carries its reason; "error" is a fault of the grader
# itself; "timeout" means the student's code ran out of time on this check.
OUTCOME_STATUSES = ("passed", "failed", "skipped", "error", "timeout")
# One student's verdict, for the gradebook and the class summary.
RESULT_STATUSES = ("full", "partial", "zero", "not_graded", "grader_error")
RECORD_VERSION = 1
# Diagnosis.mistake of the findings that group failures (checks.consequences), not catalogue ids.
DERIVED = ("raises", "follows")


@dataclass(frozen=True)
class Outcome:
    check: CheckInfo
    status: str
    score: float
    message: Bilingual | None = None  # why it did not pass

    def __post_init__(self):
        if self.status not in OUTCOME_STATUSES:
            raise ValueError(f"unknown outcome status {self.status!r}")

    @property
    def passed(self):
        return self.status == "passed"

    def to_json(self):
        return {"check": self.check.to_json(), "status": self.status, "score": self.score,
                "message": self.message.to_json() if self.message else None}

    @classmethod
    def from_json(cls, data):
        message = data.get("message")
        return cls(CheckInfo.from_json(data["check"]), data["status"], float(data["score"]),
                   Bilingual.from_json(message) if message else None)


@dataclass(frozen=True)
class Diagnosis:
    """A known mistake recognised in a target by differential testing: the student's outputs
    match a known-buggy variant of the reference and not the reference itself."""

    target: str  # the function or class it is about
    mistake: str  # catalogue id, instructor-facing (e.g. "sdpa.missing_scale")
    title: Bilingual  # the mistake, named for the student
    hint: Bilingual  # what to change and where to look
    explains: tuple = ()  # ids of the failed checks that fail only because of it

    def to_json(self):
        return {"target": self.target, "mistake": self.mistake, "title": self.title.to_json(),
                "hint": self.hint.to_json(), "explains": list(self.explains)}

    @classmethod
    def from_json(cls, data):
        return cls(str(data["target"]), str(data["mistake"]), Bilingual.from_json(data["title"]),
                   Bilingual.from_json(data["hint"]), tuple(data.get("explains", ())))


@dataclass(frozen=True)
class Localization:
    """The first step of a target's computation that differs from the reference's, found by
    comparing the tensors the student's forward made (traced in the worker, for feedback only:
    never a verdict) with the reference's named steps on the same inputs and weights."""

    target: str
    step: str  # the reference step that is not found, e.g. "scaled" (instructor-facing)
    after: tuple  # the steps it is computed from that were found, e.g. ("scores",)
    text: Bilingual  # "`q @ kᵀ` matches; the scaled scores do not (cell 5, line 12)."
    origin: str | None = None  # the student's cell ("cell 5") that computes it, if known
    line: int | None = None
    checks: tuple = ()  # the target's failed checks it is about

    def to_json(self):
        return {"target": self.target, "step": self.step, "after": list(self.after),
                "text": self.text.to_json(), "origin": self.origin, "line": self.line,
                "checks": list(self.checks)}

    @classmethod
    def from_json(cls, data):
        line = data.get("line")
        return cls(str(data["target"]), str(data["step"]), tuple(str(a) for a in data.get("after", ())),
                   Bilingual.from_json(data["text"]),
                   str(data["origin"]) if data.get("origin") is not None else None,
                   int(line) if line is not None else None, tuple(data.get("checks", ())))


@dataclass(frozen=True)
class Picture:
    """Data for one picture in a student's feedback (e.g. attention weights per head on a
    small public input), plain numbers only; rendered by the HTML reports."""

    kind: str  # what it shows and how it is drawn, e.g. "attention_weights", "causality"
    target: str
    title: Bilingual
    data: dict  # JSON-ready: lists of numbers, shapes, labels

    def to_json(self):
        return {"kind": self.kind, "target": self.target, "title": self.title.to_json(),
                "data": self.data}

    @classmethod
    def from_json(cls, data):
        return cls(str(data["kind"]), str(data["target"]), Bilingual.from_json(data["title"]),
                   dict(data["data"]))


def to_fix(outcomes, *diagnoses):
    """The outcomes a student must fix one by one: failed, timed out or faulted, and not
    already explained by one of ``diagnoses`` (those are listed under it; None is none)."""
    explained = {check for d in diagnoses if d is not None for check in d.explains}
    return [o for o in outcomes if o.status in ("failed", "timeout", "error")
            and o.check.id not in explained]


@dataclass(frozen=True)
class StudentResult:
    student: str
    assignment: str
    source: str | None  # the graded file, as the instructor named it
    outcomes: tuple = ()
    problems: tuple = ()  # Bilingual messages about loading the code
    execution_time: float = 0.0
    fingerprint: str | None = None  # what the verdicts depend on (autograder.resume)
    report_error: str | None = None  # writing this student's reports failed (instructor-facing)
    diagnoses: tuple = ()  # Diagnosis: at most one catalogue mistake per target, then checks.consequences'
    pictures: tuple = ()  # Picture
    late: object = None  # late.Lateness of the submission, or None (no deadline or no time)
    localizations: tuple = ()  # Localization, at most one per target (feedback only)

    @property
    def raw_score(self):
        """The points the checks gave, before any late penalty."""
        return sum(o.score for o in self.outcomes)

    @property
    def late_penalty(self):
        return self.late.penalty(self.raw_score) if self.late else 0.0

    @property
    def score(self):
        """The points: the checks' minus the late penalty."""
        return self.raw_score - self.late_penalty

    @property
    def max_score(self):
        return sum(o.check.points for o in self.outcomes)

    @property
    def grader_errors(self):
        return tuple(o for o in self.outcomes if o.status == "error")

    def localization_for(self, target):
        """The Localization of ``target``, or None."""
        return next((x for x in self.localizations if x.target == target), None)

    def diagnosis_for(self, target):
        """The catalogued mistake (Diagnosis) of ``target``, or None."""
        return next((d for d in self.diagnoses if d.target == target and d.mistake not in DERIVED), None)

    def findings_for(self, target):
        """The findings that group ``target``'s failures (an error, failures that follow)."""
        return [d for d in self.diagnoses if d.target == target and d.mistake in DERIVED]

    def explained_elsewhere(self, target):
        """[(Diagnosis of another target, [failed check ids of ``target`` it explains])]: a
        part's mistake seen through the target built on it (a FeedForward bug in the block)."""
        failed = {o.check.id for o in self.outcomes if o.check.target == target and not o.passed}
        found = []
        for diagnosis in self.diagnoses:
            if diagnosis.target != target:
                checks = [c for c in diagnosis.explains if c in failed]
                if checks:
                    found.append((diagnosis, checks))
        return found

    @property
    def failed_ids(self):
        return [o.check.id for o in self.outcomes if not o.passed]

    @property
    def status(self):
        """One word for the gradebook: full, partial, zero, not_graded or grader_error."""
        if self.grader_errors or self.report_error:
            return "grader_error"
        if self.outcomes and all(o.status == "skipped" for o in self.outcomes):
            return "not_graded"
        if self.max_score and self.raw_score >= self.max_score:
            return "full"
        return "partial" if self.raw_score > 0 else "zero"

    def with_changes(self, **changes):
        return replace(self, **changes)

    def to_json(self):
        return {
            "version": RECORD_VERSION, "student": self.student, "assignment": self.assignment,
            "source": self.source, "outcomes": [o.to_json() for o in self.outcomes],
            "problems": [p.to_json() for p in self.problems],
            "execution_time": self.execution_time, "fingerprint": self.fingerprint,
            "report_error": self.report_error,
            "diagnoses": [d.to_json() for d in self.diagnoses],
            "pictures": [p.to_json() for p in self.pictures],
            "late": self.late.to_json() if self.late else None,
            "localizations": [x.to_json() for x in self.localizations],
        }

    @classmethod
    def from_json(cls, data):
        if data.get("version") != RECORD_VERSION:
            raise ValueError(f"record version {data.get('version')!r} is not {RECORD_VERSION}")
        return cls(
            student=str(data["student"]), assignment=str(data["assignment"]),
            source=data.get("source"),
            outcomes=tuple(Outcome.from_json(o) for o in data["outcomes"]),
            problems=tuple(Bilingual.from_json(p) for p in data["problems"]),
            execution_time=float(data["execution_time"]), fingerprint=data.get("fingerprint"),
            report_error=data.get("report_error"),
            diagnoses=tuple(Diagnosis.from_json(d) for d in data.get("diagnoses", ())),
            pictures=tuple(Picture.from_json(p) for p in data.get("pictures", ())),
            late=Lateness.from_json(data.get("late")),
            localizations=tuple(Localization.from_json(x) for x in data.get("localizations", ())))

    def dumps(self):
        # ASCII with escapes: a student's file name or message may hold lone surrogates,
        # which no UTF-8 file can store, and the record must still round-trip exactly.
        # No indent: only json's C encoder is fast, and it does not indent (the record holds
        # the pictures' numbers; people read results.json and the feedback instead).
        return json.dumps(self.to_json(), ensure_ascii=True, separators=(",", ":")) + "\n"

    @classmethod
    def loads(cls, text):
        return cls.from_json(json.loads(text))


@dataclass(frozen=True)
class BatchResult:
    """A graded batch: every student's record, in discovery order, and how it went."""

    assignment: str
    title: str
    language: str
    checks: tuple  # CheckInfo
    results: tuple  # StudentResult
    timing: dict = field(default_factory=dict)
    sandbox: str = "unknown"
    resumed: int = 0  # students whose up-to-date record was kept
    course: str | None = None  # the course.toml graded under, and how it was found

    @property
    def max_score(self):
        return sum(c.points for c in self.checks)
