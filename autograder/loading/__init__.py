"""The pipeline's first step: find submissions and take from them only the code that defines
things.

- ``submissions``: where submissions are (``discover``) and reading one file (``load``, ``load_bytes``);
- ``cells``: which cells of a notebook are the student's and which the course's (nbgrader's
  read-only, solution and hidden test cells, matched with the source notebook);
- ``statements``: which top-level statements of a cell load (definitions) and which are dropped;
- ``code``: what the step produces, ``LoadedCode`` (definition chunks, problems, stubs).

Nothing here runs student code; the sandbox (``autograder.sandbox``) does, with the chunks.
"""

from autograder.loading.cells import (course_notebook, load_history, load_notebook, read_notebook,
                                      read_notebook_file)
from autograder.loading.code import AST_LOCK, LoadedCode, Submission, parse_python
from autograder.loading.submissions import discover, load, load_bytes

__all__ = ["AST_LOCK", "LoadedCode", "Submission", "course_notebook", "discover", "load",
           "load_bytes", "load_history", "load_notebook", "parse_python", "read_notebook",
           "read_notebook_file"]
