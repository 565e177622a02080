"""One assignment, resolved once: what every grading path needs to know about it.

``course.toml`` and the check registry are read here and nowhere downstream. The CLI,
the batch, the nbgrader plugin and the hidden-cell entry point each get a ``Plan`` and
pass it along; nothing after this module looks an assignment up again.
"""

import functools
import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType

from autograder import config
from autograder.checks import registry
from autograder.loading import read_notebook_file
from autograder.texts import LANGUAGES


@dataclass(frozen=True)
class WorkerLimits:
    """How long and how large one submission's sandboxed worker may run."""

    startup_timeout: float  # fork a worker and load the code
    request_timeout: float  # one request to the worker (a forward takes milliseconds)
    submission_timeout: float  # all checks of one submission
    memory_mb: int  # the worker's address-space limit
    max_restarts: int  # after a crash or hang, before giving up


@dataclass(frozen=True)
class Plan:
    name: str
    title: str  # in ``language``
    titles: object  # texts.Bilingual: the title in each language (course.toml's title, title_en)
    notebook: str  # the file name a submission folder holds, e.g. attention.ipynb
    language: str  # of student-facing texts
    checks: tuple  # registry.Check, in declaration order, with the course's points
    grade_ids: tuple  # nbgrader cell ids of the source notebook (empty without one)
    source_notebook: Path | None
    limits: WorkerLimits
    tolerances: MappingProxyType  # name -> config.Tolerance
    chapter: config.Sizes
    hidden: config.Sizes
    course_path: Path | None
    deadline: object = None  # datetime (aware) or None: see autograder/late.py
    late: object = None  # late.Policy

    def lateness(self, student, submitted):
        """The late.Lateness of ``student``'s submission at ``submitted``, or None."""
        from autograder import late

        return late.assess(self.late, self.deadline, student, submitted)

    @property
    def max_score(self):
        return sum(c.points for c in self.checks)

    @property
    def targets(self):
        """The student's functions and classes, in the order the checks name them."""
        return tuple(dict.fromkeys(c.target for c in self.checks))

    def points_by_target(self):
        points = {}
        for check in self.checks:
            points[check.target] = points.get(check.target, 0.0) + check.points
        return points

    def in_language(self, language):
        if language not in LANGUAGES:
            raise config.ConfigError(f"language must be one of {', '.join(LANGUAGES)}, not {language!r}")
        return replace(self, language=language, title=self.titles[language])

    def fingerprint(self):
        """Everything about the plan that can change a verdict or a report's text."""
        described = {
            "name": self.name, "title": self.title, "language": self.language,
            "checks": [(c.id, c.points) for c in self.checks], "grade_ids": list(self.grade_ids),
            "limits": self.limits.__dict__,
            "tolerances": {k: (t.rtol, t.atol) for k, t in sorted(self.tolerances.items())},
            "chapter": self.chapter.__dict__, "hidden": self.hidden.__dict__,
            # read-only and given cells are taken from it
            "source_notebook": _file_digest(self.source_notebook) if self.source_notebook else None,
            "late": [self.deadline.isoformat() if self.deadline else None,
                     self.late.describe() if self.late else None],
        }
        return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


def resolve(course, name, language=None):
    """The plan of assignment ``name`` in ``course`` (a ``config.Course``)."""
    if name not in course.assignments:
        raise config.ConfigError(f"unknown assignment {name!r}; {course.path or 'course.toml'} "
                                 f"defines: {', '.join(course.assignments)}")
    settings = course.assignments[name]
    declared = registry.declared(name)
    unknown = set(settings.points) - {c.id for c in declared}
    if unknown:
        raise config.ConfigError(f"assignments.{name}.points names unknown checks: "
                                 f"{', '.join(sorted(unknown))}")
    checks = tuple(registry.with_points(c, settings.points[c.id]) if c.id in settings.points else c
                   for c in declared)
    source = settings.source_notebook
    return Plan(
        name=name, title=settings.title, titles=settings.titles(), notebook=settings.notebook,
        language=language or course.language, checks=checks,
        grade_ids=_grade_ids(source) if source else (), source_notebook=source,
        limits=WorkerLimits(course.startup_timeout, course.request_timeout,
                            course.submission_timeout, course.memory_mb, course.max_restarts),
        tolerances=MappingProxyType(dict(course.tolerances)),
        chapter=course.chapter, hidden=course.hidden, course_path=course.path,
        deadline=settings.deadline, late=course.late,
    ).in_language(language or course.language)


def load(name, course_path=None, language=None):
    """Read ``course.toml`` and resolve one assignment."""
    return resolve(config.load(course_path), name, language)


def all_plans(course, language=None):
    """The plan of every assignment ``course.toml`` defines, in its order."""
    return [resolve(course, name, language) for name in course.assignments]


@functools.lru_cache(maxsize=32)
def _file_digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@functools.lru_cache(maxsize=32)
def _grade_ids(path):
    notebook = read_notebook_file(path)
    return tuple(cell.metadata.nbgrader["grade_id"] for cell in notebook.cells
                 if cell.metadata.get("nbgrader", {}).get("grade_id"))
