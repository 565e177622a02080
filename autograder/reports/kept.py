"""What a batch keeps of each graded student until its class files are written, so that the
grader's memory does not grow with the size of the class.

A full record holds every check's title and hint, its messages and the pictures' numbers
(about 70 KiB for an attention submission), and the similarity section's parsed code as much
again; a class of 1,000 grew the grader by ~140 MiB. Once a student's reports are written,
the batch keeps only a ``Slim`` record (what gradebook.csv, summary.json, the class report
and the command's table read) and puts the student's similarity ``Code`` in a ``Spool`` (an
unnamed temporary file), read back one at a time when the class report is made.
"""

import pickle
import tempfile

from autograder.records import Outcome, StudentResult


class Slim(StudentResult):
    """A record with what the class files need and nothing else: no pictures but the
    training's (the class report's table), no check messages but the grader's faults' and,
    when nothing could be graded, the reason; every ``Outcome`` shared with the other
    students who got the same one. Its full record is the student's record.json
    (``reports.read_record``), which the batch wrote before keeping this."""


# Read by the class files from a record (records.StudentResult): outcomes (check id, target,
# points, status, score; the message only of an "error", or of every outcome when none could
# run: ``words.not_graded``), problems, diagnoses, localizations, late, source, times.
_CLASS_PICTURES = ("loss_curve",)  # class_report._training


class Outcomes:
    """One ``Outcome`` object per distinct outcome, shared by every record that has it: a
    class that passes check X holds one "X passed" and a pointer to it per student."""

    def __init__(self):
        self._seen = {}

    def __call__(self, outcome):
        return self._seen.setdefault(outcome, outcome)


def slim(result, shared=None):
    """``result`` (a StudentResult) as a ``Slim`` record. ``shared``: an ``Outcomes`` whose
    objects are reused. A record whose reports could not be written (``report_error``) is
    kept whole: its record.json may be missing or another run's."""
    if result.report_error:
        return result
    keep_messages = result.status == "not_graded"
    outcomes = tuple(o if keep_messages or o.status == "error" or o.message is None
                     else Outcome(o.check, o.status, o.score) for o in result.outcomes)
    if shared is not None:
        outcomes = tuple(map(shared, outcomes))
    fields = {name: getattr(result, name) for name in StudentResult.__dataclass_fields__}
    fields.update(outcomes=outcomes,
                  pictures=tuple(p for p in result.pictures if p.kind in _CLASS_PICTURES))
    return Slim(**fields)


def full(out_dir, result):
    """The whole record of a kept one (``Slim``: read back from its record.json)."""
    if not isinstance(result, Slim):
        return result
    from autograder import reports

    return reports.read_record(out_dir, result.student)


class Spool:
    """Objects kept on disk, not in memory: pickled into an unnamed temporary file (deleted
    when closed, or when the process ends however it ends), read back by key."""

    def __init__(self):
        self._file = tempfile.TemporaryFile(prefix="autograder-spool-")
        self._where = {}  # key -> (offset, length)
        self._end = 0

    def put(self, key, value):
        self.put_pickled(key, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))

    def put_pickled(self, key, data):
        """Keep ``data`` (bytes from ``pickle.dumps``) under ``key`` (a later put replaces it)."""
        self._file.seek(self._end)
        self._file.write(data)
        self._where[key] = (self._end, len(data))
        self._end += len(data)

    def __contains__(self, key):
        return key in self._where

    def __getitem__(self, key):
        offset, length = self._where[key]
        self._file.seek(offset)
        return pickle.loads(self._file.read(length))

    def __len__(self):
        return len(self._where)

    def close(self):
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
