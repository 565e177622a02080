"""``course.toml``: the course, its assignments, limits, tolerances and sizes.

Which file: ``--course FILE`` (an explicit path), else ``$AUTOGRADER_COURSE``, else the first
``course.toml`` found from the working directory upwards (as pip finds pyproject.toml), else
the kit's own. ``Course.found_by`` says which of these it was, and every output names the file.

The file is strict: an unknown table or key is an error that names it and suggests the
closest valid one, so a typo never silently falls back to a default.
"""

import difflib
import os
import tomllib
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from autograder import late as late_rules, size_traps
from autograder.texts import bilingual

LANGUAGES = ("id", "en")
BLOCKS = ("given", "own")  # assignments.NAME.blocks
FILE_NAME = "course.toml"
ENVIRONMENT = "AUTOGRADER_COURSE"
KIT_PATH = Path(__file__).resolve().parent.parent / FILE_NAME  # the kit's own course
DEFAULT_PATH = KIT_PATH  # kept for callers that mean the kit's own file


class ConfigError(Exception):
    """course.toml has a value that cannot be used; the message names the key."""


@dataclass(frozen=True)
class Sizes:
    d_model: int
    num_heads: int
    d_ff: int
    batch: int
    length: int
    decoder_length: int


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


@dataclass(frozen=True)
class Assignment:
    name: str
    title: str  # Indonesian; English too when title_en is empty
    notebook: str
    points: dict = field(default_factory=dict)  # check id -> points, overrides the registry
    source_notebook: Path | None = None  # nbgrader source notebook, to spot deleted cells
    title_en: str = ""  # in English; empty: ``title`` serves both languages
    deadline: datetime | None = None  # aware; None: no deadline, nothing is late
    # Where a notebook's earlier blocks come from (assignment 4): "given", the course's reference
    # blocks in a read-only cell; "own", a solution cell where the student pastes their own.
    blocks: str = "given"

    def titles(self):
        """The title in each language (a Bilingual)."""
        return bilingual(self.title, self.title_en or self.title)


@dataclass(frozen=True)
class Course:
    name: str
    language: str
    startup_timeout: float
    request_timeout: float
    submission_timeout: float
    memory_mb: int
    max_restarts: int
    tolerances: dict  # name -> Tolerance
    chapter: Sizes
    hidden: Sizes
    assignments: dict  # name -> Assignment
    path: Path | None = None
    found_by: str = ""  # how ``path`` was chosen: see ``locate``
    late: late_rules.Policy = field(default_factory=late_rules.Policy)

    @property
    def origin(self):
        """The file and how it was found, for logs and summary.json."""
        return f"{self.path} ({self.found_by})" if self.found_by else str(self.path)


DEFAULTS = {
    "course": {"name": "Transformer", "language": "id"},
    "grading": {"startup_timeout": 20, "request_timeout": 5, "submission_timeout": 300,
                "memory_mb": 3072, "max_restarts": 1},
    "tolerances": {
        "float32": {"rtol": 1e-4, "atol": 1e-5},
        "float64": {"rtol": 1e-9, "atol": 1e-10},
        "positional_encoding": {"rtol": 0.0, "atol": 1e-4},
        "property": {"rtol": 0.0, "atol": 1e-5},
    },
    "sizes": {
        "chapter": {"d_model": 16, "num_heads": 4, "d_ff": 32, "batch": 2, "length": 5,
                    "decoder_length": 6},
        "hidden": {"d_model": 36, "num_heads": 3, "d_ff": 40, "batch": 3, "length": 9,
                   "decoder_length": 3},
    },
    "late": {"grace_minutes": 0, "penalty_per_day": 0, "max_penalty": 100, "roster": "",
             "student_column": "student", "extension_column": "extension_days"},
}


# Every table and key course.toml may hold. "*" stands for any name (an assignment, a check
# id); its value is then the schema of each such entry.
SCHEMA = {
    "course": {"name": None, "language": None},
    "grading": {key: None for key in DEFAULTS["grading"]},
    "tolerances": {name: {"rtol": None, "atol": None} for name in DEFAULTS["tolerances"]},
    "sizes": {kind: {key: None for key in keys} for kind, keys in DEFAULTS["sizes"].items()},
    "assignments": {"*": {"title": None, "title_en": None, "notebook": None, "deadline": None,
                          "blocks": None, "points": {"*": None}}},
    "late": {key: None for key in DEFAULTS["late"]},
    # read by autograder.similarity (the class report), which checks the values
    "similarity": {"threshold": None, "kgram": None, "min_fragment_tokens": None,
                   "common_fraction": None},
}
# Keys that were renamed: the old name is an error that gives the new one.
RENAMED = {"grading.check_timeout": "grading.request_timeout"}


def locate(path=None, start=None):
    """(path, how it was found): ``path`` if given, else $AUTOGRADER_COURSE, else the first
    course.toml from ``start`` (default: the working directory) upwards, else the kit's."""
    if path:
        return Path(path), "given"
    if os.environ.get(ENVIRONMENT):
        return Path(os.environ[ENVIRONMENT]), f"${ENVIRONMENT}"
    folder = Path(start or os.getcwd()).resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / FILE_NAME).is_file():
            return candidate / FILE_NAME, "found from the working directory"
    return KIT_PATH, "the kit's own; no course.toml in the working directory or above"


def load(path=None, start=None):
    path, found_by = locate(path, start)
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path} is not valid TOML: {error}") from None
    try:
        course = parse(data, path)
    except ConfigError as error:
        message = str(error)
        raise ConfigError(message if message.startswith(str(path)) else f"{path}: {message}") from None
    return replace(course, found_by=found_by)


def check_keys(data, schema=SCHEMA, where=()):
    """Raise a ConfigError for the first table or key that ``schema`` does not know, with
    the closest valid name (or where a misplaced key belongs)."""
    for key, value in data.items():
        dotted = ".".join((*where, key))
        if dotted in RENAMED:
            raise ConfigError(f"{dotted} was renamed to {RENAMED[dotted]}")
        if key in schema or "*" in schema:
            inner = schema.get(key, schema.get("*"))
            if isinstance(inner, dict) and isinstance(value, dict):
                check_keys(value, inner, (*where, key))
            continue
        kind = "table" if isinstance(value, dict) else "key"
        shown = f"[{dotted}]" if kind == "table" else dotted
        known = list(schema) + [old.rsplit(".", 1)[1] for old in RENAMED
                                if old.rsplit(".", 1)[0] == ".".join(where)]
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        if close:
            better = ".".join((*where, close[0]))
            hint = f"did you mean {f'[{better}]' if isinstance(schema.get(close[0]), dict) else better}?"
            if better in RENAMED:
                hint = f"did you mean {RENAMED[better]}? ({better} was renamed to {RENAMED[better]})"
        else:
            elsewhere = _close_anywhere(key)
            hint = (f"did you mean {elsewhere}?" if elsewhere else
                    f"valid here: {', '.join(k for k in schema if k != '*') or '(none)'}")
        place = f"in [{'.'.join(where)}]" if where else "at the top level"
        raise ConfigError(f"unknown {kind} {shown} {place}; {hint}")


def _close_anywhere(key):
    """The dotted path of the closest key in any table (e.g. a key put in the wrong table)."""
    paths = {}

    def walk(schema, where):
        for name, inner in schema.items():
            if name == "*":
                continue
            paths.setdefault(name, ".".join((*where, name)))
            if isinstance(inner, dict):
                walk(inner, (*where, name))

    walk(SCHEMA, ())
    for old, new in RENAMED.items():
        paths.setdefault(old.rsplit(".", 1)[1], f"{new} (formerly {old})")
    close = difflib.get_close_matches(key, list(paths), n=1, cutoff=0.75)
    return paths[close[0]] if close else None


def parse(data, path=None):
    check_keys(data)
    reader = _Reader(data)
    course = reader.table("course")
    grading = reader.table("grading")
    language = reader.text(course, "course", "language")
    if language not in LANGUAGES:
        raise ConfigError(f"course.language must be one of {', '.join(LANGUAGES)}, not {language!r}")
    tolerances = {}
    for name in DEFAULTS["tolerances"]:
        table = reader.table("tolerances", name)
        tolerances[name] = Tolerance(*(reader.number(table, f"tolerances.{name}", key, minimum=0)
                                       for key in ("rtol", "atol")))
    sizes = {}
    for kind in ("chapter", "hidden"):
        table = reader.table("sizes", kind)
        values = {key: reader.integer(table, f"sizes.{kind}", key, minimum=1)
                  for key in DEFAULTS["sizes"][kind]}
        if values["d_model"] % values["num_heads"] or values["d_model"] % 2:
            raise ConfigError(f"sizes.{kind}: d_model must be even and divisible by num_heads")
        sizes[kind] = Sizes(**values)
    assignments = {}
    for name, table in data.get("assignments", {}).items():
        if not isinstance(table, dict):
            raise ConfigError(f"assignments.{name} must be a table")
        points = table.get("points", {})
        if not isinstance(points, dict) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
                for v in points.values()):
            raise ConfigError(f"assignments.{name}.points must map check ids to numbers >= 0")
        notebook = str(table.get("notebook", f"{name}.ipynb"))
        source = Path(path).parent / "assignments" / "source" / name / notebook if path else None
        for key in ("title", "title_en"):
            if key in table and not isinstance(table[key], str):
                raise ConfigError(f"assignments.{name}.{key} must be a string")
        blocks = table.get("blocks", "given")
        if blocks not in BLOCKS:
            raise ConfigError(f"assignments.{name}.blocks must be one of "
                              f"{', '.join(repr(b) for b in BLOCKS)}, not {blocks!r}")
        assignments[name] = Assignment(
            name=name, title=table.get("title", name), notebook=notebook,
            points=dict(points), source_notebook=source if source and source.is_file() else None,
            title_en=table.get("title_en", ""), deadline=_deadline(table.get("deadline"), name),
            blocks=blocks)
    if not assignments:
        raise ConfigError("course.toml defines no [assignments.<name>] table")
    notebooks = [a.source_notebook for a in assignments.values() if a.source_notebook]
    found = size_traps.traps(sizes["chapter"], sizes["hidden"], notebooks)
    if found:
        raise ConfigError("sizes.hidden: hard-coded sizes would pass the hidden-size checks "
                          "(choose hidden sizes that differ in every quantity):\n  - "
                          + "\n  - ".join(found))
    return Course(
        name=reader.text(course, "course", "name"), language=language,
        startup_timeout=reader.number(grading, "grading", "startup_timeout", minimum=1),
        request_timeout=reader.number(grading, "grading", "request_timeout", minimum=0.1),
        submission_timeout=reader.number(grading, "grading", "submission_timeout", minimum=1),
        memory_mb=reader.integer(grading, "grading", "memory_mb", minimum=700),
        max_restarts=reader.integer(grading, "grading", "max_restarts", minimum=0),
        tolerances=tolerances, chapter=sizes["chapter"], hidden=sizes["hidden"],
        assignments=assignments, path=path, late=_late_policy(reader, path),
    )


def _deadline(value, name):
    """A TOML date-time with its offset (or the same as a string), as an aware datetime."""
    if value is None:
        return None
    moment = value
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            moment = None
    if not isinstance(moment, datetime) or moment.tzinfo is None:
        raise ConfigError(f"assignments.{name}.deadline must be a date-time with its UTC offset "
                          f"(e.g. 2026-03-01T23:59:00+07:00), not {value!r}")
    return moment


def _late_policy(reader, path):
    table = reader.table("late")
    numbers = {key: reader.number(table, "late", key, minimum=0) for key in ("grace_minutes", "penalty_per_day")}
    cap = table["max_penalty"]
    if isinstance(cap, bool) or not isinstance(cap, (int, float)) or not 0 <= cap <= 100:
        raise ConfigError(f"late.max_penalty must be a number from 0 to 100, not {cap!r}")
    numbers["max_penalty"] = float(cap)
    roster = reader.text(table, "late", "roster")
    extensions = {}
    if roster:
        where = Path(path).parent / roster if path else Path(roster)
        try:
            extensions = late_rules.read_extensions(where, reader.text(table, "late", "extension_column"),
                                                    reader.text(table, "late", "student_column"))
        except late_rules.LateError as error:
            raise ConfigError(f"late.roster must be a readable CSV file next to course.toml, not "
                              f"{roster!r}: {error}") from None
    return late_rules.Policy(extensions=extensions, roster=roster, **numbers)


class _Reader:
    """Looks values up with defaults and turns a wrong type into a ConfigError."""

    def __init__(self, data):
        self.data = data

    def table(self, *keys):
        value, default = self.data, DEFAULTS
        for key in keys:
            default = default[key]
            value = value.get(key, {}) if isinstance(value, dict) else None
            if not isinstance(value, dict):
                raise ConfigError(f"[{'.'.join(keys)}] must be a table")
        return {**default, **value}

    @staticmethod
    def text(table, where, key):
        if not isinstance(table[key], str):
            raise ConfigError(f"{where}.{key} must be a string")
        return table[key]

    @staticmethod
    def number(table, where, key, minimum):
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
            raise ConfigError(f"{where}.{key} must be a number >= {minimum}, not {value!r}")
        return float(value)

    @staticmethod
    def integer(table, where, key, minimum):
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(f"{where}.{key} must be an integer >= {minimum}, not {value!r}")
        return value
