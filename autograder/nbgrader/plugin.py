"""The kit's parts of ``nbgrader autograde``: no student cell runs in nbgrader, and the points
come from the sandbox (docs/nbgrader.md).

nbgrader's own pipeline runs every submitted notebook in an ordinary kernel, as the
instructor (``Execute``): with the network, the course folder, ``gradebook.db`` and
``source/`` in reach, and able to rewrite the submitted file before anything grades it.
``assignments/nbgrader_config.py`` replaces that step:

- ``SubmittedNotebooks`` is nbgrader's reader of notebooks under autograde
  (``Autograde.exporter_class``). It reads each submitted notebook once and keeps those bytes
  for the grader, so the notebook graded is the one nbgrader read from ``submitted/``, before
  anything of the student's runs. A notebook nbgrader cannot read (not JSON, not UTF-8, not a
  notebook) is reported (log and the student's feedback page, from the kit) before nbgrader
  fails that student as it does: the others are graded and the command exits 1.
- ``SandboxedGrades`` takes ``Execute``'s place in ``Autograde.autograde_preprocessors``. It
  runs no cell: it grades the kept bytes exactly as ``autograder grade`` grades the file (same
  loader: read-only cells restored from the source notebook, tampered or deleted cells
  reported; student code only in the sandboxed worker), clears every code cell's outputs and
  writes each hidden cell's output: the verdicts (one output: HTML with hints and pictures, and
  the same as plain text for what cannot show HTML) and the points as the cell's result, which
  ``SaveAutoGrades`` records as partial credit. A hidden cell the student deleted is put back
  with its verdict. Any other test cell gets no points from a kernel that does not run: a
  0-point one (the self-check) shows a note, one worth points is an error worth 0.
"""

import datetime
import re
import shutil
from pathlib import Path

import nbformat
from nbconvert.exporters import NotebookExporter
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from autograder import loading, plan as plans
from autograder.grading.grader import grade_loaded
from autograder.nbgrader.configure import executing_entry
from autograder.nbgrader.hidden_cells import grade_quietly, target_report
from autograder.nbgrader.late import sync_gradebook
from autograder.reports import write_atomic
from autograder.reports.feedback_html import feedback_html, hidden_cell_output
from autograder.texts import bilingual

HIDDEN_CALL = re.compile(r"""grade_target\(\s*["'](\w+)["']\s*,\s*["'](\w+)["']\s*\)""")
NOT_RUN = bilingual(
    "(Sel ini tidak dijalankan saat penilaian: nbgrader tidak menjalankan notebook yang "
    "dikumpulkan. Kode Anda dinilai di sandbox; hasilnya ada di sel tes tersembunyi.)",
    "(This cell was not run when grading: nbgrader does not run submitted notebooks. Your code "
    "was graded in the sandbox; the results are in the hidden test cells.)")
NOT_GRADABLE = bilingual(
    "Sel tes ini bukan panggilan grade_target, dan saat penilaian tidak ada sel yang dijalankan: "
    "sel ini tidak memberi poin. Beri tahu pengajar.",
    "This test cell is not a grade_target call, and no cell is run when grading: it gives no "
    "points. Please tell the instructor.")
EXECUTE_LISTED = ("autograder: an execute preprocessor is in Autograde.autograde_preprocessors: "
                  "it runs the student's notebook outside the sandbox. Remove it (SandboxedGrades "
                  "takes its place; see assignments/nbgrader_config.py)")


class SubmittedNotebooks(NotebookExporter):
    """nbgrader's notebook reader under ``nbgrader autograde`` (``c.Autograde.exporter_class``).

    The one read of a submitted notebook: its bytes are kept in ``submitted`` for
    ``SandboxedGrades`` (keyed by student, assignment, notebook). A notebook that cannot be read
    is reported, and the error is raised again so that nbgrader fails that student as it does."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.submitted = {}

    def from_filename(self, filename, resources=None, **kw):
        self._refuse_execution()  # before the file is read: nothing of the student's has run
        raw = Path(filename).read_bytes()
        if resources is None:
            resources = {}
        if not resources.get("metadata"):
            resources["metadata"] = {}
        modified = datetime.datetime.fromtimestamp(Path(filename).stat().st_mtime, tz=datetime.timezone.utc)
        resources["metadata"].update(name=Path(filename).stem, path=str(Path(filename).parent),
                                     modified_date=modified.strftime("%B %-d, %Y"))
        info = resources.get("nbgrader", {})
        first_read = getattr(self.parent, "_sanitizing", True)  # nbgrader's read of submitted/
        if first_read:
            self.submitted[_key(info)] = raw
        try:
            notebook = nbformat.reads(raw.decode("utf-8"), as_version=4)
        except Exception as error:
            if first_read:
                self._report_unreadable(filename, raw, info, error)
            raise
        return self.from_notebook_node(notebook, resources, **kw)

    def _refuse_execution(self):
        """An execute preprocessor in the pipeline (given on the command line: ``configure``
        refuses one in nbgrader_config.py before nbgrader starts) would run the student's
        notebook in nbgrader's kernel: refuse to read any notebook, so nbgrader fails every
        student with this message and nothing runs."""
        lists = [getattr(self.parent, "autograde_preprocessors", None) or [], self._preprocessors]
        if any(executing_entry(entries) is not None for entries in lists):
            raise RuntimeError(EXECUTE_LISTED)

    def _report_unreadable(self, filename, raw, info, error):
        """Log it, and give the student the kit's feedback page where nbgrader puts feedback
        (with the files ``release_feedback`` needs): nbgrader makes no autograded copy, so
        ``generate_feedback`` has nothing to show."""
        student, assignment, notebook = _key(info)
        reason = f"{type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"
        try:
            plan = plans.load(assignment, self.config.SandboxedGrades.get("course_file") or None)
            loaded = loading.load_bytes(raw, ".ipynb", plan.source_notebook)
            result = grade_loaded(loaded, student, plan, source=str(filename))  # fatal: no worker
            coursedir = self.parent.coursedir
            folder = Path(coursedir.format_path(coursedir.feedback_directory, student, assignment))
            page = folder / f"{notebook}.html"
            write_atomic(page, feedback_html(result, plan.language, plan.title))
            for name in ("timestamp.txt", "submission_secret.txt"):
                if (Path(filename).parent / name).is_file():
                    shutil.copy(Path(filename).parent / name, folder / name)
        except Exception as failure:  # no plan for this assignment, no course directory...
            page = f"none ({type(failure).__name__}: {failure})"
        self.log.error("autograder: %s / %s: %s.ipynb cannot be read (%s). nbgrader fails this "
                       "student (no autograded copy, exit status 1) and grades the others; the "
                       "student's feedback page says why: %s", student, assignment, notebook,
                       reason, page)


class SandboxedGrades(NbGraderPreprocessor):
    """In ``Execute``'s place: run no cell, write every hidden grade cell's output from the
    sandboxed grader's verdict."""

    course_file = Unicode("", help="Path of course.toml (default: the kit's own)").tag(config=True)

    def preprocess(self, nb, resources):
        self._refuse_execution()
        info = resources.get("nbgrader", {})
        student = info.get("student", "student")
        raw = self._submitted_bytes(info)  # first: before anything else happens to this student
        for cell in nb.cells:  # nothing ran: no output is shown or scored but the grader's
            if cell.get("cell_type") == "code":
                cell.outputs, cell.execution_count = [], None
        plan = self._plan(nb, info)
        if plan is None:
            return nb, resources
        if raw is not None:  # what `autograder grade` reads: the same verdicts
            loaded = loading.load_bytes(raw, ".ipynb", plan.source_notebook)
        else:  # nbgrader has restored its read-only cells already
            loaded = loading.load_notebook(nb, source=plan.source_notebook)
        result = grade_quietly(loaded, student, plan)
        result = result.with_changes(late=sync_gradebook(plan, info, self.log))
        self.log.info("Sandboxed grade of %s / %s: %g/%g", student, plan.name,
                      result.raw_score, result.max_score)
        if result.late and result.late.late:  # a penalty is worth a warning; the grace period is not
            (self.log.warning if result.late.days else self.log.info)(
                "%s / %s: %s", student, plan.name, result.late.words(result.raw_score)["en"])
        for problem in result.problems:
            self.log.warning("%s / %s: %s", student, plan.name, problem["en"])
        self._restore_deleted_hidden_cells(nb, plan, info)
        first = plan.targets[0] if plan.targets else None
        for cell in nb.cells:
            target = self._hidden_target(cell, plan.name)
            if target is None:
                self._other_test_cell(cell, plan, student)
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
                *hidden_cell_output(result, target, plan.language, text=report + "\n"),
                nbformat.v4.new_output("execute_result", data={"text/plain": repr(points)},
                                       execution_count=None),
            ]
        return nb, resources

    def _refuse_execution(self):
        """An execute preprocessor beside this one would run (or rerun) the student's notebook
        in nbgrader's kernel: refuse to grade (nbgrader fails the student with this message).
        ``configure`` and ``SubmittedNotebooks`` refuse such a pipeline before anything runs;
        this is for a pipeline read by another exporter."""
        if executing_entry(getattr(self.parent, "_preprocessors", None) or []) is not None:
            raise RuntimeError(EXECUTE_LISTED)

    def _submitted_bytes(self, info):
        """The submitted notebook as ``SubmittedNotebooks`` read it for nbgrader, else read now
        from submitted/ (no cell has run), else None (nbgrader's copy is graded)."""
        kept = getattr(self.parent, "submitted", None)
        if isinstance(kept, dict) and _key(info) in kept:
            return kept.pop(_key(info))
        path = self._submitted_path(info)
        return path.read_bytes() if path is not None else None

    def _other_test_cell(self, cell, plan, student):
        """A test cell that is not one of this assignment's hidden cells: nothing runs it, so a
        0-point one (the self-check) shows a note, and one worth points gets an error (0 points:
        nbgrader would give full marks to a test cell without output)."""
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.get("cell_type") != "code" or not meta.get("grade") or meta.get("solution"):
            return
        if not _cell_points(cell):
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                   text=NOT_RUN[plan.language] + "\n")]
            return
        self.log.warning("%s / %s: test cell %s is not a grade_target call of this assignment: 0 "
                         "points (no cell runs under autograde)", student, plan.name,
                         meta.get("grade_id"))
        cell.outputs = [nbformat.v4.new_output("error", ename="NotGraded",
                                               evalue=NOT_GRADABLE[plan.language], traceback=[])]

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


def _key(info):
    return info.get("student"), info.get("assignment"), info.get("notebook")


def _cell_points(cell):
    try:
        return float(cell["metadata"]["nbgrader"]["points"])
    except (KeyError, TypeError, ValueError):
        return None


def _source(cell):
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source
