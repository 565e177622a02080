"""An nbgrader preprocessor that makes ``nbgrader autograde`` as safe as ``autograder grade``.

nbgrader runs the notebook in a kernel the student controls, so a hidden cell's
output there can be faked (monkeypatching torch, builtins or the autograder). In
that kernel nbgrader sets ``NBGRADER_EXECUTION=autograde``, and the hidden cells
then only print a note (``autograder.notebook``). ``SandboxedGrades`` runs after
``Execute``: from the trusted nbgrader process, it grades the submitted notebook exactly as
``autograder grade`` does (same file, same loader: read-only cells restored from the source
notebook, tampered or deleted cells reported) and writes each hidden cell's output (feedback
lines and the points as the cell's result, which ``SaveAutoGrades`` reads as partial
credit). A hidden cell the student deleted is put back with its verdict, so that its points
are recorded and the feedback shows it, as ``autograder grade`` grades every part.
Enable it in ``nbgrader_config.py`` (see assignments/nbgrader_config.py).
"""

import re
from pathlib import Path

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from autograder import loading, plan as plans
from autograder.reports.feedback_html import hidden_cell_output
from autograder.nbgrader.hidden_cells import grade_quietly, target_report

HIDDEN_CALL = re.compile(r"""grade_target\(\s*["'](\w+)["']\s*,\s*["'](\w+)["']\s*\)""")


class SandboxedGrades(NbGraderPreprocessor):
    """Overwrite every hidden grade cell's outputs with the sandboxed grader's verdict."""

    course_file = Unicode("", help="Path of course.toml (default: the kit's own)").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources.get("nbgrader", {})
        student = info.get("student", "student")
        plan = self._plan(nb, info)
        if plan is None:
            return nb, resources
        submitted = self._submitted_path(info)
        if submitted is not None:  # the file `autograder grade` reads: the same verdicts
            loaded = loading.load(submitted, plan.source_notebook)
        else:  # nbgrader has restored its read-only cells already
            loaded = loading.load_notebook(nb, source=plan.source_notebook)
        result = grade_quietly(loaded, student, plan)
        self.log.info("Sandboxed grade of %s / %s: %g/%g", student, plan.name,
                      result.score, result.max_score)
        for problem in result.problems:
            self.log.warning("%s / %s: %s", student, plan.name, problem["en"])
        self._restore_deleted_hidden_cells(nb, plan, info)
        first = plan.targets[0] if plan.targets else None
        for cell in nb.cells:
            target = self._hidden_target(cell, plan.name)
            if target is None:
                continue
            report, points = target_report(result, target, plan.language,
                                           with_problems=target == first)
            most = _cell_points(cell)
            if most is not None and points > most:  # nbgrader would stop on this student
                self.log.warning("%s / %s: %g points for %s, but its cell is worth %g: rebuild the "
                                 "notebooks after changing points (assignments/build_notebooks.py) "
                                 "and generate the assignment again", student, plan.name, points,
                                 target, most)
                points = most
            cell.outputs = [
                nbformat.v4.new_output("stream", name="stdout", text=report + "\n"),
                *hidden_cell_output(result, target, plan.language, shown=report),  # hints, pictures
                nbformat.v4.new_output("execute_result", data={"text/plain": repr(points)},
                                       execution_count=cell.get("execution_count")),
            ]
        return nb, resources

    def _plan(self, nb, info):
        """The assignment's plan: nbgrader's assignment id, else the one the hidden cells name."""
        names = [info.get("assignment")] + [m.group(1) for cell in nb.cells
                                            for m in [HIDDEN_CALL.search(_source(cell))] if m]
        failure = None
        for name in dict.fromkeys(n for n in names if n):
            try:
                return plans.load(name, self.course_file or None)
            except Exception as error:  # an unknown assignment: try the next name
                failure = error
        self.log.warning("SandboxedGrades: no assignment to grade (%s)", failure)
        return None

    def _submitted_path(self, info):
        """submitted/<student>/<assignment>/<notebook>.ipynb, as the student handed it in."""
        try:
            from nbgrader.coursedir import CourseDirectory

            coursedir = CourseDirectory(config=self.config)
            folder = coursedir.format_path(coursedir.submitted_directory, info["student"],
                                           info["assignment"])
            path = Path(folder) / f"{info['notebook']}.ipynb"
        except Exception as error:  # no course directory to be found: grade what nbgrader has
            self.log.warning("SandboxedGrades: submitted notebook not found (%s)", error)
            return None
        return path if path.is_file() else None

    @staticmethod
    def _hidden_target(cell, assignment):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.get("cell_type") != "code" or not meta.get("grade") or meta.get("solution"):
            return None
        match = HIDDEN_CALL.search(_source(cell))
        return match.group(2) if match and match.group(1) == assignment else None

    def _restore_deleted_hidden_cells(self, nb, plan, info):
        """Put back, after the cell that precedes it in the source notebook, every hidden test
        cell the submission lacks (nbgrader would record 0 points for it and show nothing)."""
        course = loading.course_notebook(plan.source_notebook)
        if course is None:
            return
        present = {cell.get("metadata", {}).get("nbgrader", {}).get("grade_id"): index
                   for index, cell in enumerate(nb.cells)}
        for course_cell in course.cells:
            if course_cell.role != "test" or course_cell.grade_id in present:
                continue
            if not HIDDEN_CALL.search(course_cell.code):
                continue
            earlier = [present[c.grade_id] for c in course.cells[:course_cell.index]
                       if c.grade_id in present]
            position = max(earlier) + 1 if earlier else len(nb.cells)
            cell = nbformat.v4.new_code_cell(course_cell.code, metadata={
                "deletable": False, "editable": False,
                "nbgrader": {"grade": True, "grade_id": course_cell.grade_id, "locked": True,
                             "points": self._max_score(info, course_cell), "schema_version": 3,
                             "solution": False, "task": False}})
            if nb.get("nbformat_minor", 5) < 5:  # cell ids came with nbformat 4.5
                cell.pop("id", None)
            nb.cells.insert(position, cell)
            present = {c.get("metadata", {}).get("nbgrader", {}).get("grade_id"): i
                       for i, c in enumerate(nb.cells)}
            self.log.warning("Restored the deleted hidden cell %s of %s", course_cell.grade_id,
                             plan.name)


    def _max_score(self, info, course_cell):
        """The cell's points as the gradebook has them (as nbgrader's own OverwriteCells does)."""
        try:
            from nbgrader.api import Gradebook

            with Gradebook(info["db_url"]) as gradebook:
                return float(gradebook.find_graded_cell(
                    course_cell.grade_id, info["notebook"], info["assignment"]).max_score)
        except Exception as error:  # no gradebook entry: the source notebook's points
            self.log.warning("SandboxedGrades: points of %s not in the gradebook (%s)",
                             course_cell.grade_id, error)
            return float(course_cell.points or 0)


def _cell_points(cell):
    try:
        return float(cell["metadata"]["nbgrader"]["points"])
    except (KeyError, TypeError, ValueError):
        return None


def _source(cell):
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source

