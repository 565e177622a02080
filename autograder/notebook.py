"""Entry point for nbgrader's hidden test cells.

A hidden cell in an assignment notebook ends with

    from autograder.notebook import grade_target
    grade_target("attention", "MultiHeadAttention")

It grades the code the kernel has executed so far (IPython's ``In`` history)
with the same loader, sandboxed worker and checks as ``autograder grade``,
prints the verdicts of the checks about that target, and returns the points
earned, which nbgrader records as partial credit for the cell. The whole
assignment is graded once per kernel and cached, so later cells are instant.
"""

import contextlib
import hashlib
import io
import json
import sys
import warnings

from autograder import config, loader
from autograder.grading import grade_loaded

_CACHE = {}


def _executed_cells():
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        raise RuntimeError("grade_target() must run inside a Jupyter/IPython kernel")
    return [cell for cell in shell.user_ns.get("In", []) if cell]


def grade_target(assignment, target, course_path=None, lang=None):
    """Points earned by the checks of ``assignment`` that are about ``target``."""
    course = config.load(course_path)
    lang = lang or course.language
    loaded = loader.LoadedCode()
    for number, source in enumerate(_executed_cells(), 1):
        loader.add_definitions(source, f"In [{number}]", loaded)
    # Key on what gets graded (the definitions), not on every executed cell: each hidden
    # cell adds itself to ``In``, so a key over all cells would never hit the cache.
    key = hashlib.sha256(json.dumps(
        [assignment, str(course.path), loaded.chunks, loaded.problems]).encode()).hexdigest()
    if key not in _CACHE:
        # nbgrader gives 0 points to a cell that writes to stderr: keep warnings off it.
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            _CACHE[key] = grade_loaded(loaded, "notebook", assignment, course)
    result = _CACHE[key]
    outcomes = [o for o in result.outcomes if o.check.target == target]
    if not outcomes:
        raise ValueError(f"no checks for {target!r} in assignment {assignment!r}")
    for outcome in outcomes:
        mark = "✓" if outcome.status == "passed" else "✗"
        line = f"{mark} [{outcome.score:g}/{outcome.check.points:g}] {outcome.check.title[lang]}"
        if outcome.message:
            line += f"\n    {outcome.message[lang]}"
        print(line)
    sys.stdout.flush()
    return float(sum(o.score for o in outcomes))
