"""Entry point for nbgrader's hidden test cells.

A hidden cell in an assignment notebook ends with

    from autograder.notebook import grade_target
    grade_target("attention", "MultiHeadAttention")

In a student's or instructor's kernel (e.g. ``nbgrader validate``) it grades the code
the kernel has executed so far (IPython's ``In`` history) with the same loader,
sandboxed worker and checks as ``autograder grade``, prints the verdicts of the checks
about that target, and returns the points earned, which nbgrader records as partial
credit. The whole assignment is graded once per kernel and cached.

Under ``nbgrader autograde`` the kernel belongs to the student, so nothing it computes
is trusted: ``autograder.nbgrader_plugin`` sets ``DEFER_VARIABLE`` before the kernel
starts, this function then only prints a note, and the plugin writes every hidden
cell's verdict from the sandboxed grader after execution.
"""

import contextlib
import hashlib
import io
import json
import os
import sys
import warnings

from autograder import config, loader
from autograder.grading import grade_loaded

DEFER_VARIABLE = "AUTOGRADER_GRADED_AFTER_EXECUTION"
_CACHE = {}


def _executed_cells():
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        raise RuntimeError("grade_target() must run inside a Jupyter/IPython kernel")
    return [cell for cell in shell.user_ns.get("In", []) if cell]


def target_report(result, target, lang):
    """(text, points) for the checks of ``result`` about ``target``: the cell's output."""
    outcomes = [o for o in result.outcomes if o.check.target == target]
    if not outcomes:
        raise ValueError(f"no checks for {target!r} in assignment {result.assignment!r}")
    lines = []
    for outcome in outcomes:
        mark = "✓" if outcome.status == "passed" else "✗"
        line = f"{mark} [{outcome.score:g}/{outcome.check.points:g}] {outcome.check.title[lang]}"
        if outcome.message:
            line += f"\n    {outcome.message[lang]}"
        lines.append(line)
    return "\n".join(lines), float(sum(o.score for o in outcomes))


def grade_quietly(loaded, student, assignment, course):
    # nbgrader gives 0 points to a cell that writes to stderr: keep warnings off it.
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        return grade_loaded(loaded, student, assignment, course)


def grade_target(assignment, target, course_path=None, lang=None):
    """Points earned by the checks of ``assignment`` that are about ``target``."""
    course = config.load(course_path)
    lang = lang or course.language
    if os.environ.get(DEFER_VARIABLE):
        print({"id": "(Dinilai oleh autograder di sandbox setelah notebook selesai dijalankan.)",
               "en": "(Graded by the sandboxed autograder after the notebook has run.)"}[lang])
        return 0.0
    loaded = loader.LoadedCode()
    for number, source in enumerate(_executed_cells(), 1):
        loader.add_definitions(source, f"In [{number}]", loaded)
    # Key on what gets graded (the definitions), not on every executed cell: each hidden
    # cell adds itself to ``In``, so a key over all cells would never hit the cache.
    key = hashlib.sha256(json.dumps(
        [assignment, str(course.path), loaded.chunks, loaded.problems]).encode()).hexdigest()
    if key not in _CACHE:
        _CACHE[key] = grade_quietly(loaded, "notebook", assignment, course)
    report, points = target_report(_CACHE[key], target, lang)
    print(report)
    sys.stdout.flush()
    return points
