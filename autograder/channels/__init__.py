"""Every channel a grade travels through besides the report folder: GitHub Actions workflow
commands and step summary (``github``), JUnit XML for any CI (``junit``), LMS gradebook
imports for Moodle and Canvas (``lms``) and Gradescope's autograder bundle (``gradescope``).

Each renders from the frozen records (``autograder.records``) and reuses the student-facing
texts of ``autograder.report`` (already cleaned of control characters): no channel grades,
and none shows a student anything the reports would not.
"""
