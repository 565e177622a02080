"""The fourth assignment's non-training checks, for the benchmarks.

The issue compares the kit with plain nbgrader on the transformer's checks without its training
outcome (``train.outcome`` trains the student's model for up to a minute of CPU; the other
checks take a fraction of a second). ``patch()`` makes every plan of ``transformer`` resolved in
this process leave that one check out; everything else (the CLI, the grading processes forked
from this one, the sandbox, the reports) is the kit as it is.

    .venv/bin/python bench/without_training.py grade PATH --assignment transformer --out DIR

runs ``autograder grade`` (the real CLI, in this process) so patched.
"""

import sys

TRAINING_CHECK = "train.outcome"


def patch():
    import dataclasses

    from autograder import plan as plans

    resolve = plans.resolve
    if getattr(resolve, "without_training", False):
        return

    def without_training(course, name, language=None):
        plan = resolve(course, name, language)
        if name != "transformer":
            return plan
        return dataclasses.replace(plan, checks=tuple(c for c in plan.checks if c.id != TRAINING_CHECK))

    without_training.without_training = True
    plans.resolve = without_training


def _grade_without_training(grade_command):
    """``grade_command`` with the plan patched first. Patching imports the plan, and with it
    torch: done here, after the command has started the sandbox's zygote and among the
    command's own imports (``imports_uncollected``), a cold run starts as the autograder
    script's does (patched before ``main``, the zygote started only after torch was imported
    here: +0.3-0.5x of ``import torch`` in the bench's cold step)."""
    from autograder import imports_uncollected

    def grade(*args, **kwargs):
        with imports_uncollected():
            patch()
        return grade_command(*args, **kwargs)

    return grade


if __name__ == "__main__":
    from autograder import cli

    cli.grade_command = _grade_without_training(cli.grade_command)
    sys.argv[0] = "autograder"
    sys.exit(cli.main())  # no argv: the command's own fast exit, as the autograder script
