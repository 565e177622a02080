"""A graded record made ready for the batch, where it was graded: its reports rendered, its
``Slim`` record (what the class files need), its similarity ``Code`` pickled.

With ``--jobs N`` this runs in the grading process (``autograder.grading.pool``), so that the
grader receives a few files' text and a small record instead of parsing, rendering and
keeping the whole record of every student; it only writes the files (``batch._store``), which
keeps a student's reports whole or absent when Ctrl-C comes (a grading process is killed at
once then, mid-write or not)."""

import pickle
import traceback
from dataclasses import dataclass

from autograder.reports import kept, similarity
from autograder.reports.files import student_files


@dataclass
class Finished:
    student: str
    files: tuple  # ((file name, text), ...) in writing order, record.json last
    failure: str | None  # rendering a report failed ("Type: message"): the files before it are written
    trace: str | None  # that failure's traceback, for the instructor
    slim: object  # kept.Slim of the record (the whole record, report_error set, if rendering failed)
    code: bytes | None  # similarity.code_of(record) pickled (a Code or None); None: not made

    def record(self):
        """The whole record (StudentResult), from record.json's text."""
        from autograder.records import StudentResult

        return StudentResult.loads(dict(self.files)["record.json"])


def finish(result, plan, similar_inputs=None, shared=None):
    """``result`` (a StudentResult) as a ``Finished``. ``similar_inputs``: (targets, settings)
    of ``similarity.code_of`` (None: no similarity section). ``shared``: ``kept.Outcomes``."""
    files, failure, trace = [], None, None
    try:
        for name, text in student_files(result, plan.title, plan.language):
            files.append((name, text))
    except Exception as error:  # e.g. text no encoder accepts: that student is marked, the batch goes on
        failure, trace = f"{type(error).__name__}: {error}", traceback.format_exc()
        result = result.with_changes(report_error=failure)
    code = None
    if similar_inputs is not None:
        try:
            code = pickle.dumps(similarity.code_of(result, *similar_inputs), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # made again (and any fault reported) by the class report
            code = None
    return Finished(result.student, tuple(files), failure, trace, kept.slim(result, shared), code)
