"""Entry point for nbgrader's hidden test cells.

A hidden cell in an assignment notebook ends with

    from autograder.notebook import grade_target
    grade_target("attention", "MultiHeadAttention")

In a student's or instructor's kernel (e.g. ``nbgrader validate``) it grades the code
the kernel has executed so far (IPython's ``In`` history) with the same loader,
sandboxed worker and checks as ``autograder grade``, prints the verdicts of the checks
about that target, and returns the points earned, which nbgrader records as partial
credit. The whole assignment is graded once per kernel and cached.

Under ``nbgrader autograde`` with the kit's configuration no kernel runs at all:
``autograder.nbgrader.plugin.SandboxedGrades`` takes the place of nbgrader's ``Execute`` and
writes every hidden cell's verdict from the sandboxed grader. Should a kernel run the
notebook under autograde anyway (nbgrader sets ``NBGRADER_EXECUTION=autograde`` in it), it
belongs to the student and nothing it computes is trusted: this function then only prints a
note.
"""

import contextlib
import hashlib
import io
import json
import os
import sys
import warnings

from autograder import loading, plan as plans
from autograder.grading.grader import grade_loaded
from autograder.reports import WORDS
from autograder.texts import bilingual, clean

# Set by nbgrader in the kernels it starts: "autograde" or "validate".
NBGRADER_EXECUTION = "NBGRADER_EXECUTION"
GRADED_LATER = bilingual("(Dinilai oleh autograder di sandbox setelah notebook selesai dijalankan.)",
                         "(Graded by the sandboxed autograder after the notebook has run.)")
_CACHE = {}


def _executed_cells():
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        raise RuntimeError("grade_target() must run inside a Jupyter/IPython kernel")
    return [cell for cell in shell.user_ns.get("In", []) if cell]


def target_report(result, target, lang, with_problems=None):
    """(text, points) for the checks of ``result`` about ``target``: the cell's output. The
    loading problems (tampered cells, missing modules, what was not run) head the output of
    the first target's cell (``with_problems``: that cell or not; default: the first target
    of the result)."""
    outcomes = [o for o in result.outcomes if o.check.target == target]
    if not outcomes:
        raise ValueError(f"no checks for {target!r} in assignment {result.assignment!r}")
    if with_problems is None:
        with_problems = target == result.outcomes[0].check.target
    lines = []
    if with_problems and result.late:  # the points below are before nbgrader's late penalty
        lines += [result.late.words(result.raw_score)[lang], ""]
    if with_problems and result.problems:
        lines.append(f"{WORDS[lang]['problems']}:")
        lines += [f"- {problem[lang]}" for problem in result.problems]
        lines.append("")
    for outcome in outcomes:
        mark = "✓" if outcome.passed else "✗"
        line = f"{mark} [{outcome.score:g}/{outcome.check.points:g}] {outcome.check.title[lang]}"
        if outcome.message:
            line += f"\n    {outcome.message[lang]}"
        lines.append(line)
    return clean("\n".join(lines)), float(sum(o.score for o in outcomes))


def grade_quietly(loaded, student, plan):
    # nbgrader gives 0 points to a cell that writes to stderr: keep warnings off it.
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        return grade_loaded(loaded, student, plan)


def grade_target(assignment, target, course_path=None, lang=None):
    """Points earned by the checks of ``assignment`` that are about ``target``."""
    plan = plans.load(assignment, course_path, lang)
    if os.environ.get(NBGRADER_EXECUTION) == "autograde":
        print(GRADED_LATER[plan.language])
        return 0.0
    loaded = loading.load_history(_executed_cells(), plan.source_notebook)
    # Key on what gets graded (the definitions), not on every executed cell: each hidden
    # cell adds itself to ``In``, so a key over all cells would never hit the cache.
    key = hashlib.sha256(json.dumps(
        [plan.fingerprint(), loaded.chunks, loaded.problems]).encode()).hexdigest()
    if key not in _CACHE:
        _CACHE[key] = grade_quietly(loaded, "notebook", plan)
    report, points = target_report(_CACHE[key], target, plan.language)
    print(report)
    sys.stdout.flush()
    return points
