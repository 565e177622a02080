"""nbgrader preprocessors that make ``nbgrader autograde`` as safe as ``autograder grade``.

nbgrader runs the notebook in a kernel the student controls, so a hidden cell's
output there can be faked (monkeypatching torch, builtins or the autograder).
``DeferHiddenTests`` runs before ``Execute``: kernels started afterwards only print
a note in the hidden cells. ``SandboxedGrades`` runs after ``Execute``: it grades
the notebook's own code in the sandbox, from the trusted nbgrader process, and
writes each hidden cell's output (feedback lines and the points as the cell's
result, which ``SaveAutoGrades`` reads as partial credit). Enable both in
``nbgrader_config.py`` (see assignments/nbgrader_config.py).
"""

import os
import re

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from autograder import config, loader
from autograder.grading import expected_grade_ids
from autograder.notebook import DEFER_VARIABLE, grade_quietly, target_report

HIDDEN_CALL = re.compile(r"""grade_target\(\s*["'](\w+)["']\s*,\s*["'](\w+)["']\s*\)""")


class DeferHiddenTests(NbGraderPreprocessor):
    """Tell kernels started from now on that hidden cells are graded after execution."""

    def preprocess(self, nb, resources):
        os.environ[DEFER_VARIABLE] = "1"
        return nb, resources


class SandboxedGrades(NbGraderPreprocessor):
    """Overwrite every hidden grade cell's outputs with the sandboxed grader's verdict."""

    course_file = Unicode("", help="Path of course.toml (default: the kit's own)").tag(config=True)

    def preprocess(self, nb, resources):
        os.environ.pop(DEFER_VARIABLE, None)
        course = config.load(self.course_file or None)
        student = resources.get("nbgrader", {}).get("student", "student")
        results = {}
        for cell in nb.cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            match = HIDDEN_CALL.search(cell.get("source", ""))
            if cell.cell_type != "code" or not meta.get("grade") or meta.get("solution") or not match:
                continue
            assignment, target = match.groups()
            if assignment not in results:
                loaded = loader.load_notebook(nb, expected_cells=expected_grade_ids(course, assignment))
                results[assignment] = grade_quietly(loaded, student, assignment, course)
                self.log.info("Sandboxed grade of %s / %s: %g/%g", student, assignment,
                              results[assignment].score, results[assignment].max_score)
                for problem in results[assignment].problems:
                    self.log.warning("%s / %s: %s", student, assignment, problem["en"])
            report, points = target_report(results[assignment], target, course.language)
            cell.outputs = [
                nbformat.v4.new_output("stream", name="stdout", text=report + "\n"),
                nbformat.v4.new_output("execute_result", data={"text/plain": repr(points)},
                                       execution_count=cell.get("execution_count")),
            ]
        return nb, resources
