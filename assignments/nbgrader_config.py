"""nbgrader configuration of the course (run nbgrader from this folder).

Put the virtual environment's ``bin/`` first on PATH before running nbgrader: it runs
``alembic`` from PATH when it creates gradebook.db, and the kernelspec starts ``python``.
"""

import os

c = get_config()  # noqa: F821 (injected by traitlets when it loads this file)

c.CourseDirectory.course_id = "transformer"
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(c.CourseDirectory.root, "gradebook.db")

# A hidden cell run by `nbgrader validate` (or by the instructor) grades the whole assignment
# in a sandboxed worker that imports torch: far more than nbgrader's default 30 seconds.
# (`nbgrader autograde` starts no kernel: this is for validate only.)
c.Execute.timeout = 180

# What a solution region becomes in the students' version.
c.ClearSolutions.code_stub = {"python": "raise NotImplementedError()"}
c.ClearSolutions.text_stub = "TULIS JAWABAN ANDA DI SINI"

# `nbgrader autograde` runs no student cell (docs/nbgrader.md). nbgrader's default pipeline
# runs each submitted notebook in an ordinary kernel as you (Execute): network, this folder,
# gradebook.db and source/ in reach. Here SubmittedNotebooks reads each submitted notebook once
# and keeps those bytes (a notebook it cannot read is reported before nbgrader fails that
# student), and SandboxedGrades, in Execute's place, grades them as `autograder grade` does
# (student code only in the sandboxed worker) and writes each hidden cell's verdict and points,
# which SaveAutoGrades records. configure() below refuses a list with an execute preprocessor.
# The other entries are nbgrader 0.9's default autograde preprocessors, in their order.
# The lists are spelled out in autograder/nbgrader/configure.py (KIT_PIPELINE, KIT_FEEDBACK).
from autograder.nbgrader.configure import KIT_FEEDBACK, KIT_PIPELINE, KIT_READER, configure  # noqa: E402

c.Autograde.exporter_class = KIT_READER
c.Autograde.autograde_preprocessors = list(KIT_PIPELINE)

# Feedback shows each hidden cell's verdicts (its output) but never its source.
c.GenerateFeedback.preprocessors = list(KIT_FEEDBACK)

# Read course.toml once, now: a broken one stops nbgrader before any notebook runs (exit 2), and
# so does an autograde pipeline that would execute notebooks. Pin the course file for the grader
# and the kernels, and keep nbgrader's expected checksum and SQLAlchemy
# warnings out of the log so that tampering stands out (autograder/nbgrader/configure.py).
configure(c, c.CourseDirectory.root)
