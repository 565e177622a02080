"""The import path that released notebooks' hidden cells use (``from autograder.notebook import
grade_target``); the code is in ``autograder.nbgrader.hidden_cells``. Kept so that notebooks
handed out before the kit's layout changed still grade."""

from autograder.nbgrader.hidden_cells import grade_target

__all__ = ["grade_target"]
