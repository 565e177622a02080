"""An nbgrader preprocessor that makes ``nbgrader autograde`` as safe as ``autograder grade``.

nbgrader runs the notebook in a kernel the student controls, so a hidden cell's
output there can be faked (monkeypatching torch, builtins or the autograder). In
that kernel nbgrader sets ``NBGRADER_EXECUTION=autograde``, and the hidden cells
then only print a note (``autograder.notebook``). ``SandboxedGrades`` runs after
``Execute``: it grades the notebook's own code in the sandbox, from the trusted
nbgrader process, and writes each hidden cell's output (feedback lines and the
points as the cell's result, which ``SaveAutoGrades`` reads as partial credit).
Enable it in ``nbgrader_config.py`` (see assignments/nbgrader_config.py).
"""

import re

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from autograder import loader, plan as plans
from autograder.notebook import grade_quietly, target_report

HIDDEN_CALL = re.compile(r"""grade_target\(\s*["'](\w+)["']\s*,\s*["'](\w+)["']\s*\)""")


class SandboxedGrades(NbGraderPreprocessor):
    """Overwrite every hidden grade cell's outputs with the sandboxed grader's verdict."""

    course_file = Unicode("", help="Path of course.toml (default: the kit's own)").tag(config=True)

    def preprocess(self, nb, resources):
        student = resources.get("nbgrader", {}).get("student", "student")
        results = {}
        for cell in nb.cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            match = HIDDEN_CALL.search(cell.get("source", ""))
            if cell.cell_type != "code" or not meta.get("grade") or meta.get("solution") or not match:
                continue
            assignment, target = match.groups()
            if assignment not in results:
                plan = plans.load(assignment, self.course_file or None)
                loaded = loader.load_notebook(nb, expected_cells=plan.grade_ids)
                results[assignment] = plan, grade_quietly(loaded, student, plan)
                result = results[assignment][1]
                self.log.info("Sandboxed grade of %s / %s: %g/%g", student, assignment,
                              result.score, result.max_score)
                for problem in result.problems:
                    self.log.warning("%s / %s: %s", student, assignment, problem["en"])
            plan, result = results[assignment]
            report, points = target_report(result, target, plan.language)
            cell.outputs = [
                nbformat.v4.new_output("stream", name="stdout", text=report + "\n"),
                nbformat.v4.new_output("execute_result", data={"text/plain": repr(points)},
                                       execution_count=cell.get("execution_count")),
            ]
        return nb, resources
