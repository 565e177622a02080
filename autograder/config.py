"""``course.toml``: the course, its assignments, limits, tolerances and sizes."""

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

LANGUAGES = ("id", "en")
DEFAULT_PATH = Path(__file__).resolve().parent.parent / "course.toml"


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
    title: str
    notebook: str
    points: dict = field(default_factory=dict)  # check id -> points, overrides the registry
    source_notebook: Path | None = None  # nbgrader source notebook, to spot deleted cells


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


DEFAULTS = {
    "course": {"name": "Transformer", "language": "id"},
    "grading": {"startup_timeout": 20, "request_timeout": 2, "submission_timeout": 300,
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
        "hidden": {"d_model": 24, "num_heads": 3, "d_ff": 40, "batch": 3, "length": 7,
                   "decoder_length": 4},
    },
}


def load(path=None):
    path = Path(path) if path else DEFAULT_PATH
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path} is not valid TOML: {error}") from None
    return parse(data, path)


def parse(data, path=None):
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
        assignments[name] = Assignment(
            name=name, title=str(table.get("title", name)), notebook=notebook,
            points=dict(points), source_notebook=source if source and source.is_file() else None)
    if not assignments:
        raise ConfigError("course.toml defines no [assignments.<name>] table")
    return Course(
        name=reader.text(course, "course", "name"), language=language,
        startup_timeout=reader.number(grading, "grading", "startup_timeout", minimum=1),
        request_timeout=reader.number(grading, "grading", "request_timeout", minimum=0.1),
        submission_timeout=reader.number(grading, "grading", "submission_timeout", minimum=1),
        memory_mb=reader.integer(grading, "grading", "memory_mb", minimum=700),
        max_restarts=reader.integer(grading, "grading", "max_restarts", minimum=0),
        tolerances=tolerances, chapter=sizes["chapter"], hidden=sizes["hidden"],
        assignments=assignments, path=path,
    )


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
