"""nbgrader's side of the kit, one module per place nbgrader calls in:

- ``configure``: ``assignments/nbgrader_config.py`` calls ``configure(c, root)`` when nbgrader
  loads its configuration (the course file, quieter logs);
- ``hidden_cells``: what a hidden test cell runs (``grade_target``), in a student's or
  instructor's kernel; released notebooks import it as ``autograder.notebook``;
- ``plugin``: under ``nbgrader autograde``, ``SubmittedNotebooks`` (nbgrader's one read of each
  submitted notebook; a broken one is reported) and ``SandboxedGrades`` (in the place of
  nbgrader's ``Execute``: runs no cell, writes every hidden cell's verdict from the sandbox).

The absolute ``import nbgrader`` in these modules is nbgrader itself, not this package.
"""
