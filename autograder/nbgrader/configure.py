"""nbgrader's side of the course: ``assignments/nbgrader_config.py`` calls ``configure(c, root)``.

- The course file (``$AUTOGRADER_COURSE``, else course.toml from the course root upwards) is
  read once, when nbgrader loads its configuration: a broken or misspelt course.toml stops
  nbgrader with the error (exit 2) before any notebook runs, not once per notebook. Under
  ``nbgrader autograde`` every assignment's plan (points of unknown checks...) is resolved too.
  The file is then pinned for the sandboxed grader (``SandboxedGrades.course_file``) and for
  the kernels nbgrader starts (``$AUTOGRADER_COURSE``), so every part grades under the same one.
- Under ``nbgrader autograde`` no student cell may run in nbgrader's kernel: a configuration
  whose ``Autograde.autograde_preprocessors`` lists an execute preprocessor or lacks
  ``SandboxedGrades`` stops nbgrader (exit 2) before any notebook is read, whatever the
  command (formgrader autogrades too); one that sets no list gets the kit's (nbgrader's
  default list runs ``Execute``), and the kit's reader of submitted notebooks.
- Kernels nbgrader starts (``nbgrader validate``) talk to it over IPC sockets in the Jupyter
  runtime folder (``KernelManager.transport``), not TCP on localhost: each kernel warned that
  it "is running over TCP without encryption", and any local user could connect to one.
- nbgrader's log buries real tampering under noise: a "checksum has changed" warning for
  every hidden-test cell of every submission (the released notebook holds the cell without its
  hidden tests, so its checksum never matches the source's), and SQLAlchemy's "not in session"
  warnings from nbgrader's own gradebook code. Those are summarised once; a checksum warning
  for any other cell (a student who edited a read-only or test cell) is left as it is, beside
  the kit's own "tampered/duplicated/deleted cell" lines. With the kit's late-submission plugin,
  nbgrader's own lines about lateness ("… is 259260.0 seconds late", counted before the
  roster's extension is in gradebook.db, and "Late submission penalty: None" within the grace
  period) give way to the kit's one line per late student, with the rule applied.
"""

import json
import logging
import os
import sys
import tempfile
import warnings
from pathlib import Path

from autograder import config

SPURIOUS_SQL = r"Object of type <\w+> not in session, \w+ operation along"
APP_LOGGERS = ("AutogradeApp", "NbGraderApp", "GenerateFeedbackApp", "ValidateApp")


def configure(c, course_root, argv=None):
    argv = sys.argv if argv is None else argv
    path, found_by = config.locate(start=course_root)
    try:
        course = config.load(path)
        if "autograde" in argv:  # resolving plans imports the checks (and torch): only to grade
            from autograder import plan as plans

            plans.all_plans(course)
    except config.ConfigError as error:
        print(f"autograder: error: {error}", file=sys.stderr)
        print("autograder: fix the course file; nbgrader has not started", file=sys.stderr)
        raise SystemExit(2) from None  # not an Exception: traitlets cannot swallow it
    problem = autograde_pipeline_problem(c)  # for every command: formgrader autogrades too
    if problem:
        print(f"autograder: error: {problem}", file=sys.stderr)
        print("autograder: fix nbgrader_config.py (see assignments/nbgrader_config.py); nbgrader "
              "has not started", file=sys.stderr)
        raise SystemExit(2)
    os.environ[config.ENVIRONMENT] = str(Path(path).resolve())
    c.SandboxedGrades.course_file = str(Path(path).resolve())
    warnings.filterwarnings("ignore", message=SPURIOUS_SQL, module=r"nbgrader\.")
    hidden = hidden_test_cells(Path(course_root) / "source")
    for name in APP_LOGGERS:
        logging.getLogger(name).addFilter(ExpectedChecksums(hidden))
        if c.AssignLatePenalties.plugin_class == KIT_LATE:
            logging.getLogger(name).addFilter(KitSaysLateness())
    return course, found_by


KIT_GRADER = "autograder.nbgrader.plugin.SandboxedGrades"
KIT_LATE = "autograder.nbgrader.late.CourseLatePenalty"
KIT_READER = "autograder.nbgrader.plugin.SubmittedNotebooks"
# nbgrader 0.9's default autograde preprocessors, in their order, with the kit's grader in
# Execute's place (the list assignments/nbgrader_config.py sets).
KIT_PIPELINE = [
    KIT_GRADER,
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# nbgrader's generate_feedback preprocessors, and ClearHiddenTests as the kit's
# ReadableFeedback: a hidden cell shows its verdicts (its output), not its source, and the
# notebook's math is readable text without MathJax's CDN (autograder/nbgrader/feedback.py).
KIT_FEEDBACK = [
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "autograder.nbgrader.feedback.ReadableFeedback",
]


def autograde_pipeline_problem(c):
    """Why this configuration would run student code in nbgrader's kernel, or None. A
    configuration that sets no autograde pipeline gets the kit's (nbgrader's default runs
    ``Execute``), the kit's reader of submitted notebooks and, without feedback preprocessors,
    the kit's (which hide the hidden cells' source)."""
    if "autograde_preprocessors" not in c.Autograde:
        c.Autograde.autograde_preprocessors = list(KIT_PIPELINE)
    if "exporter_class" not in c.Autograde:
        c.Autograde.exporter_class = KIT_READER
    if "preprocessors" not in c.GenerateFeedback:  # nbgrader's default shows the hidden cells' source
        c.GenerateFeedback.preprocessors = list(KIT_FEEDBACK)
    if "transport" not in c.KernelManager:  # see configure()'s docstring
        c.KernelManager.transport = "ipc"
        # the sockets' path prefix: by default "kernel-ipc" in the notebook's folder, where they
        # would land in the course's release and submitted folders (and in nbgrader's copies)
        c.KernelManager.ip = os.path.join(tempfile.mkdtemp(prefix="kit-kernel-"), "kernel-ipc")
    if "plugin_class" not in c.AssignLatePenalties:  # course.toml's [late] (autograder/nbgrader/late.py)
        c.AssignLatePenalties.plugin_class = KIT_LATE
    entries = list(c.Autograde.autograde_preprocessors)
    try:
        executing = executing_entry(entries)
    except ImportError as error:
        return f"Autograde.autograde_preprocessors: {error}"
    if executing is not None:
        return (f"Autograde.autograde_preprocessors lists {executing!r}, which runs every submitted "
                f"notebook in a kernel outside the sandbox; {KIT_GRADER} takes its place")
    if not any(_name(entry) == KIT_GRADER for entry in entries):
        return f"Autograde.autograde_preprocessors lacks {KIT_GRADER}: no hidden cell would be graded"
    return None


def executing_entry(entries):
    """The first entry of a preprocessor list (names, classes or instances) that executes the
    notebook (an nbconvert ``ExecutePreprocessor``, as nbgrader's ``Execute``), or None."""
    from nbconvert.preprocessors import ExecutePreprocessor
    from traitlets.utils.importstring import import_item

    for entry in entries:
        if _name(entry) == KIT_GRADER:  # not imported here: it imports the grader (and torch)
            continue
        try:
            kind = import_item(entry) if isinstance(entry, str) else entry
        except Exception as error:
            raise ImportError(f"cannot import {entry!r} ({error})") from None
        if not isinstance(kind, type):
            kind = type(kind)
        if issubclass(kind, ExecutePreprocessor):
            return entry
    return None


def _name(entry):
    if isinstance(entry, str):
        return entry
    kind = entry if isinstance(entry, type) else type(entry)
    return f"{kind.__module__}.{kind.__qualname__}"


def hidden_test_cells(source):
    """grade_id of every source cell that holds ``### BEGIN HIDDEN TESTS``."""
    ids = set()
    for path in sorted(Path(source).glob("*/*.ipynb")):
        try:
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        except (OSError, ValueError, KeyError):
            continue
        for cell in cells:
            text = cell.get("source", "")
            text = "".join(text) if isinstance(text, list) else str(text)
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if grade_id and "BEGIN HIDDEN TESTS" in text:
                ids.add(grade_id)
    return ids


class ExpectedChecksums(logging.Filter):
    """Drops nbgrader's checksum warning for hidden-test cells; says once that it did."""

    def __init__(self, hidden):
        super().__init__()
        self.hidden, self.dropped = frozenset(hidden), 0

    def filter(self, record):
        message = record.getMessage()
        if not (message.startswith("Attribute 'checksum' for cell ") and " has changed!" in message):
            return True
        cell = message[len("Attribute 'checksum' for cell "):].split(" has changed!")[0]
        if cell not in self.hidden:
            return True  # a cell the student should not have touched: keep the warning
        self.dropped += 1
        if self.dropped > 1:
            return False
        record.levelno, record.levelname = logging.INFO, "INFO"
        record.msg, record.args = ("nbgrader's checksum warnings for hidden-test cells are expected "
                                   "(released notebooks hold them without their hidden tests) and are "
                                   "not shown; the autograder reports tampered cells itself"), ()
        return True


class KitSaysLateness(logging.Filter):
    """Drops nbgrader's lateness lines: SandboxedGrades says it once per student, extension,
    grace and penalty applied (autograder/nbgrader/late.py)."""

    def filter(self, record):
        message = record.getMessage()
        return not ((message.startswith("SubmittedAssignment<") and message.endswith(" seconds late"))
                    or message.startswith("Late submission penalty: "))
