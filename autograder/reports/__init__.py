"""The pipeline's reporting step: every file a person reads is rendered here from the frozen
records (``autograder.records``), never from live objects.

- ``files``: per student ``record.json``, ``results.json`` (Gradescope's schema),
  ``feedback.md`` and ``feedback.html``; per batch ``gradebook.csv`` and ``summary.json``;
- ``markdown`` and ``feedback_html``: one student's feedback as Markdown and as HTML (with
  ``svg`` pictures);
- ``class_report``: the instructor's HTML page for a whole batch (with ``similarity``);
- ``words``: what they share (texts per language, points, folder names, atomic writes).
"""

from autograder.reports.files import (gradebook_csv, read_record, results_json, summary,
                                      write_batch, write_student)
from autograder.reports.markdown import feedback_md
from autograder.reports.words import WORDS, fmt, no_grade, not_graded, student_folder, write_atomic

__all__ = ["WORDS", "feedback_md", "fmt", "gradebook_csv", "no_grade", "not_graded", "read_record",
           "results_json", "student_folder", "summary", "write_atomic", "write_batch", "write_student"]
