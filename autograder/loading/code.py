"""What the load step produces: the definitions taken from one submission (``LoadedCode``),
and where a submission was found (``Submission``). The other modules of this package fill them."""

import ast
import threading
from dataclasses import dataclass, field
from pathlib import Path

# what parses inside a library (Hypothesis describes lambdas with ast) runs holding AST_LOCK too.
AST_LOCK = threading.RLock()


def parse_python(source):
    """``ast.parse(source)``, one thread at a time."""
    with AST_LOCK:
        return ast.parse(source)


@dataclass
class Submission:
    student: str
    assignment: str
    path: Path | None  # None when nothing gradable was found
    problem: str | None = None  # why it could not be found


@dataclass
class LoadedCode:
    chunks: list = field(default_factory=list)  # {"code", "origin"} in execution order
    # {"code": ..., "detail": ..., optional "places": [[origin, line], ...], "kind", "names"}
    problems: list = field(default_factory=list)
    fatal: bool = False  # nothing could be read at all
    nbgrader_cells: dict = field(default_factory=dict)  # grade_id -> cell, for tamper checks
    stubs: set = field(default_factory=set)  # graded names whose entry point is still a stub
    stub_sites: dict = field(default_factory=dict)  # "origin:line" of a stub's raise -> its name
    unavailable: dict = field(default_factory=dict)  # name bound by a missing module -> module
    names: dict = field(default_factory=dict)  # top-level name -> kind (see _bind)
    dropped: list = field(default_factory=list)  # [origin, line] of each dropped statement
    missing_modules: dict = field(default_factory=dict)  # module -> [[origin, line], ...]
    classes: set = field(default_factory=set)  # top-level classes defined so far
    future_annotations: bool = False
    star_import: str | None = None  # kind of the names a ``from x import *`` may have bound
    finished: bool = False

