"""The check registry: every check is declared once, beside the code that decides it.

    @check("mha.shape", assignment="attention", target="MultiHeadAttention",
           category="shape", points=2, needs=("mha.construct",),
           title=text("...", "..."), hint=text("...", "..."))
    def mha_shape(ctx): ...

A check passes by returning; it fails by calling ``fail(text(id, en))``. The
hint (what is wrong and where to look) goes to the student when it fails.
"""

from dataclasses import dataclass
from typing import Callable

CATEGORIES = (
    "api", "shape", "param_count", "numeric_vs_reference", "masking", "mask_convention",
    "permutation_equivariance", "causality", "memory_path", "layernorm_stats",
    "rows_sum_to_one", "hidden_config", "gradient_flow", "batch_independence", "dtype",
    "device_agnostic",
)


def text(indonesian, english):
    """A student-facing sentence in both course languages."""
    return {"id": indonesian, "en": english}


def label(what):
    """(Indonesian, English) names of a thing: a text() pair or a code identifier."""
    return (what["id"], what["en"]) if isinstance(what, dict) else (what, what)


OUTPUT = text("Keluaran", "The output")
WEIGHTS = text("Bobot attention", "The attention weights")


@dataclass(frozen=True)
class Check:
    id: str
    assignment: str
    target: str  # the student's function or class the check is about
    category: str
    points: float
    title: dict
    hint: dict
    needs: tuple
    run: Callable


class CheckFailed(Exception):
    def __init__(self, message):
        super().__init__(message["en"])
        self.message = message


def fail(message):
    raise CheckFailed(message)


REGISTRY: dict = {}


def check(check_id, *, assignment, target, category, points, title, hint, needs=()):
    if category not in CATEGORIES:
        raise ValueError(f"{check_id}: unknown category {category!r}")
    if check_id in REGISTRY:
        raise ValueError(f"check {check_id} is declared twice")
    for need in needs:
        if need not in REGISTRY:
            raise ValueError(f"{check_id} needs {need}, which must be declared before it")

    def register(function):
        REGISTRY[check_id] = Check(check_id, assignment, target, category, float(points),
                                   title, hint, tuple(needs), function)
        return function

    return register


def checks_for(assignment, course=None):
    """The checks of one assignment in declaration order, with course.toml's points applied."""
    _load_all()
    selected = [c for c in REGISTRY.values() if c.assignment == assignment]
    overrides = {}
    if course is not None and assignment in course.assignments:
        overrides = course.assignments[assignment].points
        unknown = set(overrides) - {c.id for c in selected}
        if unknown:
            from autograder.config import ConfigError
            raise ConfigError(f"assignments.{assignment}.points names unknown checks: "
                              f"{', '.join(sorted(unknown))}")
    return [_with_points(c, overrides.get(c.id)) for c in selected]


def _with_points(check_, points):
    if points is None:
        return check_
    return Check(**{**check_.__dict__, "points": float(points)})


def all_assignments():
    _load_all()
    return list(dict.fromkeys(c.assignment for c in REGISTRY.values()))


def _load_all():
    # Importing the modules runs their @check decorators.
    from autograder.checks import attention, decoder, encoder, encoder_block, multihead  # noqa: F401
